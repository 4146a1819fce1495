// What the archive scenarios share: aged audit history in the security service's database, the
// archive read back and verified by `pnpm xtask archive-fetch` (the operator's own command),
// and the object store listed from outside.
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sql } from '@craig/db';
import { createObjectStore } from '@craig/store';
import type { S3TestServer } from '@craig/testkit';
import { count } from '../probes.ts';
import type { Outcome, ScenarioContext } from '../scenario.ts';
import { sampleValue, type FaultService, type FaultStack } from '../stack.ts';

export interface AuditSeed {
  /** Rows past the 90-day hot window (archived, then deleted). */
  readonly aged: number;
  /** Rows inside it (they stay hot). */
  readonly fresh: number;
  /** Aged dead-letter audit rows (the second table). */
  readonly deadLetters: number;
}

/** Insert the history: aged rows first (ids 1..aged), then fresh ones. */
export async function seedAudit(sql: Sql, seed: AuditSeed): Promise<void> {
  await sql`
    insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, occurred_at, received_at)
    select gen_random_uuid(), 'case.opened', 'case', gen_random_uuid()::text, 'cases', jsonb_build_object('subject', 'aged ' || g, 'pad', repeat('x', 200)), t, t
    from (select g, now() - interval '200 days' + g * interval '1 s' as t from generate_series(1, ${seed.aged}) g) x`;
  await sql`
    insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, occurred_at, received_at)
    select gen_random_uuid(), 'case.opened', 'case', gen_random_uuid()::text, 'cases', jsonb_build_object('subject', 'fresh ' || g), now() - interval '1 day', now() - interval '1 day'
    from generate_series(1, ${seed.fresh}) g`;
  await sql`
    insert into dead_letter_audit (consumer, message_id, event_id, routing_key, error, attempts, body, dead_lettered_at, received_at)
    select 'placements.cases', m::text, m, 'case.opened', 'handler failed', 6, '{}', t, t
    from (select gen_random_uuid() as m, now() - interval '150 days' + g * interval '1 s' as t from generate_series(1, ${seed.deadLetters}) g) x`;
}

