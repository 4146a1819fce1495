import type { Logger } from 'pino';
import { withTimeout } from './internal/timeout.ts';

/**
 * Things a service started, stopped in reverse order: the HTTP server stops taking requests
 * before the workers stop, and the workers stop before the pools they use are closed.
 */
export class Lifecycle {
  private readonly steps: Array<{ name: string; stop: () => Promise<void> }> = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /** Register something to stop; the last added stops first. */
  add(name: string, stop: () => Promise<void>): void {
    this.steps.push({ name, stop });
  }

  /** Stop everything in reverse order; each step gets `timeoutMs`, and a failure does not stop the rest. */
  stop(timeoutMs = 15_000): Promise<void> {
    this.stopping ??= (async () => {
      for (const step of [...this.steps].reverse()) {
        const started = performance.now();
        try {
          await withTimeout(step.stop(), timeoutMs, () => new Error(`timed out after ${timeoutMs} ms`));
          this.logger.info({ step: step.name, ms: Math.round(performance.now() - started) }, 'stopped');
        } catch (error) {
          this.logger.error({ step: step.name, err: error }, 'stop failed');
        }
      }
    })();
    return this.stopping;
  }

  /**
   * Stop on SIGTERM/SIGINT, then exit. For `main.ts`. Started by a supervisor with an IPC
   * channel (the devstack's), also stop when that channel closes: the supervisor died, maybe by
   * SIGKILL, which no signal handler of its own could pass on, and nobody is left to stop us.
   * Without a channel (systemd, Kubernetes, a shell) nothing changes.
   */
  stopOnSignals(onStopped: () => void = () => process.exit(process.exitCode ?? 0)): void {
    const stopFor = (reason: Record<string, string>) => {
      this.logger.info(reason, 'stopping');
      void this.stop().then(onStopped);
    };
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stopFor({ signal }));
    if (process.channel) {
      // The channel alone must not keep the process alive (nor a stopped one from exiting).
      process.channel.unref();
      process.once('disconnect', () => stopFor({ reason: 'the supervisor that started this process went away' }));
    }
  }
}
