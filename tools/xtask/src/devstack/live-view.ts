// The devstack's live view. On a terminal: a table of the services redrawn in place at the top
// of the window (plain ANSI: cursor home, each line cleared to its end, the rest of the screen
// cleared), every line fitted to the window's width so the terminal never wraps one, and the
// events scrolling beneath it. On a pipe or a file: each event as it happens and a short fleet
// line when something changes (at least every 30 s), never the whole table.
import type { Writable } from 'node:stream';
import { count } from './activity.ts';
import { displayWidth, pad, printable, truncate, wrap } from './terminal-text.ts';
import {
  allUp,
  archivedParts,
  cleanupParts,
  DASH,
  invariantsText,
  lastErrorText,
  outboxParts,
  prunedParts,
  restartsOf,
  stamp,
  stateText,
  type ServiceRow,
} from './view-rows.ts';

export { stamp, type ServiceRow } from './view-rows.ts';

/** A cell: plain text, or figures joined with " / " and right-aligned part by part, then a note. */
type Cell = string | { readonly parts: readonly string[]; readonly note?: string };

interface Column {
  readonly head: readonly [string, string];
  /** Narrow window: the column with the highest `drop` goes first; 0 never goes. */
  readonly drop: number;
  readonly cell: (row: ServiceRow) => Cell;
}

const GAP = '  ';
const MIN_ERROR_WIDTH = 12;

const COLUMNS: readonly Column[] = [
  { head: ['service', ''], drop: 0, cell: (r) => r.name },
  {
    head: ['state', ''],
    drop: 0,
    cell: (r) => {
      const n = restartsOf(r);
      return n > 0 ? `${stateText(r)} (${n} restart${n === 1 ? '' : 's'})` : stateText(r);
    },
  },
  {
    head: ['outbox', 'pend/park'],
    drop: 3,
    cell: (r) => {
      const p = outboxParts(r.activity);
      return p ? { parts: p } : DASH;
    },
  },
  {
    head: ['pruned', 'outbox/inbox'],
    drop: 2,
    cell: (r) => {
      const p = prunedParts(r.activity);
      // Which tables: the events, the fleet line and the status page say; here only that it is.
      const latched = r.activity?.latched.length ? ' LATCHED' : '';
      if (!p) return latched ? latched.trim() : DASH;
      return { parts: p.parts, note: `${p.local ? ` +${count(p.local)} local` : ''}${latched}` };
    },
  },
  {
    head: ['archived', 'rows/batches'],
    drop: 5,
    cell: (r) => {
      const p = archivedParts(r.activity);
      return p ? { parts: p.parts, note: p.failed ? ` (${count(p.failed)} failed)` : '' } : DASH;
    },
  },
  {
    head: ['cleanup', 'jobs/steps/rows'],
    drop: 6,
    cell: (r) => {
      const p = cleanupParts(r.activity);
      return p ? { parts: p } : DASH;
    },
  },
  { head: ['invariants', ''], drop: 4, cell: (r) => (r.absent ? '' : invariantsText(r.invariants)) },
];

const ERROR_HEAD = 'last error';

/** The table fitted to `width` cells: its lines, and the columns left out for want of room. */
export function renderTable(rows: readonly ServiceRow[], width: number): { lines: string[]; hidden: string[] } {
  const cells = rows.map((r) => COLUMNS.map((c, i) => (r.absent && i > 1 ? '' : c.cell(r))));
  // Per column: the widths of its figures, part by part, so the slashes line up.
  const partWidths = COLUMNS.map((_, i) => {
    const widths: number[] = [];
    for (const row of cells) {
      const cell = row[i]!;
      if (typeof cell !== 'string') cell.parts.forEach((p, k) => (widths[k] = Math.max(widths[k] ?? 0, displayWidth(p))));
    }
    return widths;
  });
  const text = (cell: Cell, i: number) =>
    typeof cell === 'string' ? cell : `${cell.parts.map((p, k) => pad(p, partWidths[i]![k]!, true)).join(' / ')}${cell.note ?? ''}`;
  const texts = cells.map((row) => row.map(text));
  const widths = COLUMNS.map((c, i) => Math.max(displayWidth(c.head[0]), displayWidth(c.head[1]), ...texts.map((row) => displayWidth(row[i]!))));
  const errors = rows.map((r) => printable(r.absent ? '' : lastErrorText(r.lastError)));

  // Leave columns out, least needed first, until the rest and the error column's minimum fit.
  const shown = COLUMNS.map(() => true);
  const used = () => widths.reduce((s, w, i) => (shown[i] ? s + w + GAP.length : s), 0);
  const order = COLUMNS.map((c, i) => ({ drop: c.drop, i })).filter((c) => c.drop > 0).sort((a, b) => b.drop - a.drop);
  for (const { i } of order) {
    if (used() + MIN_ERROR_WIDTH <= width) break;
    shown[i] = false;
  }
  const errorWidth = width - used();
  const withErrors = errorWidth >= MIN_ERROR_WIDTH;
  const hidden = COLUMNS.filter((_, i) => !shown[i]).map((c) => c.head[0]);
  if (!withErrors) hidden.push(ERROR_HEAD);

  const line = (values: readonly string[], error: string) => {
    const parts = values.filter((_, i) => shown[i]).map((v, k, all) => (k === all.length - 1 && !withErrors ? v : pad(v, widths.filter((_, i) => shown[i])[k]!)));
    const joined = parts.join(GAP) + (withErrors ? GAP + truncate(error, errorWidth) : '');
    return truncate(joined.trimEnd(), width);
  };
  const lines = [
    line(COLUMNS.map((c) => c.head[0]), ERROR_HEAD),
    line(COLUMNS.map((c) => c.head[1]), ''),
    line(widths.map((w) => '─'.repeat(w)), '─'.repeat(Math.max(0, Math.min(errorWidth, Math.max(ERROR_HEAD.length, ...errors.map(displayWidth)))))),
    ...texts.map((row, r) => line(row, errors[r]!)),
  ];
  return { lines, hidden };
}

