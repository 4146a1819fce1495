// `pnpm xtask bench archive`: the archive-then-prune engine end to end against the ceiling of
// the same rows read with COPY … TO STDOUT, gzipped and written once, plus one plain DELETE.
// The S3-protocol server runs in a child process, so the peak RSS is the archiver's alone.
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { migrationTemplate } from '@craig/db';
import { createArchiveEngine, DEFAULT_GZIP_LEVEL, defineArchiveSpec, fixpoints, RETENTION_MIGRATIONS } from '@craig/retention';
import { createObjectStore, type ObjectStore } from '@craig/store';
import { s3, testDatabase, type TestDatabase } from '@craig/testkit';
import postgres, { type Sql } from 'postgres';
import { Registry } from 'prom-client';
import type { CommandContext } from '../command.ts';
import { formatBytes } from '../progress.ts';
import { printTable, rate, ratio, writeResult } from './measure.ts';
import type { BenchSuite } from './suite.ts';

export const archiveSuite: BenchSuite = {
  name: 'archive',
  summary: 'archive-then-prune of aged audit rows vs COPY→gzip→one PUT + one DELETE of the same rows',
  options: ['rows', 'batch', 'gzip-level'],
  async run(ctx, options) {
    const rows = positiveInt(options.get('rows') ?? '500000', 'rows');
    const batchSize = positiveInt(options.get('batch') ?? '5000', 'batch');
    const level = positiveInt(options.get('gzip-level') ?? String(DEFAULT_GZIP_LEVEL), 'gzip-level');
    const log = (line: string) => ctx.stderr.write(`${line}\n`);

    const server = await s3({ process: 'child', conditional: true, bucket: 'bench-archive' });
    const db = await testDatabase({ template: migrationTemplate([RETENTION_MIGRATIONS]), prefix: 'bench_archive', max: 2 });
    const store = createObjectStore({ backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true });
    try {
      log(`seeding ${rows} audit rows…`);
      await createAndSeed(db.sql, rows);
      const [size] = await db.sql<{ bytes: string; avg: number }[]>`select sum(octet_length(t::text))::text as bytes, avg(octet_length(t::text))::int as avg from audit_source t`;
      const dataMb = Number(size!.bytes) / 1e6;
      log(`${rows} rows, ${dataMb.toFixed(1)} MB as text (${size!.avg} B per row)`);

      // Ours first, so the process's peak RSS so far is the archiver's (seeding runs in PostgreSQL).
      // Both variants start from the same state: the rows freshly copied in, vacuumed, checkpointed.
      await freshCopy(db.sql);
      log('archive engine…');
      const oursResult = await measureOurs(ctx, db, store, batchSize, level);
      if (oursResult.rows !== rows) throw new Error(`the engine archived ${oursResult.rows} of ${rows} rows`);

      log('restoring the rows for the ceiling…');
      await freshCopy(db.sql);
      log('ceiling: COPY → gzip → one PUT, then one DELETE…');
      const ceilingResult = await measureCeiling(db.url, db.sql, store, level);
      if (ceilingResult.rows !== rows) throw new Error(`the ceiling deleted ${ceilingResult.rows} of ${rows} rows`);

      const oursRate = rate(rows, oursResult.ms);
      const ceilingRate = rate(rows, ceilingResult.ms);
      const result = {
        suite: 'archive',
        rows,
        ours: {
          rowsPerSec: oursRate,
          peakRssMb: oursResult.peakRssMb,
          mbPerSec: round1(dataMb / (oursResult.ms / 1000)),
          baselineRssMb: oursResult.baselineRssMb,
          objects: oursResult.objects,
          archivedMb: round1(oursResult.bytes / 1e6),
        },
        ceiling: {
          rowsPerSec: ceilingRate,
          mbPerSec: round1(dataMb / (ceilingResult.ms / 1000)),
          copyGzipPutMs: Math.round(ceilingResult.copyMs),
          deleteMs: Math.round(ceilingResult.deleteMs),
          archivedMb: round1(ceilingResult.bytes / 1e6),
        },
        ratio: ratio(oursRate, ceilingRate),
        batchSize,
        gzipLevel: level,
        rowBytes: size!.avg,
      };
      printTable(ctx.stdout, ['variant', 'rows/s', 'MB/s', 'peak RSS MB', 'written'], [
        ['archive engine (select→gzip→verified create→ledger+delete)', oursRate, result.ours.mbPerSec, oursResult.peakRssMb, formatBytes(oursResult.bytes)],
        ['ceiling (COPY→gzip→one PUT, then one DELETE)', ceilingRate, result.ceiling.mbPerSec, '', formatBytes(ceilingResult.bytes)],
      ]);
      ctx.stdout.write(`ratio ${result.ratio} (target ≥ 0.5, goal 0.8)\n`);
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
  await sql`insert into audit_log select * from audit_source`;
  await sql`vacuum analyze audit_log`;
  await sql`checkpoint`;
}

interface OursResult {
  readonly rows: number;
  readonly bytes: number;
  readonly objects: number;
  readonly ms: number;
  readonly peakRssMb: number;
  readonly baselineRssMb: number;
}

async function measureOurs(ctx: CommandContext, db: TestDatabase, store: ObjectStore, batchSize: number, level: number): Promise<OursResult> {
  const spec = defineArchiveSpec({ table: 'audit_log', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly(), batchSize });
  const engine = createArchiveEngine({ service: 'security', databaseUrl: db.url, store, specs: [spec], hotWindowDays: 90, prefix: 'bench', registry: new Registry(), gzipLevel: level });
  global.gc?.();
  const baselineRssMb = Math.round(process.memoryUsage().rss / 1e6);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 50);
  const started = performance.now();
  const report = await engine.runCycle({ signal: ctx.signal });
  const ms = performance.now() - started;
  clearInterval(sampler);
  const table = report.tables[0]!;
  if (table.outcome !== 'drained') throw new Error(`archive cycle ended ${table.outcome}: ${table.error?.message ?? ''}`);
  const lifetimePeak = process.resourceUsage().maxRSS * 1024;
  return { rows: table.rows, bytes: table.bytes, objects: table.batches, ms, peakRssMb: Math.round(Math.max(peak, lifetimePeak) / 1e6), baselineRssMb };
}

async function measureCeiling(url: string, sql: Sql, store: ObjectStore, level: number): Promise<{ rows: number; bytes: number; ms: number; copyMs: number; deleteMs: number }> {
  // A connection of its own, closed after the COPY: postgres.js can leave a connection's socket
  // paused after a COPY stream, hanging the next query on it (porsager/postgres#499, #1016).
  const copySql = postgres(url, { max: 1, onnotice: () => {} });
  const started = performance.now();
  // COPY emits one chunk per row: coalesce into 1 MB buffers before zlib.
  const gz = createGzip({ level });
  const compressed: Buffer[] = [];
  gz.on('data', (c: Buffer) => compressed.push(c));
  const copy = await copySql`copy (select * from audit_log where occurred_at < now() - make_interval(days => 90) order by id) to stdout`.readable();
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
  void copySql.end({ timeout: 0 });
  await store.putCreate('bench/ceiling/all.tsv.gz', body);
  const copyMs = performance.now() - started;
  const deleteStarted = performance.now();
  const deleted = await sql`delete from audit_log where occurred_at < now() - make_interval(days => 90)`;
  const deleteMs = performance.now() - deleteStarted;
  return { rows: deleted.count, bytes: body.length, ms: performance.now() - started, copyMs, deleteMs };
}

function positiveInt(raw: string, name: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a positive integer: ${raw}`);
  return n;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
