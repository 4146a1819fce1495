// `pnpm xtask bench archive`: the archive-then-prune engine end to end against the ceiling of
// the same rows read with COPY … TO STDOUT, gzipped and written once, plus one plain DELETE.
// The S3-protocol server and the engine each run in a child process, so the peak RSS is the archiver's alone.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { createClient, migrationTemplate } from '@craig/db';
import { DEFAULT_GZIP_LEVEL, RETENTION_MIGRATIONS, type BatchProfile } from '@craig/retention';
import { createObjectStore, type ObjectStore } from '@craig/store';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import type { Sql } from 'postgres';
import type { CommandContext } from '../command.ts';
import { formatBytes } from '../progress.ts';
import { machineBusyBetween, machineCpu, withCpu } from './backend-cpu.ts';
import { printTable, rate, ratio, writeResult } from './measure.ts';
import { alternate, machineInfo, roundsOption, runRecord, spread } from './rounds.ts';
import type { BenchSuite } from './suite.ts';

export const archiveSuite: BenchSuite = {
  name: 'archive',
  summary: 'archive-then-prune of aged audit rows vs COPY→gzip→one PUT + one DELETE of the same rows, alternating rounds, with a phase profile',
  options: ['rows', 'batch', 'object-mib', 'gzip-level', 'rounds'],
  async run(ctx, options) {
    const rows = positiveInt(options.get('rows') ?? '500000', 'rows');
    const batchSize = options.get('batch') === undefined ? undefined : positiveInt(options.get('batch')!, 'batch');
    // The engine's object byte bound (maxObjectBytes), MiB; its default otherwise.
    const objectBytes = options.get('object-mib') === undefined ? undefined : positiveInt(options.get('object-mib')!, 'object-mib') * 1024 * 1024;
    const level = positiveInt(options.get('gzip-level') ?? String(DEFAULT_GZIP_LEVEL), 'gzip-level');
    const roundCount = roundsOption(options);
    const record = runRecord('archive', options, roundCount);
    const log = (line: string) => ctx.stderr.write(`[bench archive] ${line}\n`);
    const cores = availableParallelism();

    const server = await s3({ process: 'child', conditional: true, bucket: 'bench-archive' });
    const db = await testDatabase({ template: migrationTemplate([RETENTION_MIGRATIONS]), prefix: 'bench_archive', max: 2 });
    const store = createObjectStore({ backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true });
    try {
      log(`seeding ${rows} audit rows…`);
      await createAndSeed(db.sql, rows);
      const [size] = await db.sql<{ bytes: string; avg: number }[]>`select sum(octet_length(t::text))::text as bytes, avg(octet_length(t::text))::int as avg from audit_source t`;
      const dataMb = Number(size!.bytes) / 1e6;
      log(`${rows} rows, ${dataMb.toFixed(1)} MB as text (${size!.avg} B per row); ${roundCount} alternating rounds`);

      // Both contenders start from the same state: the rows freshly copied in, vacuumed, checkpointed.
      const rounds = await alternate(
        roundCount,
        {
          ours: async (round) => {
            await freshCopy(db.sql);
            const r = await measureOurs(ctx, db, server, batchSize, objectBytes, level, round);
            if (r.rows !== rows) throw new Error(`the engine archived ${r.rows} of ${rows} rows`);
            return r;
          },
          baseline: async () => {
            await freshCopy(db.sql);
            const r = await measureCeiling(db, store, level);
            if (r.rows !== rows) throw new Error(`the ceiling deleted ${r.rows} of ${rows} rows`);
            return r;
          },
        },
        (r) => log(`round ${r.round}/${roundCount} (${r.first} first): ours ${rate(rows, r.ours.ms)} rows/s (engine CPU ${r.ours.cpuMs} ms, machine ${r.ours.machineBusyMs} of ${Math.round(r.ours.ms * cores)} ms, ${r.ours.objects} objects, peak RSS ${r.ours.peakRssMb} MB from ${r.ours.baselineRssMb}), ceiling ${rate(rows, r.baseline.ms)} rows/s (machine ${r.baseline.machineBusyMs} of ${Math.round(r.baseline.ms * cores)} ms), ratio ${ratio(rate(rows, r.ours.ms), rate(rows, r.baseline.ms))}`),
      );
      const perRound = rounds.map((r) => ({
        round: r.round,
        first: r.first,
        oursRowsPerSec: rate(rows, r.ours.ms),
        ceilingRowsPerSec: rate(rows, r.baseline.ms),
        ratio: ratio(rate(rows, r.ours.ms), rate(rows, r.baseline.ms)),
        peakRssMb: r.ours.peakRssMb,
        engineCpuMs: r.ours.cpuMs,
        objects: r.ours.objects,
        profile: r.ours.profile,
        ceilingCopyGzipPutMs: Math.round(r.baseline.copyMs),
        ceilingDeleteMs: Math.round(r.baseline.deleteMs),
        // Where each contender's CPU went (ms; ADR-080): the machine is the bound when ours keeps
        // both cores busy.
        cpuMs: {
          ours: { machine: r.ours.machineBusyMs, engine: r.ours.cpuMs, engineMain: r.ours.mainThreadCpuMs, readSession: r.ours.readSessionCpuMs, writeSessions: r.ours.writeSessionsCpuMs },
          ceiling: { machine: r.baseline.machineBusyMs, node: r.baseline.nodeCpuMs, session: r.baseline.sessionCpuMs },
          capacity: Math.round(r.ours.ms * cores),
        },
      }));
      const cpuSpread = (pick: (c: (typeof perRound)[number]['cpuMs']) => number | undefined) => {
        const values = perRound.map((r) => pick(r.cpuMs)).filter((v) => v !== undefined);
        return values.length === perRound.length ? spread(values) : undefined;
      };
      const ratios = spread(perRound.map((r) => r.ratio));
      const mid = [...perRound].sort((a, b) => a.ratio - b.ratio)[Math.floor(perRound.length / 2)]!;
      const last = rounds.at(-1)!;
      const result = {
        ...record.finish(await machineInfo()),
        rowsTable: rows,
        rowBytes: size!.avg,
        dataMb: round1(dataMb),
        batchSize: batchSize ?? 'default',
        gzipLevel: level,
        ratio: ratios.median,
        ratioSpread: ratios,
        ours: {
          rowsPerSec: spread(perRound.map((r) => r.oursRowsPerSec)),
          mbPerSec: round1(dataMb / (rows / mid.oursRowsPerSec)),
          peakRssMb: Math.max(...perRound.map((r) => r.peakRssMb)),
          peakRssMbPerRound: perRound.map((r) => r.peakRssMb),
          baselineRssMb: rounds[0]!.ours.baselineRssMb,
          baselineRssMbPerRound: rounds.map((r) => r.ours.baselineRssMb),
          // The engine process's CPU per run, all threads: on a machine whose speed drifts it
          // moves with the ceiling, so compare it only within a run (docs/benchmarks.md).
          engineCpuMs: spread(perRound.map((r) => r.engineCpuMs)),
          objects: last.ours.objects,
          archivedMb: round1(last.ours.bytes / 1e6),
          // The median round's profile: where the time of each batch went.
          profile: mid.profile,
        },
        ceiling: {
          rowsPerSec: spread(perRound.map((r) => r.ceilingRowsPerSec)),
          copyGzipPutMs: spread(perRound.map((r) => r.ceilingCopyGzipPutMs)),
          deleteMs: spread(perRound.map((r) => r.ceilingDeleteMs)),
          archivedMb: round1(last.baseline.bytes / 1e6),
        },
        cpuMs: {
          ours: { machine: cpuSpread((c) => c.ours.machine), engine: cpuSpread((c) => c.ours.engine), engineMain: cpuSpread((c) => c.ours.engineMain), readSession: cpuSpread((c) => c.ours.readSession), writeSessions: cpuSpread((c) => c.ours.writeSessions) },
          ceiling: { machine: cpuSpread((c) => c.ceiling.machine), node: cpuSpread((c) => c.ceiling.node), session: cpuSpread((c) => c.ceiling.session) },
          // The share of the machine's CPU (cores × wall) that was busy while ours ran.
          oursMachineShareBusy: cpuSpread((c) => (c.ours.machine === undefined ? undefined : c.ours.machine / c.capacity)),
        },
        perRound,
        targets: { ratio: 0.8, peakRssMb: 200 },
      };
      const cell = (x: { median: number; q1: number; q3: number }) => `${x.median} [${x.q1}–${x.q3}]`;
      printTable(ctx.stdout, ['figure (median [IQR] over rounds)', 'value'], [
        ['archive engine rows/s', cell(result.ours.rowsPerSec)],
        ['ceiling (COPY→gzip→one PUT, then one DELETE) rows/s', cell(result.ceiling.rowsPerSec)],
        ['ratio', cell(ratios)],
        ['engine peak RSS MB (max over rounds; before the run)', `${result.ours.peakRssMb} (${result.ours.baselineRssMb})`],
        ['objects written', `${result.ours.objects} (${formatBytes(last.ours.bytes)})`],
      ]);
      const c = result.cpuMs;
      const ms = (x: { median: number } | undefined) => (x === undefined ? 'n/a' : String(x.median));
      ctx.stdout.write('\nCPU over the run, ms (median over rounds):\n');
      printTable(ctx.stdout, ['contender', 'machine', 'Node process (main thread)', 'database sessions'], [
        ['ours', ms(c.ours.machine), `${ms(c.ours.engine)} (${ms(c.ours.engineMain)})`, `read ${ms(c.ours.readSession)}, lease ${ms(c.ours.writeSessions)}`],
        ['ceiling', ms(c.ceiling.machine), ms(c.ceiling.node), ms(c.ceiling.session)],
      ]);
      const p = mid.profile;
      ctx.stdout.write(`\nprofile of the median round (${p.batches} batches, wall ${p.wallMs} ms; phases overlap):\n`);
      printTable(ctx.stdout, ['phase', 'total ms', 'mean ms per batch', 'share of wall'], (['select', 'gzip', 'store', 'wait', 'commit'] as const).map((k) => [k, p[k].totalMs, p[k].meanMs, p[k].shareOfWall]));
      ctx.stdout.write(`\nratio ${result.ratio} (IQR ${ratios.q1}–${ratios.q3}; target ≥ 0.8), peak RSS ${result.ours.peakRssMb} MB (target ≤ 200)\n`);
      ctx.stdout.write(`load average before ${result.load.before.join(' ')}, after ${result.load.after.join(' ')}; ${result.wallSeconds} s\n`);
      for (const w of result.warnings) log(`WARNING: ${w}`);
      const path = await writeResult(ctx.root, 'archive', result);
      ctx.stdout.write(`wrote ${path}\n`);
    } finally {
      log('cleaning up…');
      store.close();
      await db.drop();
      await server.stop();
    }
  },
};

