// What the prune gate costs on the archive path (docs/adr/063-runtime-roles.md): one batch's
// commit (ledger row + exact delete + COMMIT) as it was (the owner's two statements) and as it
// is (the runtime role's one archive_prune_batch call), alternating, on a fresh copy of the same
// rows each time. Not a suite of `pnpm xtask bench`: a one-off check, run with
//   pnpm exec tsx bench/prune-gate-cost.ts [batchSize=5000] [samples=15]
// against the test server (DATABASE_URL, else 127.0.0.1:5432). Figures are noisy on a shared machine.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createClient, defineRuntimeGrants, migrate } from '../packages/db/src/index.ts';
import { defineArchiveSpec, fixpoints, RETENTION_MIGRATIONS, registerArchiveSpecs } from '../packages/retention/src/index.ts';
import { testDatabase } from '../packages/testkit/src/index.ts';

const batch = Number(process.argv[2] ?? 5000);
const samples = Number(process.argv[3] ?? 15);
const ROLE = 'craig_retention_lab_app';
const fixtures = {
  name: 'retention-fixtures',
  directory: fileURLToPath(new URL('../packages/retention/test/sql/', import.meta.url)),
  runtimeGrants: defineRuntimeGrants({ tables: { audit_events: ['select', 'insert'] } }),
};
const spec = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });

const db = await testDatabase({ prefix: 'bench_gate', max: 1 });
const app = createClient(Object.assign(new URL(db.url), { username: ROLE, password: '' }).toString(), { service: 'bench-gate', max: 1 });
const owner = createClient(db.url, { service: 'bench-owner', max: 1 });
try {
  await migrate(db.url, [RETENTION_MIGRATIONS, fixtures], { service: 'bench', runtime: { role: ROLE } });
  await registerArchiveSpecs(db.sql, [spec], 30);
  const times: Record<'owner' | 'gate', number[]> = { owner: [], gate: [] };
  for (let i = 0; i < samples + 3; i++) {
    for (const variant of i % 2 === 0 ? (['owner', 'gate'] as const) : (['gate', 'owner'] as const)) {
      await owner`truncate audit_events`;
      await owner`insert into audit_events (occurred_at, actor, payload) select now() - interval '40 days' + make_interval(secs => g), 'actor-' || g, jsonb_build_object('g', g) from generate_series(1, ${batch}) g`;
      await owner`vacuum analyze audit_events`;
      const [b] = await owner<{ ctids: string; keys: string; xmins: string; min_key: string; max_key: string }[]>`
        select array_agg(ctid order by id)::text as ctids, array_agg(id::text order by id)::text as keys, array_agg(xmin::text order by id)::text as xmins,
               min(id)::text as min_key, max(id)::text as max_key from audit_events`;
      const id = randomUUID();
      const started = performance.now();
      if (variant === 'owner') {
        await owner.begin(async (tx) => {
          await tx`insert into archive_ledger (archive_id, table_name, object_key, sha256, bytes, row_count, min_key, max_key, min_ts, max_ts)
                   values (${id}, 'audit_events', ${`bench/${id}`}, ${'0'.repeat(64)}, 1, ${batch}, ${b!.min_key}, ${b!.max_key}, now() - interval '41 days', now() - interval '39 days')`;
          const [r] = await tx`
            with d as (delete from audit_events as t where t.ctid = any(${b!.ctids}::tid[]) and (true) and t.occurred_at < now() - make_interval(days => 30) returning t.id::text as k, t.xmin::text as x)
            select count(*)::int as deleted, count(*) filter (where (d.k, d.x) in (select * from unnest(${b!.keys}::text[], ${b!.xmins}::text[])))::int as exact from d`;
          if (r!.exact !== batch) throw new Error(`owner path deleted ${r!.exact}`);
        });
      } else {
        await app.begin(async (tx) => {
          const [r] = await tx`
            select deleted, exact from archive_prune_batch(${id}::uuid, 'audit_events', ${`bench/${id}`}, ${'0'.repeat(64)}, 1, ${batch}::int, ${b!.min_key}, ${b!.max_key},
              now() - interval '41 days', now() - interval '39 days', ${b!.ctids}::tid[], ${b!.keys}::text[], ${b!.xmins}::text[], 30)`;
          if (r!.exact !== batch) throw new Error(`gate deleted ${r!.exact}`);
        });
      }
      if (i >= 3) times[variant].push(performance.now() - started);
    }
  }
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { median: s[Math.floor(s.length / 2)]!.toFixed(1), p90: s[Math.floor(s.length * 0.9)]!.toFixed(1), min: s[0]!.toFixed(1), max: s.at(-1)!.toFixed(1) };
  };
  console.log(JSON.stringify({ batch, samples, ms: { ownerTwoStatements: stats(times.owner), gateOneCall: stats(times.gate) } }, null, 2));
} finally {
  await Promise.all([app.end({ timeout: 1 }), owner.end({ timeout: 1 })]);
  await db.drop();
}
