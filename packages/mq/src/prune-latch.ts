import type { Sql } from 'postgres';

/** A sweep stopped by its per-cycle cap, waiting for an operator (table `prune_latch`). */
export interface PruneLatch {
  readonly target: string;
  readonly latchedAt: Date;
  /** Rows the capped cycle deleted. */
  readonly deleted: number;
  readonly cap: number;
}

/** Every latched target of this database. */
export async function readPruneLatches(sql: Sql): Promise<Map<string, PruneLatch>> {
  const rows = await sql<{ target: string; latched_at: Date; deleted: string; cap: string }[]>`
    select target, latched_at, deleted::text, cap::text from prune_latch`;
  return new Map(rows.map((r) => [r.target, { target: r.target, latchedAt: r.latched_at, deleted: Number(r.deleted), cap: Number(r.cap) }]));
}

/** Latch `target` and return the latch (idempotent: an existing latch's record is kept). */
export async function latchPrune(sql: Sql, target: string, fields: { deleted: number; cap: number }): Promise<PruneLatch> {
  return sql.begin(async (tx) => {
    // Durable even on a session that prunes with synchronous_commit off: a latch lost to a
    // crash would let the next cycle delete another cap's worth.
    await tx`set local synchronous_commit = on`;
    const [row] = await tx<{ target: string; latched_at: Date; deleted: string; cap: string }[]>`
      insert into prune_latch (target, deleted, cap) values (${target}, ${fields.deleted}, ${fields.cap})
      on conflict (target) do update set target = prune_latch.target
      returning target, latched_at, deleted::text, cap::text`;
    return { target: row!.target, latchedAt: row!.latched_at, deleted: Number(row!.deleted), cap: Number(row!.cap) };
  });
}

/**
 * Clear `target`'s latch so its next cycle deletes again; returns the latch that was cleared,
 * or undefined when it was not latched. Only an operator calls this
 * (`pnpm xtask prune <service> --resume <table>`).
 */
export async function resumePrune(sql: Sql, target: string): Promise<PruneLatch | undefined> {
  const [row] = await sql<{ target: string; latched_at: Date; deleted: string; cap: string }[]>`
    delete from prune_latch where target = ${target} returning target, latched_at, deleted::text, cap::text`;
  return row ? { target: row.target, latchedAt: row.latched_at, deleted: Number(row.deleted), cap: Number(row.cap) } : undefined;
}
