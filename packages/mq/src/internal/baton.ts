/**
 * Turn-taking among concurrent drain lanes, in the order the turns were asked for: a lane takes
 * the claim baton before it claims, and queues for the publish baton before it passes the claim
 * baton on (see DrainTurns). Claims, and so publish calls, happen in id order, while one batch's
 * message building overlaps the next batch's claim, and its confirms and COMMIT the next ones'.
 */
export class Baton {
  private tail: Promise<void> = Promise.resolve();

  /** Wait for the previous holder; returns this holder's release (safe to call twice). */
  async take(): Promise<() => void> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  }
}
