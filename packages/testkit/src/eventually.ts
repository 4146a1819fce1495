/**
 * Poll `check` until it stops throwing or the timeout passes (then rethrow its last error).
 * For effects that complete on the server after the client returns, such as a backend exiting.
 */
export async function eventually<T>(check: () => Promise<T> | T, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 25));
    }
  }
}