async function createAndSeed(sql: Sql, rows: number): Promise<void> {
  // The shape of security's audit_log: one row per event seen, ~400 bytes.
  await sql`
    create table audit_source (
      id          bigint primary key,
      occurred_at timestamptz not null,
      service     text not null,
      event_type  text not null,
      event_id    uuid not null,
      actor       text not null,
      subject     text not null,
      amount      numeric(14, 2),
      payload     jsonb not null
    )`;
  await sql`
    insert into audit_source
    select g, now() - interval '400 days' + make_interval(secs => g / 10.0), 'cases',
           (array['case.opened', 'case.closed', 'placement.started', 'placement.ended', 'safety.reported'])[1 + g % 5],
           gen_random_uuid(), 'user-' || (g % 5000), 'subject-' || md5(g::text), (g % 100000) / 100.0,
           jsonb_build_object('seq', g, 'big', 9007199254740993 + g, 'ip', '10.0.' || (g % 255) || '.' || (g % 250),
                              'detail', repeat(md5((g * 7)::text), 3), 'note', 'line one' || chr(10) || 'ünïcødé')
    from generate_series(1, ${rows}) g`;
  await sql`create table audit_log (like audit_source including all)`;
  await sql`vacuum analyze audit_source`;
}

async function freshCopy(sql: Sql): Promise<void> {
  await sql`truncate audit_log`;
  await sql`insert into audit_log select * from audit_source`;
  await sql`vacuum analyze audit_log`;
  await sql`checkpoint`;
}

