// Placement reads and writes. Every write takes the caller's transaction and stages its event
// there: the event is published if and only if the row change commits.
import type { Sql, TransactionSql } from '@craig/db';
import { stageEvent } from '@craig/mq';
import { PLACEMENTS_EVENTS } from './events.ts';
import { requireOpenCase } from '@craig/service';
import { PlacementAlreadyEndedError, PlacementNotFoundError } from './errors.ts';

export const MAX_PROVIDER_LENGTH = 200;
export const MAX_PLACEMENTS_PER_PAGE = 100;

export type EndReason = 'requested' | 'case_closed';

export interface PlacementRow {
  readonly id: string;
  readonly caseId: string;
  readonly provider: string;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly endReason: EndReason | null;
}

interface DbPlacement {
  id: string;
  case_id: string;
  provider: string;
  started_at: Date;
  ended_at: Date | null;
  end_reason: EndReason | null;
}

const toPlacement = (r: DbPlacement): PlacementRow => ({
  id: r.id,
  caseId: r.case_id,
  provider: r.provider,
  startedAt: r.started_at.toISOString(),
  endedAt: r.ended_at?.toISOString() ?? null,
  endReason: r.end_reason,
});

async function stageEnded(tx: TransactionSql, p: PlacementRow): Promise<void> {
  await stageEvent(tx, { aggregateType: 'placement', aggregateId: p.id, eventType: PLACEMENTS_EVENTS.type('placement.ended'), payload: { placementId: p.id, caseId: p.caseId, endedAt: p.endedAt, reason: p.endReason } });
}

/**
 * Start a placement for an open case known here and stage `placement.started`. Refused with
 * `case_unknown` / `case_closed` (see `requireOpenCase`: the case ref stays share-locked until
 * commit, so a concurrent `case.closed` ends this placement too or is seen by this check).
 */
export async function startPlacement(tx: TransactionSql, caseId: string, provider: string): Promise<PlacementRow> {
  await requireOpenCase(tx, caseId);
  const [row] = await tx<DbPlacement[]>`insert into placements (case_id, provider) values (${caseId}, ${provider}) returning *`;
  const started = toPlacement(row!);
  await stageEvent(tx, {
    aggregateType: 'placement',
    aggregateId: started.id,
    eventType: PLACEMENTS_EVENTS.type('placement.started'),
    payload: { placementId: started.id, caseId: started.caseId, provider: started.provider, startedAt: started.startedAt },
  });
  return started;
}

/** End an active placement on request and stage `placement.ended`; the second end is refused. */
export async function endPlacement(tx: TransactionSql, placementId: string): Promise<PlacementRow> {
  const [row] = await tx<DbPlacement[]>`
    update placements set ended_at = now(), end_reason = 'requested' where id = ${placementId} and ended_at is null returning *`;
  if (!row) {
    const [existing] = await tx<DbPlacement[]>`select * from placements where id = ${placementId}`;
    if (!existing) throw new PlacementNotFoundError(placementId);
    throw new PlacementAlreadyEndedError(placementId, existing.ended_at!.toISOString(), existing.end_reason!);
  }
  const ended = toPlacement(row);
  await stageEnded(tx, ended);
  return ended;
}

/** End every active placement of a closed case (in the inbox handler's transaction), staging `placement.ended` for each. */
export async function endPlacementsOfCase(tx: TransactionSql, caseId: string): Promise<PlacementRow[]> {
  const rows = await tx<DbPlacement[]>`
    update placements set ended_at = now(), end_reason = 'case_closed' where case_id = ${caseId} and ended_at is null returning *`;
  const ended = rows.map(toPlacement);
  for (const p of ended) await stageEnded(tx, p);
  return ended;
}

export async function getPlacement(sql: Sql, placementId: string): Promise<PlacementRow> {
  const [row] = await sql<DbPlacement[]>`select * from placements where id = ${placementId}`;
  if (!row) throw new PlacementNotFoundError(placementId);
  return toPlacement(row);
}

/** Placements oldest first, optionally of one case and/or only active or only ended. */
export async function listPlacements(sql: Sql, options: { readonly caseId?: string; readonly status?: 'active' | 'ended'; readonly limit: number }): Promise<PlacementRow[]> {
  const rows = await sql<DbPlacement[]>`
    select * from placements
    where ${options.caseId === undefined ? sql`true` : sql`case_id = ${options.caseId}`}
      and ${options.status === 'active' ? sql`ended_at is null` : options.status === 'ended' ? sql`ended_at is not null` : sql`true`}
    order by started_at, id
    limit ${options.limit}`;
  return rows.map(toPlacement);
}
