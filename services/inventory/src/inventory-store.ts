import { externalIdProblem, InvalidExternalIds, TargetNotFound, translatePgError } from '@craig/cleanup';
import type { Sql } from '@craig/db';

/** Most items one provider page may carry. */
export const MAX_ITEMS_PER_PAGE = 500;

export interface ServerRow {
  readonly id: number;
  readonly externalId: string;
  readonly name: string;
  readonly admission: string;
  readonly cleanupJobId: number | null;
}

export interface LibraryRow extends ServerRow {
  readonly serverId: number;
  readonly items: number;
}

export interface ProviderItem {
  readonly externalId: string;
  readonly title?: string;
  readonly classification?: string;
}

/** Source writes as the runtime role: every one goes through the admission triggers. */
export class InventoryStore {
  constructor(private readonly sql: Sql) {}

  /** The runtime-role pool the protocol calls share. */
  get sqlClient(): Sql {
    return this.sql;
  }

  async upsertServer(externalId: string, name: string): Promise<ServerRow> {
    assertExternalId(externalId);
    const [row] = await write(
      this.sql<RawServer[]>`
        insert into servers (external_id, name) values (${externalId}, ${name})
        on conflict (external_id) do update set name = excluded.name, updated_at = now()
        returning id, external_id, name, admission, cleanup_job_id`,
    );
    return server(row!);
  }

  async getServer(serverId: number): Promise<ServerRow & { libraries: number }> {
    const [row] = await this.sql<(RawServer & { libraries: number })[]>`
      select s.id, s.external_id, s.name, s.admission, s.cleanup_job_id,
             (select count(*)::int from libraries l where l.server_id = s.id) as libraries
      from servers s where s.id = ${serverId}`;
    if (!row) throw new TargetNotFound('server', serverId);
    return { ...server(row), libraries: row.libraries };
  }

  async upsertLibrary(serverId: number, externalId: string, name: string): Promise<LibraryRow> {
    assertExternalId(externalId);
    const [row] = await write(
      this.sql<RawLibrary[]>`
        insert into libraries (server_id, external_id, name) values (${serverId}, ${externalId}, ${name})
        on conflict (server_id, external_id) do update set name = excluded.name, updated_at = now()
        returning id, server_id, external_id, name, admission, cleanup_job_id, 0 as items`,
    );
    return library(row!);
  }

  async getLibrary(libraryId: number): Promise<LibraryRow> {
    const [row] = await this.sql<RawLibrary[]>`
      select l.id, l.server_id, l.external_id, l.name, l.admission, l.cleanup_job_id,
             (select count(*)::int from items i where i.library_id = l.id) as items
      from libraries l where l.id = ${libraryId}`;
    if (!row) throw new TargetNotFound('library', libraryId);
    return library(row);
  }

  /**
   * Upsert one provider page into a library: new items are inserted, known ones (same server
   * and external id) updated, and moved here if they were in another library of the server.
   * A classification that differs from the item's latest adds a history row. One transaction;
   * a draining destination refuses the whole page (`AdmissionClosed`).
   */
  async upsertItems(libraryId: number, items: readonly ProviderItem[]): Promise<{ upserted: number; classified: number }> {
    const invalid: Array<{ index: number; value: unknown; reason: string }> = [];
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const problem = externalIdProblem(item.externalId) ?? (seen.has(item.externalId) ? 'appears twice in the page' : undefined);
      if (problem) invalid.push({ index, value: item.externalId, reason: problem });
      seen.add(item.externalId);
    });
    if (invalid.length > 0) throw new InvalidExternalIds(invalid);
    if (items.length === 0) return { upserted: 0, classified: 0 };
    const [lib] = await this.sql<{ server_id: number }[]>`select server_id from libraries where id = ${libraryId}`;
    if (!lib) throw new TargetNotFound('library', libraryId);
    const [result] = await write(
      this.sql<{ upserted: number; classified: number }[]>`
        with page as (
          select * from unnest(${items.map((i) => i.externalId)}::text[], ${items.map((i) => i.title ?? '')}::text[], ${items.map((i) => i.classification ?? null)}::text[])
            as p(external_id, title, classification)
        ),
        up as (
          insert into items (server_id, library_id, external_id, title)
          select ${lib.server_id}, ${libraryId}, external_id, title from page
          on conflict (server_id, external_id) do update
            set library_id = excluded.library_id, title = excluded.title, updated_at = now()
          returning id, external_id
        ),
        cls as (
          insert into item_classifications (item_id, classification)
          select up.id, page.classification from up join page using (external_id)
          where page.classification is not null
            and page.classification is distinct from (
              select h.classification from item_classifications h where h.item_id = up.id order by h.id desc limit 1)
          returning item_id
        )
        select (select count(*)::int from up) as upserted, (select count(*)::int from cls) as classified`,
    );
    return result!;
  }

  async listItems(libraryId: number, after: number, limit: number): Promise<Array<{ id: number; externalId: string; title: string; classification: string | null }>> {
    const rows = await this.sql<{ id: string; external_id: string; title: string; classification: string | null }[]>`
      select i.id, i.external_id, i.title,
             (select h.classification from item_classifications h where h.item_id = i.id order by h.id desc limit 1) as classification
      from items i where i.library_id = ${libraryId} and i.id > ${after} order by i.id limit ${limit}`;
    return rows.map((r) => ({ id: Number(r.id), externalId: r.external_id, title: r.title, classification: r.classification }));
  }
}

interface RawServer {
  id: number;
  external_id: string;
  name: string;
  admission: string;
  cleanup_job_id: string | null;
}
interface RawLibrary extends Omit<RawServer, 'id'> {
  id: string;
  server_id: number;
  items: number;
}

const server = (r: RawServer): ServerRow => ({ id: r.id, externalId: r.external_id, name: r.name, admission: r.admission, cleanupJobId: r.cleanup_job_id === null ? null : Number(r.cleanup_job_id) });
const library = (r: RawLibrary): LibraryRow => ({ ...server({ ...r, id: Number(r.id) }), serverId: r.server_id, items: r.items });

function assertExternalId(id: string): void {
  const problem = externalIdProblem(id);
  if (problem) throw new InvalidExternalIds([{ index: 0, value: id, reason: problem }]);
}

async function write<T>(query: Promise<T>): Promise<T> {
  try {
    return await query;
  } catch (error) {
    throw translatePgError(error);
  }
}
