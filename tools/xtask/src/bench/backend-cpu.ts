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
 * `pg_stat_activity`, read from `/proc/<pid>/stat`. Undefined where that is not possible (the
 * server on another host, or not Linux), so a bench omits the figure instead of reporting a
 * wrong one. A backend's pid is only trusted when `/proc/<pid>/cmdline` names a PostgreSQL
 * process.
 */
export async function backendCpu(sql: Sql, applications: readonly string[]): Promise<BackendCpu | undefined> {
  const rows = await sql<{ pid: number; app: string }[]>`
    select pid, application_name as app from pg_stat_activity where application_name = any(${applications as string[]}::text[])`;
  const cpu = new Map<number, { app: string; ms: number; faults: number }>();
  for (const { pid, app } of rows) {
    let stat: string;
    try {
      if (!(await readFile(`/proc/${pid}/cmdline`, 'utf8')).startsWith('postgres')) return undefined;
      stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    } catch {
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
