import { Counter, Gauge, type Registry } from 'prom-client';

/** `discarded`: written, but not committed because an earlier batch of the table failed (an orphan). */
export type BatchOutcome = 'archived' | 'rolled_back' | 'store_failed' | 'failed' | 'discarded';

export interface ArchiveMetrics {
  readonly rows: Counter<'table'>;
  readonly bytes: Counter<'table'>;
  readonly batches: Counter<'table' | 'outcome'>;
  /** Batches refused because their key held a foreign object (`ForeignObjectError`): nothing was written or deleted. */
  readonly foreignObjects: Counter<'table'>;
  /** Archivable rows still hot past the hot window + 48 h, counted after each completed cycle. */
  readonly overdueRows: Gauge<'table'>;
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  // Two engines on one registry (tests, a tool) share the counters instead of failing.
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Gauge<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Gauge<L>;
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

export function archiveMetrics(registry: Registry): ArchiveMetrics {
  return {
    rows: counter(registry, 'archive_rows_total', 'Rows archived to the object store and deleted from the hot table.', ['table']),
    bytes: counter(registry, 'archive_bytes_total', 'Bytes of archive objects (gzip NDJSON) whose rows were deleted.', ['table']),
    batches: counter(registry, 'archive_batches_total', 'Archive batches by outcome (archived, rolled_back, store_failed, failed, discarded).', ['table', 'outcome']),
    foreignObjects: counter(registry, 'archive_foreign_objects_total', 'Archive batches refused because their key already held a different object (ForeignObjectError): nothing written, nothing deleted.', ['table']),
    overdueRows: gauge(registry, 'archive_overdue_rows', 'Archivable rows still hot past the hot window + 48 h grace, counted after each completed archive cycle (the <table>_archive_overrun invariant); 0, without a count, for a table the cycle drained (unless it guards itself).', ['table']),
  };
}
