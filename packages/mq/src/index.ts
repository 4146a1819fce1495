/**
 * @craig/mq: transactional outbox and inbox, transports (RabbitMQ and the PostgreSQL bus), the
 * transport retention sweep, replay and retention invariants.
 */

/** Migration sets: `mq` (every service's own database) and `bus` (the PostgreSQL bus database). */
export { MQ_MIGRATIONS, BUS_MIGRATIONS } from './migrations.ts';

/** Errors, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export {
  MqError,
  InvalidEventError,
  PayloadTooLargeError,
  MessageTooLargeError,
  TransportUnavailableError,
  PublishRejectedError,
  ReplayOutOfWindowError,
  InvalidReplayRangeError,
  InvalidRedriveIdError,
} from './errors.ts';

/** The event as staged (`EventInput`) and as carried (`EventEnvelope`), and the envelope codec. */
export { decodeEnvelope, encodeEnvelope, type EventEnvelope, type EventInput } from './envelope.ts';

/** Stage an event in the caller's transaction. */
export { stageEvent, DEFAULT_MAX_PAYLOAD_BYTES, type StageEventOptions, type StagedEvent } from './stage-event.ts';

/** The transport interface both implementations satisfy (and the contract suite checks). */
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PREFETCH,
  defaultRetryDelayMs,
  type CloseOptions,
  type DeadLetter,
  type DeadLetterSubscribeOptions,
  type Delivery,
  type OutgoingMessage,
  type PublishOutcome,
  type SubscribeOptions,
  type Subscription,
  type Transport,
} from './transport.ts';

/** RabbitMQ transport (amqplib): topic exchange, confirms, durable queues, dead-letter exchange, reconnect. */
export { createRabbitMqTransport, type RabbitMqTransportOptions } from './rabbitmq-transport.ts';

/** PostgreSQL bus transport: fan-out per consumer, SKIP LOCKED claims, LISTEN/NOTIFY, dead-letter table. */
export { createPostgresBusTransport, PUBLISH_STATEMENT_BYTES, publishStatements, type PostgresBusTransportOptions } from './postgres-bus-transport.ts';

/** Open the transport a service's settings choose (`settings.transport`). */
export { createTransport, type TransportChoice } from './create-transport.ts';

/** The inbox: handler and dedup insert in one transaction; `startConsumer` subscribes with it. */
export { inboxHandler, startConsumer, type ConsumerOptions, type EventHandler, type InboxOptions } from './inbox.ts';

/**
 * The fleet-wide dedup horizon: the producer windows every message carries (transport headers),
 * the rule between a producer and a consumer, and what consumers recorded of it.
 */
export {
  OUTBOX_RETENTION_HEADER,
  INBOX_RETENTION_HEADER,
  retentionHeaders,
  producerWindowsOf,
  compareDedupHorizon,
  serviceVariable,
  readDedupHorizonObservations,
  type DedupHorizonObservation,
  type HorizonComparison,
  type ProducerWindows,
} from './dedup-horizon.ts';
/** What an inbox consumer checks the producers' windows against (`InboxOptions.horizon`). */
export type { DedupHorizonOptions } from './internal/horizon-check.ts';

/** A service's declared events (published types, inbox consumers) and the fleet's subscription graph built from them. */
export { defineEventCatalog, subscriptionGraph, type ConsumerDeclaration, type EventCatalog, type SubscriptionEdge } from './event-catalog.ts';

/** The outbox worker: drain, prune, gauges, the loop; `spawnOutboxWorker` for services. */
export { DEFAULT_DRAIN_BATCH, DEFAULT_DRAIN_BATCH_BYTES, DEFAULT_DRAIN_WAL_COMPRESSION, MAX_DRAIN_BATCH, OutboxWorker, outboxBacklog, spawnOutboxWorker, type DrainResult, type OutboxWorkerOptions, type SpawnedOutboxWorker } from './outbox-worker.ts';

/** The loop's cadence: a tick per second, a prune cycle per hour, a per-service phase. */
export { POLL_INTERVAL_MS, PRUNE_EVERY_TICKS, pruneJitter, cadencePhase } from './cadence.ts';

/** Retention windows in days (0 disables a table's sweep), and how far back a replay may reach with them. */
export { replayWindowDays, type RetentionWindows } from './internal/horizon.ts';

/** The transport prune cycle, its targets, and a dry run. */
export {
  pruneTransportTables,
  previewTransportPrune,
  outboxPruneTarget,
  inboxPruneTarget,
  isTransportTable,
  TRANSPORT_TABLES,
  DEFAULT_PRUNE_WAL_COMPRESSION,
  type PruneCycleOptions,
  type PruneCycleResult,
  type TablePrunePreview,
  type TablePruneResult,
  type TablePruneStatus,
  type TransportTable,
} from './transport-prune.ts';

/** The batch-delete loop every sweep reuses (service-local sweeps bring their own target and lock key). */
export { pruneTable, definePruneTarget, nextBatchSize, PRUNE_BATCH, PRUNE_CYCLE_CAP, PRUNE_MAX_BATCH, PRUNE_TARGET_BATCH_MS, type PruneBatch, type PruneTarget, type PruneTableOptions, type PruneTableResult } from './prune-table.ts';

/** Service-local terminal-state sweeps on the same batch loop, lock discipline and latch. */
export {
  runLocalSweep,
  previewLocalSweep,
  resumeCommand,
  LocalSweepRunner,
  type LocalSweepDefinition,
  type LocalSweepOptions,
  type LocalSweepPreview,
  type LocalSweepResult,
  type LocalSweepRunnerOptions,
  type LocalSweepStatus,
} from './local-sweep.ts';

/** The timer loop the service-local sweeps and the archive runner run on. */
export { runEvery } from './every.ts';

/** The cap latch kept in the database (`prune_latch`), reusable by service-local sweeps. */
export { readPruneLatches, latchPrune, resumePrune, type PruneLatch } from './prune-latch.ts';

/** Replay published rows inside the dedup horizon. */
export { replayEvents, type ReplayRange, type ReplayResult } from './replay.ts';

/** Send parked rows again. */
export { redriveParked, type ParkReason, type RedriveOptions, type RedriveResult } from './redrive.ts';

/** Report-only retention invariants. */
export { retentionOverrun, defineRetentionSpec, transportRetentionSpecs, OVERRUN_GRACE_HOURS, type RetentionOverrun, type RetentionSpec } from './retention-overrun.ts';

/** The package's prom-client metrics on an injected registry. */
export { mqMetrics, perRegistry, type MqMetrics } from './metrics.ts';
