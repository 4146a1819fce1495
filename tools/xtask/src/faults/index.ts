// The fault matrix, in the order `pnpm xtask faults` runs it.
import type { FaultScenario } from './scenario.ts';
import { killArchivePutLedger } from './scenarios/kill-archive-put-ledger.ts';
import { killMidPrune } from './scenarios/kill-mid-prune.ts';

export const SCENARIOS: readonly FaultScenario[] = [killMidPrune, killArchivePutLedger];

export { runScenarios, scenarioRow, TABLE_HEADER, writeReport, type ScenarioReport } from './run.ts';
export type { FaultScenario, ScenarioResult } from './scenario.ts';
