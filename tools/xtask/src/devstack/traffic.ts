// The devstack's two loops over its running services: demo traffic (each service's
// `demo.tick` about once a second) and observation (its /metrics and its demo tables' counts).
import type { Sql } from '@craig/db';
import type { DemoContext, ServiceDemo } from '@craig/service';
import type { ServiceSettings } from '@craig/settings';
import type { BuiltService } from './discover.ts';
import { parsePrometheusText } from './metrics-parse.ts';
import type { ReplicaSet } from './replicas.ts';

/** One service of the running stack and what the loops keep about it. */
export interface Running {
  readonly service: BuiltService;
  readonly settings: ServiceSettings;
  /** Its process (or processes, with --replicas), each supervised; one activity tracker each. */
  readonly supervisor: ReplicaSet;
  /** Owner connection to its database (seeding and counts). */
  readonly owner: Sql;
  readonly databaseOid: number;
  demo: ServiceDemo | undefined;
  counts: Map<string, number | undefined>;
  /** Ready and seeded: its demo traffic runs. */
  traffic: boolean;
  /** Its seeding has started (once, whichever replica got ready last). */
  seeding: boolean;
  seededThisRun: boolean;
  seedNote: string | undefined;
  /** Seeding its aged history failed (the message): the timed run fails. */
  seedFailed: string | undefined;
  ticks: number;
  ticking: boolean;
  lastError: { message: string; at: number } | undefined;
  readonly random: () => number;
}

/** Resolves after `ms`, or at once when `signal` aborts; leaves no listener behind either way. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/** mulberry32 seeded with `seed` and the service name: each service's traffic repeats run to run. */
export function seeded(seed: number, service: string): () => number {
  let a = (seed ^ [...service].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Until `signal` aborts: about once a second, one `demo.tick` per service that is up and seeded,
 * never two of one service at once. A failed tick is an event (the same failure at most once per
 * 30 s), never fatal.
 */
export async function runTraffic(
  running: readonly Running[],
  options: { readonly adminToken: string; readonly urlOf: (service: string) => string | undefined; readonly signal: AbortSignal; readonly event: (line: string) => void },
): Promise<void> {
  const { signal } = options;
  while (!signal.aborted) {
    for (const r of running) {
      if (!r.traffic || r.ticking || !r.demo?.tick || r.supervisor.up === 0) continue;
      r.ticking = true;
      const context: DemoContext = { urlOf: options.urlOf, adminToken: options.adminToken, signal, random: r.random, tick: r.ticks++ };
      void r.demo
        .tick(context)
        .catch((error: unknown) => {
          if (signal.aborted) return;
          const message = (error as Error).message;
          if (r.lastError?.message === message && performance.now() - r.lastError.at < 30_000) return;
          r.lastError = { message, at: performance.now() };
          options.event(`${r.service.name}: demo tick failed: ${message}`);
        })
        .finally(() => (r.ticking = false));
    }
    await sleep(1000, signal);
  }
}

/** Scrape each service's /metrics (what happened becomes events) and count its demo tables. */
export async function observeAll(running: readonly Running[], event: (line: string) => void): Promise<void> {
  await Promise.all(
    running.map(async (r) => {
      await Promise.all(
        r.supervisor.replicas.map(async (replica, i) => {
          if (replica.status !== 'up') return;
          try {
            const res = await fetch(`${replica.url}/metrics`, { signal: AbortSignal.timeout(1500) });
            if (res.ok) for (const line of r.supervisor.trackers[i]!.update(parsePrometheusText(await res.text()))) event(`${replica.name}: ${line}`);
          } catch {
            // A service between restarts: the supervisor reports it.
          }
        }),
      );
      for (const table of r.counts.keys()) {
        try {
          // Table names come from the service's demo (code), quoted as an identifier.
          const [row] = await r.owner<{ n: number }[]>`select count(*)::int as n from ${r.owner(table)}`;
          r.counts.set(table, row?.n);
        } catch {
          r.counts.set(table, undefined);
        }
      }
    }),
  );
}
