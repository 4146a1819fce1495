// The devstack's live view: a table per service redrawn in place on a terminal (plain ANSI),
// or one compact line per interval when stdout is a file or a pipe.
import type { Writable } from 'node:stream';
import { count, type Activity } from './activity.ts';
import type { ServiceStatus } from './supervisor.ts';

/** What the view shows of one service. */
export interface ServiceRow {
  readonly name: string;
  readonly status: ServiceStatus | 'not built yet' | 'not selected';
  readonly restarts: number;
  readonly port: number | undefined;
  readonly activity: Activity | undefined;
  /** Row counts of the service's demo tables (undefined where the count failed). */
  readonly counts: ReadonlyMap<string, number | undefined>;
}

const dash = '-';

function pruned(a: Activity | undefined): string {
  if (!a || a.pruned.size === 0) return dash;
  return [...a.pruned].map(([t, n]) => `${t.replace(/^event_/, '')} ${count(n)}`).join(', ');
}

function outbox(a: Activity | undefined): string {
  if (!a || (a.pending === undefined && a.parked === undefined)) return dash;
  return `${a.pending === undefined ? '?' : count(a.pending)} / ${a.parked === undefined ? '?' : count(a.parked)}`;
}

function archive(a: Activity | undefined): string {
  if (!a || a.archivedRows.size === 0) return dash;
  const rows = [...a.archivedRows.values()].reduce((s, n) => s + n, 0);
  return `${count(rows)} / ${count(a.archiveBatches.get('archived') ?? 0)}`;
}

function cleanup(a: Activity | undefined): string {
  if (!a || (a.cleanupSteps === 0 && a.cleanupJobs.size === 0)) return dash;
  const jobs = [...a.cleanupJobs.values()].reduce((s, n) => s + n, 0);
  return `${count(jobs)} / ${count(a.cleanupSteps)} / ${count(a.cleanupDeleted)}`;
}

function status(row: ServiceRow): string {
  return row.restarts > 0 ? `${row.status} (${row.restarts} restart${row.restarts === 1 ? '' : 's'})` : row.status;
}

function counts(row: ServiceRow): string {
  return [...row.counts].map(([t, n]) => `${t}=${n === undefined ? '?' : count(n)}`).join('  ');
}

const COLUMNS = ['service', 'status', 'port', 'outbox pend/park', 'pruned', 'latched', 'archived rows/batches', 'cleanup jobs/steps/deleted'] as const;

/** The table: one line per service plus a line of its demo tables' row counts. */
export function renderTable(rows: readonly ServiceRow[]): string[] {
  const cells = rows.map((r) =>
    r.status === 'not built yet' || r.status === 'not selected'
      ? [r.name, r.status, '', '', '', '', '', '']
      : [r.name, status(r), r.port === undefined ? dash : String(r.port), outbox(r.activity), pruned(r.activity), r.activity?.latched.length ? r.activity.latched.join(',') : dash, archive(r.activity), cleanup(r.activity)],
  );
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(COLUMNS), line(widths.map((w) => '─'.repeat(w)))];
  rows.forEach((r, i) => {
    out.push(line(cells[i]!));
    if (r.counts.size > 0) out.push(`${' '.repeat(widths[0]! + 2)}rows: ${counts(r)}`);
  });
  return out;
}

/** One line for the whole stack (non-TTY output): running services only. */
export function compactLine(rows: readonly ServiceRow[], elapsedSeconds: number): string {
  const parts = rows
    .filter((r) => r.status !== 'not built yet' && r.status !== 'not selected')
    .map((r) => {
      const a = r.activity;
      const bits = [`${r.name} ${status(r)}`];
      if (a) {
        bits.push(`outbox ${outbox(a)}`, `pruned ${pruned(a)}`);
        if (a.latched.length) bits.push(`LATCHED ${a.latched.join(',')}`);
        if (a.archivedRows.size) bits.push(`archived ${archive(a)}`);
        if (a.cleanupSteps || a.cleanupJobs.size) bits.push(`cleanup ${cleanup(a)}`);
      }
      if (r.counts.size) bits.push(counts(r));
      return bits.join('; ');
    });
  return `${stamp(elapsedSeconds)} ${parts.join(' | ')}`;
}

export function stamp(elapsedSeconds: number): string {
  return `[${String(Math.floor(elapsedSeconds)).padStart(5)}s]`;
}

/** Draws the view: redraws the screen on a TTY, appends lines otherwise. */
export class LiveView {
  private readonly happenings: string[] = [];

  constructor(
    private readonly out: Writable,
    private readonly options: { readonly tty: boolean; readonly quiet: boolean; readonly header: readonly string[] },
  ) {}

  /** Something happened: kept for the TTY tail, printed at once otherwise. */
  event(elapsedSeconds: number, line: string): void {
    const text = `${stamp(elapsedSeconds)} ${line}`;
    this.happenings.push(text);
    if (this.happenings.length > 200) this.happenings.splice(0, 100);
    if (!this.options.tty || this.options.quiet) this.out.write(`${text}\n`);
  }

  draw(rows: readonly ServiceRow[], elapsedSeconds: number): void {
    if (this.options.quiet) return;
    if (!this.options.tty) {
      this.out.write(`${compactLine(rows, elapsedSeconds)}\n`);
      return;
    }
    const height = (this.out as { rows?: number }).rows ?? 40;
    const table = renderTable(rows);
    const fixed = [...this.options.header, '', ...table, '', `what happened (${stamp(elapsedSeconds)} since start; Ctrl-C stops):`];
    const tail = this.happenings.slice(-Math.max(3, height - fixed.length - 1));
    // Home, clear to end of screen: no scrollback spam, no dependency.
    this.out.write(`\x1b[H\x1b[J${[...fixed, ...tail].join('\n')}\n`);
  }
}
