// A fleet of eight as the live view and the status page get it from stack.ts, built the way the
// stack builds it (each service's /metrics text read by the real parser into an
// ActivityTracker): for the rendering tests and the status page's browser test.
import { SERVICE_NAMES } from '@craig/settings';
import { ActivityTracker } from './activity.ts';
import { CountHistory } from './count-history.ts';
import { parsePrometheusText } from './metrics-parse.ts';
import type { StatusView } from './status-page.ts';
import type { ProcessRow, ServiceRow } from './view-rows.ts';

/** What each service's second scrape says (the first is all zeros, so everything is new work). */
const METRICS: Readonly<Record<string, string>> = {
  cases: 'event_rows_pruned_total{table="event_outbox"} 30000\nevent_outbox_pending 0\nevent_outbox_parked 0\nevent_outbox_published_total 75\n',
  placements: 'event_rows_pruned_total{table="event_outbox"} 27334\nevent_rows_pruned_total{table="event_inbox"} 24000\nevent_outbox_pending 4\nevent_outbox_parked 0\n',
  safety: 'event_rows_pruned_total{table="event_outbox"} 12000\nevent_rows_pruned_total{table="event_inbox"} 6000\nevent_outbox_pending 1\nevent_outbox_parked 0\nevent_prune_cap_latched{table="event_inbox"} 1\n',
  security:
    'event_rows_pruned_total{table="event_outbox"} 171\nevent_rows_pruned_total{table="event_inbox"} 20000\nevent_outbox_pending 0\nevent_outbox_parked 0\narchive_rows_total{table="audit_log"} 20000\narchive_rows_total{table="dead_letter_audit"} 400\narchive_batches_total{table="audit_log",outcome="archived"} 4\narchive_batches_total{table="dead_letter_audit",outcome="archived"} 1\n',
  rules: 'event_rows_pruned_total{table="event_outbox"} 9000\nevent_rows_pruned_total{table="event_inbox"} 9000\nevent_outbox_pending 2\nevent_outbox_parked 0\narchive_rows_total{table="rule_evaluations"} 12000\narchive_batches_total{table="rule_evaluations",outcome="archived"} 3\narchive_batches_total{table="rule_evaluations",outcome="store_failed"} 1\n',
  exchange:
    'event_rows_pruned_total{table="event_outbox"} 3000\nevent_rows_pruned_total{table="event_inbox"} 3000\nevent_rows_pruned_total{table="exchange_send_jobs"} 1200\nevent_outbox_pending 0\nevent_outbox_parked 0\narchive_rows_total{table="ssa_transport_handoffs"} 900\narchive_batches_total{table="ssa_transport_handoffs",outcome="archived"} 1\n',
  financial: 'event_rows_pruned_total{table="event_outbox"} 3000\nevent_rows_pruned_total{table="subsidy_reconcile_queue"} 640\nevent_outbox_pending 0\nevent_outbox_parked 0\n',
  inventory:
    'event_rows_pruned_total{table="event_outbox"} 12100\nevent_rows_pruned_total{table="event_inbox"} 6000\nevent_outbox_pending 0\nevent_outbox_parked 3\ncleanup_steps_total{kind="prune-library",phase="items",outcome="ok"} 9\ncleanup_rows_total{outcome="deleted"} 780\ncleanup_jobs_finished_total{kind="prune-library",state="completed"} 2\n',
};

const TABLES: Readonly<Record<string, readonly string[]>> = {
  cases: ['cases', 'event_outbox'],
  placements: ['placements', 'event_outbox', 'event_inbox'],
  safety: ['safety_reports', 'event_outbox', 'event_inbox'],
  security: ['audit_log', 'dead_letter_audit', 'archive_ledger', 'event_inbox'],
  rules: ['rule_evaluations', 'event_outbox', 'event_inbox'],
  exchange: ['exchange_send_jobs', 'ssa_screening_runs', 'event_inbox'],
  financial: ['subsidy_reconcile_queue', 'event_outbox', 'event_inbox'],
  inventory: ['items', 'libraries', 'cleanup_jobs', 'event_outbox', 'event_inbox'],
};

