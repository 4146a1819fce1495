import { tcpReachable } from '@craig/testkit';

/**
 * A base port with the `size - 1` after it free too, below the kernel's ephemeral range (from
 * 32768): concurrent tests listen on kernel-chosen ports (port 0) there, and one that took a
 * port of this range after the check would make a service's listen fail on every restart.
 */
export async function freePortRange(size: number): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const taken = await Promise.all(Array.from({ length: size }, (_, i) => tcpReachable('127.0.0.1', base + i, 200)));
    if (!taken.some(Boolean)) return base;
  }
}
