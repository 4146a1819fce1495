// The fault matrix, in the order `pnpm xtask faults` runs it.
import type { FaultScenario } from './scenario.ts';
import { killArchivePutLedger } from './scenarios/kill-archive-put-ledger.ts';
import { killMidCleanupStep } from './scenarios/kill-mid-cleanup-step.ts';
import { killMidPrune } from './scenarios/kill-mid-prune.ts';

export const SCENARIOS: readonly FaultScenario[] = [killMidPrune, killArchivePutLedger, killMidCleanupStep];

export { runScenarios, scenarioRow, TABLE_HEADER, writeReport, type ScenarioReport } from './run.ts';
export type { FaultScenario, ScenarioResult } from './scenario.ts';