/** A demo table's count `t` seconds in: aged history pruned away at 20 s, then steady growth. */
function countAt(table: string, t: number): number {
  const base = 1000 + table.length * 137;
  return t < 20 ? 20_000 + base : base + Math.round(t * 3);
}

export interface FleetOptions {
  /** Seconds of history to build (one observation every 2 s). */
  readonly seconds?: number;
  /** Processes per service (replicas). */
  readonly replicas?: number;
  /** Services with one process restarting after a crash. */
  readonly restarting?: readonly string[];
}

function processes(name: string, replicas: number, restarting: readonly string[]): ProcessRow[] {
  return Array.from({ length: replicas }, (_, i) => ({
    status: restarting.includes(name) && i === 0 ? 'restarting' : 'up',
    restarts: restarting.includes(name) && i === 0 ? 1 : 0,
    port: 7101 + SERVICE_NAMES.indexOf(name as never) + i * 100,
  }));
}

/** Eight rows as stack.ts builds them, with a history of their counts, as the page's view. */
export function fakeFleet(options: FleetOptions = {}): StatusView & { readonly rows: ServiceRow[] } {
  const seconds = options.seconds ?? 60;
  const history = new CountHistory();
  const rows = SERVICE_NAMES.map((name): ServiceRow => {
    const tracker = new ActivityTracker();
    tracker.update(parsePrometheusText(METRICS[name]!.replace(/ [0-9]+\n/g, ' 0\n')));
    tracker.update(parsePrometheusText(METRICS[name]!));
    for (let t = 0; t <= seconds; t += 2) history.record(name, t, new Map(TABLES[name]!.map((table) => [table, countAt(table, t)])));
    const counts = new Map<string, number | undefined>(TABLES[name]!.map((table) => [table, countAt(table, seconds)]));
    const red = name === 'rules';
    return {
      name,
      processes: processes(name, options.replicas ?? 1, options.restarting ?? []),
      activity: tracker.activity(),
      counts,
      lastError: options.restarting?.includes(name)
        ? { atSeconds: seconds - 10, message: 'exited with code 1; restart 1/3 in 1 s' }
        : name === 'exchange'
          ? { atSeconds: 41, message: 'demo tick failed: POST /v1/screenings answered 503 <service unavailable>' }
          : undefined,
      invariants: {
        atSeconds: seconds - 4,
        results: [
          { name: 'event_outbox_retention_overrun', ok: true, rows: 0, detail: 'none older than 30 d + grace' },
          { name: 'event_inbox_retention_overrun', ok: true, rows: 0, detail: 'none older than 31 d + grace' },
          ...(red ? [{ name: 'rule_evaluations_archive_overrun', ok: false, rows: 310, detail: '310 overdue, oldest 2026-09-01T00:00:00.000Z' }] : []),
          { name: 'prune_latch', ok: name !== 'safety', rows: 0, detail: name === 'safety' ? 'event_inbox latched since 2026-11-01T10:00:00.000Z: pnpm xtask prune safety --resume event_inbox' : 'no sweep latched' },
          { name: 'event_outbox_parked', ok: name !== 'inventory', rows: name === 'inventory' ? 3 : 0, detail: name === 'inventory' ? '3 parked rows never delivered: POST /v1/admin/events/redrive' : 'nothing parked' },
        ],
      },
    };
  });
  const events = [
    '[    3s] cases: ready on http://127.0.0.1:7101',
    '[   21s] inventory: pruned 12,100 event_outbox rows',
    '[   22s] security: archived 20,000 audit_log rows in 4 batches',
    '[   41s] exchange: demo tick failed: POST /v1/screenings answered 503 <service unavailable>',
  ];
  return { elapsedSeconds: seconds, rows, history: (name) => history.of(name), events };
}
