// `pnpm xtask <command>`: the workspace's task runner.
import { runXtask } from './run.ts';

const controller = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => controller.abort(new Error(`received ${signal}`)));
}

try {
  process.exitCode = await runXtask(process.argv.slice(2), { signal: controller.signal });
} catch (error) {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
}
