import { createClient } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendCpu, followBackends, machineBusyBetween, machineCpu, threadCpuMs, withCpu } from './backend-cpu.ts';

describe("the benchmarks' backend CPU reading", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ prefix: 'craig_bench_cpu' });
  });
  afterAll(() => db?.drop());

  it('charges a backend its own CPU, by application name, and leaves an idle one at zero', async () => {
    const busy = createClient(db.url, { service: 'bench-cpu-busy', max: 1 });
    const idle = createClient(db.url, { service: 'bench-cpu-idle', max: 1 });
    try {
      // Both sessions open before the first reading.
      await Promise.all([busy`select 1`, idle`select 1`]);
      const before = await backendCpu(db.sql, ['bench-cpu-busy', 'bench-cpu-idle']);
      expect([...before!.values()].map((b) => b.app).sort()).toEqual(['bench-cpu-busy', 'bench-cpu-idle']);
      // A fixed amount of work in the busy backend alone (a loop: no I/O, no lock): ~120 ms of
      // CPU on this kind of machine, however loaded it is (a loop bounded by the clock would get
      // less CPU on a busy machine: 80 ms of a 300 ms loop in a full CI run).
      const used = await withCpu(db.sql, ['bench-cpu-busy', 'bench-cpu-idle'], async () => {
        const started = performance.now();
        await busy`do $$ begin for i in 1..20000000 loop end loop; end $$`;
        return performance.now() - started;
      });
      // The ticks are 10 ms; half the loop's CPU here leaves room for a faster machine.
      expect(used.backends!['bench-cpu-busy']).toBeGreaterThanOrEqual(60);
      expect(used.backends!['bench-cpu-busy']).toBeLessThanOrEqual(used.value + 20);
      expect(used.backends!['bench-cpu-idle']).toBeLessThanOrEqual(20);
      // This process only waited.
      expect(used.nodeMs).toBeLessThan(used.value);
    } finally {
      await Promise.all([busy.end(), idle.end()]);
    }
  });

  it("counts each backend's minor page faults: a sort that fills 64 MB of new memory takes thousands, an idle backend none", async () => {
    const sorting = createClient(db.url, { service: 'bench-faults-sort', max: 1 });
    const idle = createClient(db.url, { service: 'bench-faults-idle', max: 1 });
    try {
      await Promise.all([sorting`select 1`, idle`select 1`]);
      const used = await withCpu(db.sql, ['bench-faults-sort', 'bench-faults-idle'], () =>
        sorting.begin(async (tx) => {
          await tx`set local work_mem = '64MB'`;
          // A million rows sorted in memory: tens of megabytes the backend maps page by page.
          await tx`select count(*) from (select g from generate_series(1, 1000000) g order by g desc) s`;
        }),
      );
      // 4 KiB pages: 16,384 in 64 MB; the sort touches well over a quarter of that.
      expect(used.backendFaults!['bench-faults-sort']).toBeGreaterThan(4000);
      expect(used.backendFaults!['bench-faults-idle']).toBeLessThanOrEqual(50);
    } finally {
      await Promise.all([sorting.end(), idle.end()]);
    }
  });

  it('counts a backend that started during the work from zero', async () => {
    const late = createClient(db.url, { service: 'bench-cpu-late', max: 1 });
    try {
      const used = await withCpu(db.sql, ['bench-cpu-late'], () => late`do $$ begin for i in 1..20000000 loop end loop; end $$`);
      expect(used.backends!['bench-cpu-late']).toBeGreaterThanOrEqual(60);
    } finally {
      await late.end();
    }
  });

  it('keeps reading while backends of the name exit: one reaped between opening its /proc file and reading it is skipped', async () => {
    // Sessions that connect and close as fast as they can: pg_stat_activity lists each backend
    // until late in its exit, so readings keep meeting processes on their way out (ESRCH from a
    // /proc file opened before the reap). One such reading used to make the whole suite's
    // figure unreadable: an archive round reported its sessions' CPU as n/a.
    let churning = true;
    let sessions = 0;
    // Two churners: in a full CI run one managed only 47 sessions in 15 s.
    const churn = Promise.all(
      [1, 2].map(async () => {
        while (churning) {
          const brief = createClient(db.url, { service: 'bench-cpu-churn', max: 1 });
          await brief`select 1`;
          await brief.end();
          sessions++;
        }
      }),
    );
    let readings = 0;
    let unreadable = 0;
    try {
      // At least 5 s, and on a loaded machine (CI's) until enough sessions have come and gone:
      // the bound is the count, the clock only a backstop the assertions below then fail on.
      const started = performance.now();
      const enough = () => performance.now() - started >= 5_000 && sessions > 50 && readings > 500;
      while (!enough() && performance.now() - started < 50_000) {
        if ((await backendCpu(db.sql, ['bench-cpu-churn'], true)) === undefined) unreadable++;
        readings++;
      }
    } finally {
      churning = false;
    }
    await churn;
    expect(sessions).toBeGreaterThan(50);
    expect(readings).toBeGreaterThan(500);
    expect(unreadable).toBe(0);
  }, 60_000);

  it('follows a session that opens and closes during the work, which withCpu misses', async () => {
    const followed = await followBackends(db.sql, ['bench-cpu-brief', 'bench-cpu-absent'], 20);
    const brief = createClient(db.url, { service: 'bench-cpu-brief', max: 1 });
    try {
      await brief`do $$ begin for i in 1..20000000 loop end loop; end $$`;
      // The backend lives on, idle, until the client ends: give the follower readings of it.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await brief.end();
    }
    const used = await followed.stop();
    expect(used!['bench-cpu-brief']).toBeGreaterThanOrEqual(60);
    expect(used!['bench-cpu-absent']).toBe(0);
  });

  it("reads the machine's busy CPU and this thread's own: a loop in this thread raises both by about its length", async () => {
    const machineBefore = machineCpu();
    const threadBefore = threadCpuMs()!;
    const started = performance.now();
    let x = 0;
    // A fixed amount of work (not a clock-bounded loop: see above).
    for (let i = 0; i < 200_000_000; i++) x = (x + i) % 1_000_003;
    const wall = performance.now() - started;
    const thread = threadCpuMs()! - threadBefore;
    const machine = machineBusyBetween(machineBefore, machineCpu())!;
    expect(x).toBeGreaterThanOrEqual(0);
    // Ticks of 10 ms; the thread ran at most the wall time, and the loop's fixed work took ~600 ms
    // of CPU here (a sixth of that leaves room for a faster machine).
    expect(thread).toBeLessThanOrEqual(wall + 20);
    expect(thread).toBeGreaterThanOrEqual(100);
    // The machine was at least as busy as this thread (every core counts).
    expect(machine).toBeGreaterThanOrEqual(thread - 20);
  });

  it("reads another database's backends of the same name only when not asked for this database's", async () => {
    const other = await testDatabase({ prefix: 'craig_bench_cpu_other' });
    const here = createClient(db.url, { service: 'bench-cpu-named', max: 1 });
    const there = createClient(other.url, { service: 'bench-cpu-named', max: 1 });
    try {
      const [[a], [b]] = await Promise.all([here<{ pid: number }[]>`select pg_backend_pid() as pid`, there<{ pid: number }[]>`select pg_backend_pid() as pid`]);
      expect([...(await backendCpu(db.sql, ['bench-cpu-named']))!.keys()].sort()).toEqual([a!.pid, b!.pid].sort());
      expect([...(await backendCpu(db.sql, ['bench-cpu-named'], true))!.keys()]).toEqual([a!.pid]);
    } finally {
      await Promise.all([here.end(), there.end()]);
      await other.drop();
    }
  });
});