/** "8/8 services up" over the services that run. */
export function upText(rows: readonly ServiceRow[]): string {
  const running = rows.filter((r) => !r.absent);
  return `${running.filter(allUp).length}/${running.length} services up`;
}

export interface FrameInput {
  /** The first line (always shown). */
  readonly title: string;
  /** Shown under the title when the window is tall enough. */
  readonly banner: readonly string[];
  readonly rows: readonly ServiceRow[];
  /** Stamped event lines, oldest first. */
  readonly events: readonly string[];
}

/** Events get at least this many lines before the banner is left out. */
const MIN_EVENT_LINES = 6;

/**
 * The whole screen for a window of `columns` × `rows`: never wider than `columns - 1` cells (a
 * line that fills the last column leaves some terminals in a pending wrap, and clearing to the
 * end of it erases its last character) nor taller than `rows - 1` lines (the cursor's line).
 */
export function renderFrame(input: FrameInput, size: { readonly columns: number; readonly rows: number }): string[] {
  const width = Math.max(20, size.columns - 1);
  const height = Math.max(3, size.rows - 1);
  const table = renderTable(input.rows, width);
  const head = [truncate(printable(input.title), width)];
  const body = ['', ...table.lines];
  if (table.hidden.length) body.push(truncate(`(window too narrow for: ${table.hidden.join(', ')}; widen it, or see the status page)`, width));
  body.push('', truncate('what happened (newest last):', width));
  let room = height - head.length - body.length;
  if (room - input.banner.length >= MIN_EVENT_LINES) {
    head.push(...input.banner.map((l) => truncate(printable(l), width)));
    room -= input.banner.length;
  }
  const frame = [...head, ...body];
  if (frame.length > height) return [...frame.slice(0, height - 1), truncate(`… (window too short: ${frame.length - height + 1} more lines)`, width)];
  if (room > 0) {
    // Wrapped here, so each event takes the lines counted for it; continuation lines line up under the text.
    const physical = input.events.flatMap((e) => wrap(printable(e), width, stamp(0).length + 1));
    frame.push(...physical.slice(-room));
  }
  return frame;
}

/** One short line for the whole fleet (pipes and files): counts summed, problems named. */
export function fleetLine(rows: readonly ServiceRow[], elapsedSeconds: number): string {
  const running = rows.filter((r) => !r.absent);
  const total = (pick: (r: ServiceRow) => number) => running.reduce((s, r) => s + pick(r), 0);
  const sumOf = (m: ReadonlyMap<string, number> | undefined) => (m ? [...m.values()].reduce((s, n) => s + n, 0) : 0);
  const bits = [upText(rows)];
  bits.push(`outbox ${count(total((r) => r.activity?.pending ?? 0))} pending, ${count(total((r) => r.activity?.parked ?? 0))} parked`);
  bits.push(`pruned ${count(total((r) => sumOf(r.activity?.pruned)))}`);
  const archived = total((r) => sumOf(r.activity?.archivedRows));
  if (archived) bits.push(`archived ${count(archived)}`);
  const jobs = total((r) => sumOf(r.activity?.cleanupJobs));
  if (jobs) bits.push(`cleanup ${count(jobs)} job${jobs === 1 ? '' : 's'}`);
  const notUp = running.filter((r) => !allUp(r));
  if (notUp.length) {
    // By state; past three services of one state, only how many ("8 starting" at the start).
    const by = new Map<string, string[]>();
    for (const r of notUp) by.set(stateText(r), [...(by.get(stateText(r)) ?? []), r.name]);
    bits.push(`not up: ${[...by].map(([state, names]) => (names.length > 3 ? `${names.length} ${state}` : `${names.join(', ')} ${state}`)).join(', ')}`);
  }
  const latched = running.flatMap((r) => (r.activity?.latched ?? []).map((t) => `${r.name} ${t}`));
  if (latched.length) bits.push(`LATCHED: ${latched.join(', ')}`);
  const checked = running.filter((r) => r.invariants);
  const red = checked.filter((r) => invariantsText(r.invariants) !== 'ok');
  if (checked.length) bits.push(red.length ? `invariants red: ${red.map((r) => `${r.name} (${invariantsText(r.invariants)})`).join(', ')}` : 'invariants ok');
  return `${stamp(elapsedSeconds)} ${bits.join(' · ')}`;
}

