// The fault matrix, in the order `pnpm xtask faults` runs it.
import type { FaultScenario } from './scenario.ts';
import { devstackSigkill } from './scenarios/devstack-sigkill.ts';
import { killArchivePutLedger } from './scenarios/kill-archive-put-ledger.ts';
import { killMidCleanupStep } from './scenarios/kill-mid-cleanup-step.ts';
import { killMidPrune } from './scenarios/kill-mid-prune.ts';
import { pgOutageDrainBus, pgOutageDrainRabbit, pgRestartArchive, pgRestartDrainBus, pgRestartDrainRabbit, pgRestartPrune } from './scenarios/pg-restart.ts';
import { poisonBus, poisonRabbit } from './scenarios/poison.ts';
import { rabbitBrokerRestart, rabbitConnectionsClosed } from './scenarios/rabbitmq.ts';
import { replicasAll, replicasFast } from './scenarios/replicas.ts';
import { s3Conflict, s3Down, s3Errors, s3ErrorsPersistent, s3ForeignObject, s3StallBudget, s3StallShutdown } from './scenarios/object-store.ts';

export const SCENARIOS: readonly FaultScenario[] = [
  killMidPrune,
  killArchivePutLedger,
  killMidCleanupStep,
  poisonBus,
  poisonRabbit,
  s3Down,
  s3Errors,
  s3ErrorsPersistent,
  s3Conflict,
  s3StallShutdown,
  s3StallBudget,
  s3ForeignObject,
  pgRestartDrainBus,
  pgRestartDrainRabbit,
  pgOutageDrainBus,
  pgOutageDrainRabbit,
  pgRestartPrune,
  pgRestartArchive,
  rabbitConnectionsClosed,
  rabbitBrokerRestart,
  replicasFast,
  replicasAll,
  devstackSigkill,
];

export { runScenarios, scenarioRow, TABLE_HEADER, writeDocsTable, writeReport, type ScenarioReport } from './run.ts';
export type { FaultScenario, ScenarioResult } from './scenario.ts';
