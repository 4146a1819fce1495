/** Rejects with `error()` if `work` has not settled after `ms`; the timer goes with it either way. */
export async function withTimeout<T>(work: Promise<T>, ms: number, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(error()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
