/**
 * Every advisory-lock key the platform takes, in one place. Each service has its own database,
 * so a key fences that service's replicas only; distinct keys keep unrelated jobs (a prune and
 * an archive cycle, say) from fencing each other. Keys are 64-bit: the high half spells "crai"
 * so they are recognisable in `pg_locks` (classid = 0x63726169 for the two-int view).
 */
const NAMESPACE = 0x63726169n << 32n;
const key = (n: number): bigint => NAMESPACE | BigInt(n);

export const LOCK_KEYS = Object.freeze({
  /** Migration runner: concurrent starts of one service apply each file once. */
  migrator: key(0x0001),
  /** Transport sweep of event_outbox/event_inbox (one pruner per database). */
  transportPrune: key(0x0101),
  /** The PostgreSQL bus database's own sweep of acknowledged deliveries. */
  busPrune: key(0x0102),
  /** Service-local terminal-state sweep: exchange_send_jobs. */
  exchangeSendJobSweep: key(0x0111),
  /** Service-local terminal-state sweep: settled subsidy_reconcile_queue rows. */
  financialReconcileSweep: key(0x0112),
  /** Removal of finished cleanup jobs' manifests and step records. */
  cleanupHistorySweep: key(0x0113),
  /** Archive-then-prune engine lease (one archiver per database). */
  archiveLease: key(0x0201),
  /** Cleanup coordinator (seed 004): one job runner per database. */
  cleanupCoordinator: key(0x0301),
  /**
   * Per-server cleanup coordinator (seed 004), transaction-level, in the two-int key space:
   * `pg_advisory_xact_lock(0x0302, server_id)` (the low half of this key, then the server id),
   * taken only by the cleanup schema's `cleanup_lock_coordinator(server_id)`.
   */
  cleanupServerCoordinator: key(0x0302),
});

export type LockName = keyof typeof LOCK_KEYS;

/** Throws if two names share a key; called at import so a twin can never ship. */
export function assertDistinctLockKeys(keys: Readonly<Record<string, bigint>> = LOCK_KEYS): void {
  const seen = new Map<bigint, string>();
  for (const [name, value] of Object.entries(keys)) {
    const twin = seen.get(value);
    if (twin !== undefined) throw new Error(`advisory lock keys ${twin} and ${name} are both ${value}`);
    seen.set(value, name);
  }
}

assertDistinctLockKeys();
