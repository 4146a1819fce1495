/** Counts handlers in flight so a close can wait for them, up to a grace period. */
export class InFlight {
  private count = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.count;
  }

  /** Track `work` until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.count++;
    return work.finally(() => {
      this.count--;
      if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** Resolves when nothing is in flight (however long that takes). */
  settled(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resolves true when nothing is in flight, false when `graceMs` passed first. */
  idle(graceMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    if (graceMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, graceMs);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
    });
  }
}