/** Rows of each table still past the hot window. */
export async function agedLeft(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select (select count(*) from audit_log where received_at < now() - interval '90 days')::int
         + (select count(*) from dead_letter_audit where received_at < now() - interval '90 days')::int as n`;
  return row!.n;
}

/** Rows of both tables, and what the ledger says it archived. */
export async function auditCounts(sql: Sql): Promise<{ readonly hot: number; readonly ledgerRows: number; readonly ledgerEntries: number }> {
  const [row] = await sql<{ hot: number; ledger_rows: number; ledger_entries: number }[]>`
    select (select count(*) from audit_log)::int + (select count(*) from dead_letter_audit)::int as hot,
           (select coalesce(sum(row_count), 0) from archive_ledger)::int as ledger_rows,
           (select count(*) from archive_ledger)::int as ledger_entries`;
  return { hot: row!.hot, ledgerRows: row!.ledger_rows, ledgerEntries: row!.ledger_entries };
}

/** Every object key under the service's archive prefix, read from the store itself. */
export async function storedKeys(server: S3TestServer, service = 'security'): Promise<string[]> {
  const store = createObjectStore({ backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true });
  try {
    const keys: string[] = [];
    for await (const object of store.list(`archive/${service}/`)) keys.push(object.key);
    return keys;
  } finally {
    store.close();
  }
}

export interface VerifyOutput {
  readonly code: number;
  readonly entries: number;
  readonly rows: number;
  readonly failed: number;
  readonly orphans: readonly string[];
  readonly text: string;
}

/** `pnpm xtask archive-fetch <service> --verify`, parsed. */
export async function verifyWithXtask(stack: FaultStack, env: Readonly<Record<string, string>>, service = 'security'): Promise<VerifyOutput> {
  const run = await stack.xtask(['archive-fetch', service, '--verify'], env);
  const head = /: (\d+) ledger entries checked, (\d+) rows/.exec(run.stdout);
  const tail = /(\d+) failed, (\d+) orphan object/.exec(run.stdout);
  return {
    code: run.code,
    entries: Number(head?.[1] ?? -1),
    rows: Number(head?.[2] ?? -1),
    failed: Number(tail?.[1] ?? -1),
    orphans: [...run.stdout.matchAll(/^orphan (\S+)/gm)].map((m) => m[1]!),
    text: run.stdout + run.stderr,
  };
}

/** `pnpm xtask archive-fetch <service> --out FILE`: rows per table, and how many distinct ids. */
export async function fetchWithXtask(stack: FaultStack, env: Readonly<Record<string, string>>, service = 'security'): Promise<{ readonly code: number; readonly rows: Map<string, { total: number; distinct: number }>; readonly text: string }> {
  const file = join(tmpdir(), `craig-faults-fetch-${process.pid}-${Date.now()}.ndjson`);
  try {
    const run = await stack.xtask(['archive-fetch', service, '--out', file], env);
    const rows = new Map<string, { total: number; ids: Set<string> }>();
    const text = run.code === 0 ? await readFile(file, 'utf8') : '';
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const row = JSON.parse(line) as { _table: string; id: string };
      const entry = rows.get(row._table) ?? { total: 0, ids: new Set<string>() };
      entry.total++;
      entry.ids.add(row.id);
      rows.set(row._table, entry);
    }
    return { code: run.code, rows: new Map([...rows].map(([t, e]) => [t, { total: e.total, distinct: e.ids.size }])), text: run.stdout + run.stderr };
  } finally {
    await rm(file, { force: true });
  }
}

export const ARCHIVE_SEED: AuditSeed = { aged: 6_000, fresh: 200, deadLetters: 50 };

/**
 * The security service's database seeded with `ARCHIVE_SEED`, on a stack whose object store is
 * the S3 test server; the service itself is not started yet (the scenario injects its fault
 * first). Timer cycles come once, 5 s after a start, then hourly: the scenario triggers the rest.
 */
export async function archiveStack(ctx: ScenarioContext, settings: Readonly<Record<string, string>> = {}) {
  const store = await ctx.s3();
  const stack = await ctx.stack({ transport: 'postgres', objectStore: store });
  const all = { ARCHIVE_EVERY_MINUTES: '60', ...settings };
  const env = await stack.env('security', all);
  await stack.migrate('security', env);
  const sql = stack.sql('security');
  await seedAudit(sql, ARCHIVE_SEED);
  return { store, stack, env, sql, settings: all };
}

/** Archive cycles this process finished (any status), from its /metrics. */
export async function cyclesDone(service: FaultService): Promise<number> {
  return sampleValue(await service.metrics(), 'archive_cycles_total');
}

/**
 * After recovery: nothing aged left hot, the ledger holds every seeded row once (read back and
 * verified by `archive-fetch`), the fresh rows stayed hot, and `orphans` objects (no more, no
 * fewer) are listed by `--verify`. Fills the outcome's expected/kept/lost/duplicated.
 */
export async function checkArchivedOnce(out: Outcome, stack: FaultStack, env: Readonly<Record<string, string>>, sql: Sql, orphans: readonly string[] = []): Promise<void> {
  const { aged, fresh, deadLetters } = ARCHIVE_SEED;
  out.equal('aged rows left hot', await agedLeft(sql), 0);
  const freshLeft = await count(sql, 'audit_log', `payload->>'subject' like 'fresh %'`);
  out.equal('fresh rows kept hot', freshLeft, fresh);
  const verify = await verifyWithXtask(stack, env);
  out.equal('archive-fetch --verify: entries that failed verification', verify.failed, 0);
  out.equal('archive-fetch --verify: rows in verified entries', verify.rows, aged + deadLetters);
  const same = [...verify.orphans].sort().join(',') === [...orphans].sort().join(',');
  out.check('archive-fetch --verify: orphans', same, `${verify.orphans.length} listed, ${orphans.length} expected${same ? '' : `: ${verify.orphans.join(', ')}`}`);
  const fetched = await fetchWithXtask(stack, env);
  const audit = fetched.rows.get('audit_log') ?? { total: 0, distinct: 0 };
  const dead = fetched.rows.get('dead_letter_audit') ?? { total: 0, distinct: 0 };
  out.equal('audit_log rows fetched', audit.distinct, aged);
  out.equal('dead_letter_audit rows fetched', dead.distinct, deadLetters);
  out.expected = aged + deadLetters + fresh;
  out.kept = audit.distinct + dead.distinct + freshLeft;
  out.lost = out.expected - out.kept;
  out.duplicated = audit.total - audit.distinct + (dead.total - dead.distinct);
}