/** What a fleet line is worth printing again for: state, restarts, latches, invariants. */
function fleetSignature(rows: readonly ServiceRow[]): string {
  return rows
    .filter((r) => !r.absent)
    .map((r) => `${r.name}:${stateText(r)}:${restartsOf(r)}:${r.activity?.latched.join(',') ?? ''}:${invariantsText(r.invariants)}`)
    .join('|');
}

export interface LiveViewOptions {
  readonly tty: boolean;
  readonly quiet: boolean;
  /** The banner (shown above the table when the window is tall enough). */
  readonly header: readonly string[];
  /** The status page's address, for the title line. */
  readonly statusUrl?: string | undefined;
  /** Pipes and files: a fleet line at least this often (default 30 s). */
  readonly plainEverySeconds?: number;
}

/** A terminal stream: its size and its resize event. */
type Screen = Writable & { columns?: number; rows?: number };

/** Draws the view: redraws the screen on a TTY, appends lines otherwise. */
export class LiveView {
  private readonly happenings: string[] = [];
  private last: { rows: readonly ServiceRow[]; elapsed: number } | undefined;
  private plain: { at: number; signature: string } | undefined;
  private drawn = false;
  private closed = false;
  private redrawQueued = false;
  private readonly onResize = () => this.redraw();

  constructor(
    private readonly out: Writable,
    private readonly options: LiveViewOptions,
  ) {
    if (this.onTty) this.out.on('resize', this.onResize);
  }

  private get onTty(): boolean {
    return this.options.tty && !this.options.quiet;
  }

  /** The latest events, oldest first (the status page shows them too). */
  recentEvents(n = 30): readonly string[] {
    return this.happenings.slice(-n);
  }

  /** Something happened: kept for the TTY tail, printed at once otherwise. */
  event(elapsedSeconds: number, line: string): void {
    const text = `${stamp(elapsedSeconds)} ${line}`;
    this.happenings.push(text);
    if (this.happenings.length > 400) this.happenings.splice(0, 200);
    if (!this.onTty || this.closed) this.out.write(`${text}\n`);
    else if (this.drawn && !this.redrawQueued) {
      // Several events at once (a crash and its log tail) make one redraw.
      this.redrawQueued = true;
      setImmediate(() => {
        this.redrawQueued = false;
        this.redraw();
      }).unref();
    }
  }

  draw(rows: readonly ServiceRow[], elapsedSeconds: number): void {
    this.last = { rows, elapsed: elapsedSeconds };
    if (this.options.quiet || this.closed) return;
    if (!this.options.tty) {
      const signature = fleetSignature(rows);
      const every = this.options.plainEverySeconds ?? 30;
      if (!this.plain || this.plain.signature !== signature || elapsedSeconds - this.plain.at >= every) {
        this.plain = { at: elapsedSeconds, signature };
        this.out.write(`${fleetLine(rows, elapsedSeconds)}\n`);
      }
      return;
    }
    this.redraw();
  }

  private redraw(): void {
    if (!this.last || !this.onTty || this.closed) return;
    const screen = this.out as Screen;
    const { rows, elapsed } = this.last;
    // The page's address early: on a narrow window the end of the title is cut.
    const title = ['craig devstack', ...(this.options.statusUrl ? [this.options.statusUrl] : []), `${Math.floor(elapsed)} s`, upText(rows), 'Ctrl-C stops'].join(' · ');
    const frame = renderFrame({ title, banner: this.options.header, rows, events: this.happenings }, { columns: screen.columns ?? 100, rows: screen.rows ?? 40 });
    // The first frame clears the screen; later ones overwrite it from the top, clearing each
    // line's rest and everything under the frame, so nothing flickers and nothing is left over.
    this.out.write(`${this.drawn ? '\x1b[H' : '\x1b[H\x1b[2J'}${frame.map((l) => `${l}\x1b[K`).join('\n')}\x1b[J`);
    this.drawn = true;
  }

  /** Stop redrawing: the cursor goes under the last frame, and later events print as lines. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.out.off('resize', this.onResize);
    if (this.drawn) this.out.write('\n');
  }
}
