// Admission in the database, exercised as the non-owner runtime role: every write below goes
// through the triggers exactly as the inventory service's writes do.
import { createClient, type Sql } from '@craig/db';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionOf, appendAll, cleanupHarness, itemsIn, rejection, seedItems, seedLibrary, seedServer, type Harness } from '../test/harness.ts';
import { AdmissionBusy, AdmissionClosed, ProtocolRequired, SourceWriteRefused, TargetNotFound } from './errors.ts';
import { RUNTIME_ROLE } from './install.ts';
import { translatePgError } from './internal/translate.ts';
import { createJob } from './jobs.ts';
import { appendSeen, seal } from './manifest.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
});
afterAll(() => h.drop());

/** A sync write as the inventory service does it: typed errors out. */
const write = <T>(p: Promise<T>): Promise<T> =>
  p.catch((e: unknown) => {
    throw translatePgError(e);
  });
const insertItem = (sql: Sql, serverId: number, libraryId: number, externalId: string) =>
  write(sql`insert into items (server_id, library_id, external_id) values (${serverId}, ${libraryId}, ${externalId})`);

/** A prune job on `libraryId`, sealed with `seen` as its manifest. */
async function sealedPrune(serverId: number, libraryId: number, seen: readonly string[]) {
  const job = await createJob(h.app, { serverId, libraryId, kind: 'prune-library' });
  await appendAll(h.app, appendSeen, job.id, seen);
  return seal(h.app, job.id, { expectedUniqueCount: seen.length });
}

describe('item admission', () => {
  it('a late insert into a sealed library is rejected while other libraries of the server accept writes', async () => {
    const { serverId, libraryIds: [target, other] } = await seedServer(h.app, 2);
    const seen = await seedItems(h.app, serverId, target!, 3);
    await sealedPrune(serverId, target!, seen);
    expect(await admissionOf(h.admin, target!)).toBe('draining');

    const late = await rejection(insertItem(h.app, serverId, target!, 'late-1'));
    expect(late).toBeInstanceOf(AdmissionClosed);
    expect(late).toMatchObject({ code: 'admission_closed', scope: 'library', id: target });
    // An update of a row that stays in the draining library fails too.
    expect(await rejection(write(h.app`update items set title = 'x' where external_id = ${seen[0]!}`))).toBeInstanceOf(AdmissionClosed);

    await insertItem(h.app, serverId, other!, 'other-1');
    await write(h.app`update items set title = 'renamed' where external_id = 'other-1'`);
    expect(await itemsIn(h.admin, other!)).toEqual(['other-1']);
    expect(await itemsIn(h.admin, target!)).toEqual(seen);
  });

  it('moves out of a draining library into an open one work; moves into a draining library fail', async () => {
    const { serverId, libraryIds: [draining, open] } = await seedServer(h.app, 2);
    const [stay, leave] = await seedItems(h.app, serverId, draining!, 2);
    const [outsider] = await seedItems(h.app, serverId, open!, 1);
    await sealedPrune(serverId, draining!, [stay!]);

    await write(h.app`update items set library_id = ${open!} where external_id = ${leave!}`);
    expect((await itemsIn(h.admin, open!)).sort()).toEqual([outsider!, leave!].sort());
    const into = await rejection(write(h.app`update items set library_id = ${draining!} where external_id = ${outsider!}`));
    expect(into).toMatchObject({ code: 'admission_closed', scope: 'library', id: draining });
  });

  it('refuses missing and mismatched parents and identity changes', async () => {
    const a = await seedServer(h.app, 1);
    const b = await seedServer(h.app, 1);
    const missing = await rejection(insertItem(h.app, a.serverId, 999_999_999, 'orphan'));
    expect(missing).toBeInstanceOf(TargetNotFound);
    expect(missing).toMatchObject({ code: 'parent_not_found', scope: 'library', id: 999_999_999 });
    const mismatch = await rejection(insertItem(h.app, a.serverId, b.libraryIds[0]!, 'crossed'));
    expect(mismatch).toBeInstanceOf(SourceWriteRefused);
    expect(mismatch.code).toBe('parent_mismatch');
    // The owner has the column privilege the runtime role lacks; the trigger still refuses.
    await seedItems(h.app, a.serverId, a.libraryIds[0]!, 1, 'ident');
    const changed = await rejection(write(h.admin`update items set external_id = 'renamed' where external_id = 'ident-1'`));
    expect(changed.code).toBe('identity_immutable');
    const moved = await rejection(write(h.admin`update libraries set server_id = ${b.serverId} where id = ${a.libraryIds[0]!}`));
    expect(moved.code).toBe('identity_immutable');
  });

  it('server admission fences new libraries and every item write on the server', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    await createJob(h.app, { serverId, kind: 'remove-server' });
    const newLibrary = await rejection(write(h.app`insert into libraries (server_id, external_id, name) values (${serverId}, 'late-lib', 'x')`));
    expect(newLibrary).toMatchObject({ code: 'admission_closed', scope: 'server', id: serverId });
    expect(await rejection(insertItem(h.app, serverId, lib!, 'late'))).toMatchObject({ code: 'admission_closed', scope: 'server' });
  });
});

