// What the live view and the status page share while the devstack runs: the rows (with each
// service's latest invariants verdict, checked every 10 s on its database through the owner
// pool, as `pnpm xtask invariants <service>` checks it), the row-count history behind the
// charts, and the status page's server. stack.ts builds one from the services it runs.
import { runEvery } from '@craig/mq';
import { checkInvariants } from '../invariants-check.ts';
import { serviceEntry } from '../services.ts';
import { CountHistory } from './count-history.ts';
import { startStatusServer, type StatusServer } from './status-server.ts';
import type { Running } from './traffic.ts';
import { rowsOf, type InvariantVerdict, type ServiceRow } from './view-rows.ts';

export interface StatusBoardOptions {
  readonly running: readonly Running[];
  readonly absent: { readonly notBuilt: readonly string[]; readonly skipped: readonly string[] };
  /** `performance.now()` when the stack started. */
  readonly startedAt: number;
  /** The status page's port (0: any free one); undefined: no page. */
  readonly port: number | undefined;
  /** The latest event lines, oldest first. */
  readonly events: () => readonly string[];
  readonly invariantsEveryMs?: number;
}

export class StatusBoard {
  private readonly history = new CountHistory();
  private readonly verdicts = new Map<string, InvariantVerdict>();
  private readonly stopping = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private server: StatusServer | undefined;

  private constructor(private readonly options: StatusBoardOptions) {}

  /** Start checking invariants and, with a port, serving the page (a taken port throws StatusPortInUseError). */
  static async start(options: StatusBoardOptions): Promise<StatusBoard> {
    const board = new StatusBoard(options);
    if (options.port !== undefined) board.server = await startStatusServer({ port: options.port, view: () => board.view() });
    board.loop = runEvery(board.stopping.signal, { firstMs: 0, everyMs: options.invariantsEveryMs ?? 10_000 }, () => board.checkAll(), () => {});
    return board;
  }

  /** The page's address, when it is served. */
  get url(): string | undefined {
    return this.server?.url;
  }

  private elapsed(): number {
    return (performance.now() - this.options.startedAt) / 1000;
  }

  rows(): ServiceRow[] {
    return rowsOf(this.options.running, this.options.absent, this.options.startedAt, (name) => this.verdicts.get(name));
  }

  /** Keep the latest row counts (called after each observation). */
  record(): void {
    const at = this.elapsed();
    for (const r of this.options.running) this.history.record(r.service.name, at, r.counts);
  }

  view() {
    return { elapsedSeconds: this.elapsed(), rows: this.rows(), history: (name: string) => this.history.of(name), events: this.options.events() };
  }

  /** One pass over the services whose schema is there (each has been ready once). */
  private async checkAll(): Promise<void> {
    for (const r of this.options.running) {
      if (this.stopping.signal.aborted) return;
      const entry = serviceEntry(r.service.name);
      if (!entry || !(r.traffic || r.supervisor.status === 'up')) continue;
      try {
        this.verdicts.set(r.service.name, { atSeconds: this.elapsed(), results: await checkInvariants(r.owner, r.service.name, entry, r.settings) });
      } catch (error) {
        this.verdicts.set(r.service.name, { atSeconds: this.elapsed(), error: (error as Error).message });
      }
    }
  }

  /** Stop checking and serving (before the owner pools close). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.server?.close();
  }
}
