/**
 * Turn-taking among concurrent drain lanes: a lane takes the baton before it claims and passes
 * it on once its publish has been handed to the transport. Claims (and so publish calls) happen
 * in id order, while one batch's confirms, UPDATE and COMMIT overlap the next batch's claim.
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
