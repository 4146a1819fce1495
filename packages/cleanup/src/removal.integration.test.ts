import { createClient } from '@craig/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupHarness, itemsIn, seedItems, seedServer, stepAll, type Harness } from '../test/harness.ts';
import { RUNTIME_ROLE } from './install.ts';
import { createJob, status } from './jobs.ts';
import { runToCompletion } from './step.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
  // A dependent of items, so the deletes cascade for real.
  await h.admin`create table item_notes (id bigserial primary key, item_id bigint not null references items (id) on delete cascade, note text not null)`;
  await h.admin`create index on item_notes (item_id)`;
  await h.admin.unsafe(`grant select, insert, delete on item_notes to ${RUNTIME_ROLE}; grant usage on sequence item_notes_id_seq to ${RUNTIME_ROLE}`);
});
afterAll(() => h.drop());

const orphanNotes = async () => (await h.admin`select count(*)::int as n from item_notes n where not exists (select 1 from items i where i.id = n.item_id)`)[0]!.n as number;

describe('removal', () => {
  it('remove-library drains its inventory, then removes the empty library; no cascade through remaining rows', async () => {
    const { serverId, libraryIds: [lib, keep] } = await seedServer(h.app, 2);
    await seedItems(h.app, serverId, lib!, 300);
    await seedItems(h.app, serverId, keep!, 5);
    await h.app`insert into item_notes (item_id, note) select id, 'n' from items where library_id = ${lib!}`;
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'remove-library' });
    const results = await stepAll(h.app, job.id);
    expect(results.map((r) => r.phase)).toEqual(['items', 'items', 'items', 'verify', 'library']);
    expect(results.map((r) => r.counts.deleted)).toEqual([128, 128, 44, 0, 0]);
    expect(results.at(-1)).toMatchObject({ done: true, counts: { librariesRemoved: 1 } });
    expect((await h.admin`select count(*)::int as n from libraries where id = ${lib!}`)[0]!.n).toBe(0);
    expect(await itemsIn(h.admin, keep!)).toHaveLength(5);
    expect(await orphanNotes()).toBe(0);
  });

  it('server removal: drains every library, removes the empty libraries one per step in id order, then the server', async () => {
    const { serverId, libraryIds } = await seedServer(h.app, 3);
    await seedItems(h.app, serverId, libraryIds[0]!, 130);
    await seedItems(h.app, serverId, libraryIds[2]!, 10);
    const bystander = await seedServer(h.app, 1);
    await seedItems(h.app, bystander.serverId, bystander.libraryIds[0]!, 3);
    const job = await createJob(h.app, { serverId, kind: 'remove-server' });
    const results = await stepAll(h.app, job.id);
    expect(results.map((r) => `${r.phase}@${r.libraryId ?? '-'}:${r.counts.deleted}/${r.counts.librariesRemoved}/${r.counts.serversRemoved}`)).toEqual([
      `items@${libraryIds[0]}:128/0/0`,
      `items@${libraryIds[0]}:2/0/0`,
      `items@${libraryIds[1]}:0/0/0`,
      `items@${libraryIds[2]}:10/0/0`,
      'verify@-:0/0/0',
      `libraries@${libraryIds[0]}:0/1/0`,
      `libraries@${libraryIds[1]}:0/1/0`,
      `libraries@${libraryIds[2]}:0/1/0`,
      'server@-:0/0/1',
    ]);
    expect((await h.admin`select count(*)::int as n from servers where id = ${serverId}`)[0]!.n).toBe(0);
    expect(await status(h.app, job.id)).toMatchObject({ state: 'completed', counts: { deleted: 140, librariesRemoved: 3, serversRemoved: 1 } });
    expect(await itemsIn(h.admin, bystander.libraryIds[0]!)).toHaveLength(3);
  });

  it('jobs on different servers run independently, their steps interleaved', async () => {
    const a = await seedServer(h.app, 1);
    const b = await seedServer(h.app, 1);
    await seedItems(h.app, a.serverId, a.libraryIds[0]!, 200);
    await seedItems(h.app, b.serverId, b.libraryIds[0]!, 200);
    const ja = await createJob(h.app, { serverId: a.serverId, libraryId: a.libraryIds[0]!, kind: 'remove-library' });
    const jb = await createJob(h.app, { serverId: b.serverId, libraryId: b.libraryIds[0]!, kind: 'remove-library' });
    const other = createClient(h.db.url, { service: 'other', max: 1, role: RUNTIME_ROLE });
    try {
      const [ra, rb] = await Promise.all([runToCompletion(h.app, ja.id, { rowBudget: 20 }), runToCompletion(other, jb.id, { rowBudget: 20 })]);
      expect(ra.done && rb.done).toBe(true);
    } finally {
      await other.end();
    }
    expect((await status(h.app, ja.id)).counts.deleted).toBe(200);
    expect((await status(h.app, jb.id)).counts.deleted).toBe(200);
  });
});