interface OursResult {
  readonly rows: number;
  readonly bytes: number;
  readonly objects: number;
  readonly ms: number;
  /** The engine process's CPU (all its threads) over the cycle. */
  readonly cpuMs: number;
  /** Of which its main thread (the rest: zlib's threads and V8's collectors). */
  readonly mainThreadCpuMs: number | undefined;
  /** The engine's backends over the cycle: the read connection, and the lease session with any other of the engine's. */
  readonly readSessionCpuMs: number | undefined;
  readonly writeSessionsCpuMs: number | undefined;
  /** The whole machine's busy CPU over the cycle (every process), ms; undefined off Linux. */
  readonly machineBusyMs: number | undefined;
  readonly peakRssMb: number;
  readonly baselineRssMb: number;
  readonly profile: ReturnType<typeof summarizeProfile>;
}

/** One engine cycle in a child process (archive-engine-main.ts), so the peak RSS is the archiver's own. */
async function measureOurs(ctx: CommandContext, db: TestDatabase, server: S3TestServer, batchSize: number | undefined, maxObjectBytes: number | undefined, level: number, round: number): Promise<OursResult> {
  const args = { url: db.url, store: { endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey }, batchSize, maxObjectBytes, level, prefix: `bench/r${round}` };
  // CRAIG_BENCH_CPU_PROF=<dir>: write the engine process's V8 CPU profile there (where its main
  // thread goes); CRAIG_BENCH_MEMORY=1: it prints its peak heap and ArrayBuffer bytes (stderr).
  const profile = process.env.CRAIG_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CRAIG_BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, ['--expose-gc', ...profile, '--import', 'tsx', ENGINE_MAIN, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'], signal: ctx.signal });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the archive engine process exited ${code}`);
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { outcome: string; error?: { message: string }; rows: number; bytes: number; objects: number; ms: number; cpuMs: number; mainThreadCpuMs?: number; readSessionCpuMs?: number; writeSessionsCpuMs?: number; machineBusyMs?: number; peakRssMb: number; baselineRssMb: number; profiles: BatchProfile[] };
  if (r.outcome !== 'drained') throw new Error(`archive cycle ended ${r.outcome}: ${r.error?.message ?? ''}`);
  return { rows: r.rows, bytes: r.bytes, objects: r.objects, ms: r.ms, cpuMs: r.cpuMs, mainThreadCpuMs: r.mainThreadCpuMs, readSessionCpuMs: r.readSessionCpuMs, writeSessionsCpuMs: r.writeSessionsCpuMs, machineBusyMs: r.machineBusyMs, peakRssMb: r.peakRssMb, baselineRssMb: r.baselineRssMb, profile: summarizeProfile(r.profiles, r.ms) };
}

const ENGINE_MAIN = fileURLToPath(new URL('./archive-engine-main.ts', import.meta.url));

/** Totals and means per phase over a run's batches, and each phase's total as a share of the wall time. */
function summarizeProfile(profiles: readonly BatchProfile[], wallMs: number) {
  const phase = (pick: (p: BatchProfile) => number) => {
    const total = profiles.reduce((n, p) => n + pick(p), 0);
    return { totalMs: Math.round(total), meanMs: Math.round((total / Math.max(1, profiles.length)) * 100) / 100, shareOfWall: Math.round((total / Math.max(1, wallMs)) * 1000) / 1000 };
  };
  return {
    batches: profiles.length,
    wallMs: Math.round(wallMs),
    meanRows: Math.round(profiles.reduce((n, p) => n + p.rows, 0) / Math.max(1, profiles.length)),
    meanRawKb: Math.round(profiles.reduce((n, p) => n + p.rawBytes, 0) / Math.max(1, profiles.length) / 1024),
    select: phase((p) => p.selectMs),
    gzip: phase((p) => p.gzipMs),
    store: phase((p) => p.storeMs),
    wait: phase((p) => p.waitMs),
    commit: phase((p) => p.commitMs),
  };
}

const CEILING_SESSION = 'bench-archive-ceiling';

interface CeilingResult {
  readonly rows: number;
  readonly bytes: number;
  readonly ms: number;
  readonly copyMs: number;
  readonly deleteMs: number;
  /** As {@link OursResult}: the whole machine, this (benchmark) process, the ceiling's session. */
  readonly machineBusyMs: number | undefined;
  readonly nodeCpuMs: number;
  readonly sessionCpuMs: number | undefined;
}

/**
 * The ceiling, as a one-shot script does it: its own new session, COPY → gzip → one PUT, then
 * one DELETE on the same session. Its session is new in every round, as the engine's two are
 * (a backend's first pass over the shared buffers costs it a page fault per page: ADR-074), and
 * connecting is timed on both sides.
 */
async function measureCeiling(db: TestDatabase, store: ObjectStore, level: number): Promise<CeilingResult> {
  const sql = createClient(db.url, { service: CEILING_SESSION, max: 1, statementTimeoutMs: 0 });
  try {
    // Its session connects with the first statement: withCpu counts it from zero (ADR-080).
    const { value, nodeMs, backends } = await withCpu(db.sql, [CEILING_SESSION], async () => {
      const machineBefore = machineCpu();
      const started = performance.now();
      // COPY emits one chunk per row: coalesce into 1 MB buffers before zlib.
      const gz = createGzip({ level });
      const compressed: Buffer[] = [];
      gz.on('data', (c: Buffer) => compressed.push(c));
      const copy = await sql`copy (select * from audit_log where occurred_at < now() - make_interval(days => 90) order by id) to stdout`.readable();
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const chunk of copy) {
        pending.push(chunk as Buffer);
        pendingBytes += (chunk as Buffer).length;
        if (pendingBytes >= 1 << 20) {
          if (!gz.write(Buffer.concat(pending))) await once(gz, 'drain');
          pending = [];
          pendingBytes = 0;
        }
      }
      if (pending.length > 0) gz.write(Buffer.concat(pending));
      gz.end();
      await once(gz, 'end');
      const body = Buffer.concat(compressed);
      await store.putCreate(`bench/ceiling/${randomUUID()}.tsv.gz`, body);
      const copyMs = performance.now() - started;
      const deleteStarted = performance.now();
      const deleted = await sql`delete from audit_log where occurred_at < now() - make_interval(days => 90)`;
      const deleteMs = performance.now() - deleteStarted;
      const ms = performance.now() - started;
      return { rows: deleted.count, bytes: body.length, ms, copyMs, deleteMs, machineBusyMs: machineBusyBetween(machineBefore, machineCpu()) };
    });
    return { ...value, nodeCpuMs: Math.round(nodeMs), sessionCpuMs: backends?.[CEILING_SESSION] };
  } finally {
    await sql.end();
  }
}

function positiveInt(raw: string, name: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a positive integer: ${raw}`);
  return n;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
