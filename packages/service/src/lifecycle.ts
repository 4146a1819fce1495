import type { Logger } from 'pino';

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
          await Promise.race([
            step.stop(),
            new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs).unref()),
          ]);
          this.logger.info({ step: step.name, ms: Math.round(performance.now() - started) }, 'stopped');
        } catch (error) {
          this.logger.error({ step: step.name, err: error }, 'stop failed');
        }
      }
    })();
    return this.stopping;
  }

  /** Stop on SIGTERM/SIGINT, then exit. For `main.ts`. */
  stopOnSignals(onStopped: () => void = () => process.exit(process.exitCode ?? 0)): void {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        this.logger.info({ signal }, 'stopping');
        void this.stop().then(onStopped);
      });
    }
  }
}