describe('fencing and contention (NOWAIT)', () => {
  it('a seal that meets an in-flight sync write fails at once with AdmissionBusy, and a retry after it commits succeeds', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const seen = await seedItems(h.app, serverId, lib!, 2);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await appendSeen(h.app, job.id, [...seen, 'in-flight']);

    const writer = createClient(h.db.url, { service: 'writer', max: 1, role: RUNTIME_ROLE });
    try {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let admitted!: () => void;
      const isAdmitted = new Promise<void>((r) => (admitted = r));
      const tx = writer.begin(async (sql) => {
        await sql`insert into items (server_id, library_id, external_id) values (${serverId}, ${lib!}, 'in-flight')`;
        admitted();
        await released;
      });
      await isAdmitted;
      const started = performance.now();
      const busy = await rejection(seal(h.app, job.id, { expectedUniqueCount: 3 }));
      expect(busy).toBeInstanceOf(AdmissionBusy);
      expect(busy).toMatchObject({ code: 'admission_busy', retryable: true, relation: 'libraries' });
      // NOWAIT: no waiting out the 2 s lock timeout.
      expect(performance.now() - started).toBeLessThan(1500);
      expect(await admissionOf(h.admin, lib!)).toBe('open');
      release();
      await tx;
      const sealed = await seal(h.app, job.id, { expectedUniqueCount: 3 });
      expect(sealed).toMatchObject({ state: 'deleting', phase: 'items' });
      expect(sealed.highWaterId).toBeGreaterThanOrEqual(Number((await h.admin`select max(id) as m from items`)[0]!.m));
    } finally {
      await writer.end();
    }
  });

  it('a sync write that meets a fence in progress fails at once with AdmissionBusy instead of waiting', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const fencer = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let held!: () => void;
      const isHeld = new Promise<void>((r) => (held = r));
      const tx = fencer.begin(async (sql) => {
        await sql`select id from libraries where id = ${lib!} for update nowait`;
        held();
        await released;
      });
      await isHeld;
      const busy = await rejection(insertItem(h.app, serverId, lib!, 'blocked'));
      expect(busy).toBeInstanceOf(AdmissionBusy);
      release();
      await tx;
      await insertItem(h.app, serverId, lib!, 'blocked');
      expect(await itemsIn(h.admin, lib!)).toEqual(['blocked']);
    } finally {
      await fencer.end();
    }
  });
});

describe('parent guards', () => {
  it('even an empty library or server cannot be deleted outside the protocol, not even by the owner', async () => {
    const { serverId, libraryIds: [empty, full] } = await seedServer(h.app, 2);
    const [item] = await seedItems(h.app, serverId, full!, 3);
    // The runtime role holds no DELETE on the source graph at all: only cleanup_step (which
    // runs as the owner) deletes, so a direct delete is refused before any guard runs.
    for (const statement of [h.app`delete from libraries where id = ${empty!}`, h.app`delete from servers where id = ${serverId}`, h.app`delete from items where external_id = ${item!}`]) {
      expect(await rejection(statement)).toMatchObject({ code: '42501' });
    }
    // The owner may delete, and the parent guards refuse it outside a job.
    const lib = await rejection(write(h.admin`delete from libraries where id = ${empty!}`));
    expect(lib).toBeInstanceOf(ProtocolRequired);
    expect(lib.code).toBe('cleanup_protocol_required');
    expect(await rejection(write(h.admin`delete from libraries where id = ${full!}`))).toBeInstanceOf(ProtocolRequired);
    expect(await rejection(write(h.admin`delete from servers where id = ${serverId}`))).toBeInstanceOf(ProtocolRequired);
    // The cascade never ran: the inventory is all there.
    expect(await itemsIn(h.admin, full!)).toHaveLength(3);
  });

  it('admission columns change only under a cleanup job', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    expect(await rejection(write(h.app`update libraries set admission = 'draining' where id = ${lib!}`))).toBeInstanceOf(ProtocolRequired);
    expect(await rejection(write(h.app`update servers set admission = 'draining' where id = ${serverId}`))).toBeInstanceOf(ProtocolRequired);
    expect(await rejection(write(h.app`insert into libraries (server_id, external_id, name, admission) values (${serverId}, 'pre-drained', 'x', 'draining')`))).toBeInstanceOf(ProtocolRequired);
    // Reopening a draining library by hand is refused just the same.
    const seen = await seedItems(h.app, serverId, lib!, 1);
    await sealedPrune(serverId, lib!, seen);
    expect(await rejection(write(h.app`update libraries set admission = 'open' where id = ${lib!}`))).toBeInstanceOf(ProtocolRequired);
    expect(await admissionOf(h.admin, lib!)).toBe('draining');
    // A rename is an ordinary write.
    await write(h.app`update libraries set name = 'renamed' where id = ${lib!}`);
  });

  it('a library of another server cannot be created under a server that does not exist', async () => {
    expect(await rejection(write(h.app`insert into libraries (server_id, external_id, name) values (2147483000, 'x', 'x')`))).toMatchObject({ code: 'parent_not_found', scope: 'server' });
    const { serverId } = await seedServer(h.app, 0);
    expect(await seedLibrary(h.app, serverId)).toBeGreaterThan(0);
  });
});
