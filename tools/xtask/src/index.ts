/** @craig/xtask as a library, for tests that drive commands in process. */
export { runXtask, WORKSPACE_ROOT } from './run.ts';
export { registerService, unregisterService, serviceEntry, migrationSetsOf, type ServiceEntry } from './services.ts';
export type { Command, CommandContext } from './command.ts';
