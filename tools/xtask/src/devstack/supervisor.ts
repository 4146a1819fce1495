// One service process of the devstack: started under tsx with its output appended to its log
// file, watched until /readyz answers 200, restarted with backoff when it dies, stopped with
// SIGTERM (then SIGKILL) in order by the stack.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';

export type ServiceStatus = 'starting' | 'up' | 'restarting' | 'failed' | 'stopping' | 'stopped';

export interface SupervisorOptions {
  readonly name: string;
  /** Workspace root: the child's working directory (where `tsx` resolves). */
  readonly root: string;
  /** Absolute path of the service's `src/main.ts`. */
  readonly mainFile: string;
  readonly env: Readonly<Record<string, string>>;
  /** Where the child's stdout and stderr (pino JSON) are appended. */
  readonly logFile: string;
  readonly port: number;
  /** Restarts after a crash before the service is given up on; default 3. */
  readonly maxRestarts?: number;
  /** First backoff; doubles per restart. Default 1 s. */
  readonly backoffMs?: number;
  /** How long a start may take to answer /readyz 200; default 60 s. */
  readonly readyTimeoutMs?: number;
  /** Something worth a line in the "what happened" log. */
  readonly onEvent: (line: string) => void;
  /** /readyz answered 200 (after the first start or a restart). */
  readonly onReady: () => void;
}

/** How a run of the process ended unexpectedly. */
export interface Crash {
  readonly at: Date;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly reason: string;
  /** Last lines of its log. */
  readonly tail: readonly string[];
}

export class SupervisedService {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private notReadyReason: string | undefined;
  private statusValue: ServiceStatus = 'stopped';
  private restartCount = 0;
  private readonly crashList: Crash[] = [];

  constructor(readonly options: SupervisorOptions) {}

  get name(): string {
    return this.options.name;
  }
  get status(): ServiceStatus {
    return this.statusValue;
  }
  get restarts(): number {
    return this.restartCount;
  }
  get crashes(): readonly Crash[] {
    return this.crashList;
  }
  get url(): string {
    return `http://127.0.0.1:${this.options.port}`;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Start the process (and keep it running until {@link stop}). */
  start(): void {
    if (this.stopping) return;
    this.statusValue = 'starting';
    this.notReadyReason = undefined;
    const log = openSync(this.options.logFile, 'a');
    let child: ChildProcess;
    try {
      // Its own process group: a terminal's Ctrl-C reaches only the devstack, which stops the
      // services first and the servers they use after them. The IPC channel is how the child
      // notices that the devstack died (even by SIGKILL): it closes, and the service stops
      // itself (`Lifecycle.stopOnSignals`) instead of running on as an orphan.
      child = spawn(process.execPath, ['--import', 'tsx', this.options.mainFile], { cwd: this.options.root, env: this.options.env, stdio: ['ignore', log, log, 'ipc'], detached: true });
    } finally {
      closeSync(log);
    }
    // Neither end of the channel keeps its process alive.
    child.channel?.unref();
    this.child = child;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        resolve();
        void this.onExit(child, code, signal);
      });
      child.once('error', (error) => {
        this.options.onEvent(`could not start: ${error.message}`);
      });
    });
    void this.awaitReady(child);
  }

  private async awaitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 60_000);
    while (this.child === child && child.exitCode === null && child.signalCode === null && !this.stopping) {
      try {
        const res = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.status === 200) {
          this.statusValue = 'up';
          this.options.onReady();
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        this.notReadyReason = `not ready within ${Math.round((this.options.readyTimeoutMs ?? 60_000) / 1000)} s`;
        child.kill('SIGKILL');
        return;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private async onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.child !== child) return;
    if (this.stopping) {
      this.statusValue = 'stopped';
      return;
    }
    const tail = await tailLines(this.options.logFile, 8);
    const reason = this.notReadyReason ?? `exited with ${signal ? `signal ${signal}` : `code ${code}`}`;
    this.crashList.push({ at: new Date(), code, signal, reason, tail });
    const max = this.options.maxRestarts ?? 3;
    if (this.restartCount >= max) {
      this.statusValue = 'failed';
      this.options.onEvent(`${reason}; gave up after ${max} restarts (log: ${this.options.logFile})`);
      for (const line of tail) this.options.onEvent(`  | ${line}`);
      return;
    }
    const delay = (this.options.backoffMs ?? 1000) * 2 ** this.restartCount;
    this.restartCount++;
    this.statusValue = 'restarting';
    this.options.onEvent(`${reason}; restart ${this.restartCount}/${max} in ${delay / 1000} s`);
    for (const line of tail) this.options.onEvent(`  | ${line}`);
    this.restartTimer = setTimeout(() => this.start(), delay);
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`; no restart after this. */
  async stop(timeoutMs = 15_000): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.statusValue = 'stopped';
      return;
    }
    this.statusValue = 'stopping';
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = await Promise.race([this.exited.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
    clearTimeout(timer);
    if (killed) {
      this.options.onEvent(`did not stop within ${timeoutMs / 1000} s of SIGTERM; killed`);
      child.kill('SIGKILL');
      await this.exited;
    }
    this.statusValue = 'stopped';
  }
}

/** The last `n` non-empty lines of a file (reading at most its last 16 KiB); [] when it is absent. */
export async function tailLines(file: string, n: number): Promise<string[]> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, 16 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(-n)
      .map(summarizeLogLine);
  } finally {
    await handle.close();
  }
}

/** A pino JSON line as `level msg (err.message)`; anything else as is, cut to 200 characters. */
export function summarizeLogLine(line: string): string {
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string; code?: string } };
    if (typeof entry.msg === 'string') {
      const level = ({ 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' } as Record<number, string>)[entry.level ?? 30] ?? 'info';
      const err = entry.err?.message ? `: ${entry.err.code ? `${entry.err.code} ` : ''}${entry.err.message}` : '';
      return cut(`${level} ${entry.msg}${err}`);
    }
  } catch {
    // not JSON (a stack trace, tsx's own output)
  }
  return cut(line);
}

const cut = (s: string) => (s.length > 200 ? `${s.slice(0, 197)}...` : s);
