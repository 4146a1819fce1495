import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Sql } from '@craig/db';

/**
 * Linux reports a process's CPU in `/proc/<pid>/stat` in clock ticks of USER_HZ, which is 100 on
 * every architecture Linux supports (sysconf(_SC_CLK_TCK) returns it; Node does not expose it).
 */
const TICKS_PER_SECOND = 100;

/**
 * Each backend's CPU so far (ms, user + system) and its minor page faults (each the first touch
 * of a page of memory the process had not mapped yet: shared buffers it never used, memory it
 * just allocated; ADR-074), by pid, with its `application_name`.
 */
export type BackendCpu = ReadonlyMap<number, { readonly app: string; readonly ms: number; readonly faults: number }>;

/**
 * The CPU the PostgreSQL backends serving `applications` have used so far: found in
 * `pg_stat_activity` (in any database, or with `thisDatabase` only in `sql`'s), read from
 * `/proc/<pid>/stat`. Undefined where that is not possible (the server on another host, or not
 * Linux), so a bench omits the figure instead of reporting a wrong one. A backend's pid is only
 * trusted when `/proc/<pid>/cmdline` names a PostgreSQL process; one that ended between the
 * query and the read is left out.
 */
export async function backendCpu(sql: Sql, applications: readonly string[], thisDatabase = false): Promise<BackendCpu | undefined> {
  const rows = await sql<{ pid: number; app: string }[]>`
    select pid, application_name as app from pg_stat_activity
    where application_name = any(${applications as string[]}::text[]) ${thisDatabase ? sql`and datname = current_database()` : sql``}`;
  const cpu = new Map<number, { app: string; ms: number; faults: number }>();
  for (const { pid, app } of rows) {
    let stat: string;
    try {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      // An exiting process has an empty command line: it ended since the query, like ENOENT below.
      if (cmdline === '') continue;
      if (!cmdline.startsWith('postgres')) return undefined;
      stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    } catch (error) {
      // A backend that ended since the query is skipped: its /proc entry is gone (ENOENT), or
      // was opened before the process was reaped and read after (ESRCH; seen on backends
      // exiting as their connection closed). No /proc at all means no reading.
      if (ENDED.has((error as NodeJS.ErrnoException).code ?? '') && (await procExists())) continue;
      return undefined;
    }
    // Fields after the command name (which may hold spaces, in parentheses): minflt is the 10th
    // of the line, utime and stime the 14th and 15th; the 8th, 12th and 13th after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const faults = Number(fields[7]);
    if (!Number.isFinite(ticks) || !Number.isFinite(faults)) return undefined;
    cpu.set(pid, { app, ms: (ticks * 1000) / TICKS_PER_SECOND, faults });
  }
  return cpu;
}

/** What reading /proc/<pid>/… of a process that has ended gives. */
const ENDED: ReadonlySet<string> = new Set(['ENOENT', 'ESRCH']);

async function procExists(): Promise<boolean> {
  try {
    await readFile('/proc/self/stat', 'utf8');
    return true;
  } catch {
    return false;
  }
}

/**
 * What the backends of each of `applications` used between two readings, ms: a backend that
 * appeared meanwhile counts from zero (its whole life was in between); one that ended meanwhile
 * is missed, so measure work on connections that stay open.
 */
export function cpuBetween(applications: readonly string[], before: BackendCpu | undefined, after: BackendCpu | undefined, figure: 'ms' | 'faults' = 'ms'): Record<string, number> | undefined {
  if (!before || !after) return undefined;
  const used: Record<string, number> = Object.fromEntries(applications.map((a) => [a, 0]));
  for (const [pid, b] of after) used[b.app] = (used[b.app] ?? 0) + b[figure] - (before.get(pid)?.[figure] ?? 0);
  return used;
}

/**
 * Run `work`, measuring the CPU of this Node process and of the backends of `applications`
 * meanwhile (ms), and the backends' minor page faults. `backends` and `backendFaults` are
 * undefined where {@link backendCpu} cannot read them.
 */
export async function withCpu<T>(
  sql: Sql,
  applications: readonly string[],
  work: () => Promise<T>,
): Promise<{ value: T; nodeMs: number; backends: Record<string, number> | undefined; backendFaults: Record<string, number> | undefined }> {
  const before = await backendCpu(sql, applications);
  const node = process.cpuUsage();
  const value = await work();
  const used = process.cpuUsage(node);
  const after = await backendCpu(sql, applications);
  return { value, nodeMs: (used.user + used.system) / 1000, backends: cpuBetween(applications, before, after), backendFaults: cpuBetween(applications, before, after, 'faults') };
}

/** The whole machine's CPU time so far (ms, every core): busy (user, nice, system, irq, softirq, steal) and idle (idle, iowait). */
export function machineCpu(): { readonly busyMs: number; readonly idleMs: number } | undefined {
  let line: string;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  } catch {
    return undefined;
  }
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is already in user).
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (ticks.length < 8 || !ticks.every(Number.isFinite)) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks as [number, number, number, number, number, number, number, number];
  const tick = 1000 / TICKS_PER_SECOND;
  return { busyMs: (user + nice + system + irq + softirq + steal) * tick, idleMs: (idle + iowait) * tick };
}

/** The machine's busy CPU between two {@link machineCpu} readings, ms (undefined without both). */
export function machineBusyBetween(before: ReturnType<typeof machineCpu>, after: ReturnType<typeof machineCpu>): number | undefined {
  return before && after ? Math.round(after.busyMs - before.busyMs) : undefined;
}

/** The calling thread's own CPU so far (ms, user + system), from `/proc/thread-self/stat`; undefined off Linux. */
export function threadCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * Follow the CPU of the backends serving `applications` in `sql`'s database while they live,
 * for work whose sessions close before it returns (which {@link withCpu} would miss): every
 * `everyMs`, and once more at `stop`, keep each backend's latest reading. `stop` returns what each
 * application's backends used since the call (a backend that appeared meanwhile counts from
 * zero), or undefined where {@link backendCpu} cannot read them. A backend's last `everyMs`
 * before it ended is missed.
 */
export async function followBackends(sql: Sql, applications: readonly string[], everyMs = 100): Promise<{ stop(): Promise<Record<string, number> | undefined> }> {
  const before = await backendCpu(sql, applications, true);
  const last = new Map<number, { app: string; ms: number }>();
  let readable = before !== undefined;
  let running = true;
  const read = async () => {
    const cpu = await backendCpu(sql, applications, true);
    if (!cpu) return void (readable = false);
    for (const [pid, v] of cpu) last.set(pid, v);
  };
  const loop = (async () => {
    while (running && readable) {
      await new Promise<void>((resolve) => setTimeout(resolve, everyMs));
      await read();
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      if (readable) await read();
      if (!readable || !before) return undefined;
      const used: Record<string, number> = Object.fromEntries(applications.map((a) => [a, 0]));
      for (const [pid, v] of last) used[v.app] = (used[v.app] ?? 0) + v.ms - (before.get(pid)?.ms ?? 0);
      return used;
    },
  };
}
