import { createClient } from '@craig/db';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionOf, appendAll, cleanupHarness, itemsIn, rejection, seedItems, seedServer, stepAll, type Harness } from '../test/harness.ts';
import { AdmissionBusy, JobStateConflict } from './errors.ts';
import { RUNTIME_ROLE } from './install.ts';
import { createJob, status } from './jobs.ts';
import { appendSeen, seal } from './manifest.ts';
import { runToCompletion, step, stepWindow } from './step.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
  // A dependent of items, so the deletes cascade for real.
  await h.admin`create table item_notes (id bigserial primary key, item_id bigint not null references items (id) on delete cascade, note text not null)`;
  await h.admin`create index on item_notes (item_id)`;
  await h.admin.unsafe(`grant select, insert, delete on item_notes to ${RUNTIME_ROLE}; grant usage on sequence item_notes_id_seq to ${RUNTIME_ROLE}`);
});
afterAll(() => h.drop());

/** `total` items, two notes each; the first `seenCount` are in the sealed manifest. */
async function prunable(total: number, seenCount: number, libraries = 1) {
  const { serverId, libraryIds } = await seedServer(h.app, libraries);
  const lib = libraryIds[0]!;
  const items = await seedItems(h.app, serverId, lib, total);
  await h.app`insert into item_notes (item_id, note) select id, n::text from items, generate_series(1, 2) n where library_id = ${lib}`;
  const seen = items.slice(0, seenCount);
  const job = await createJob(h.app, { serverId, libraryId: lib, kind: 'prune-library' });
  await appendAll(h.app, appendSeen, job.id, seen);
  await seal(h.app, job.id, { expectedUniqueCount: seen.length });
  return { serverId, lib, libraryIds, items, seen, unseen: items.slice(seenCount), jobId: job.id };
}

const notesOf = async (lib: number) => (await h.admin`select count(*)::int as n from item_notes n join items i on i.id = n.item_id where i.library_id = ${lib}`)[0]!.n as number;
const orphanNotes = async () => (await h.admin`select count(*)::int as n from item_notes n where not exists (select 1 from items i where i.id = n.item_id)`)[0]!.n as number;

/** The pid of a backend running cleanup_step that waits on a lock (polls until there is one). */
async function waitingStepPid(): Promise<number> {
  for (let i = 0; i < 400; i++) {
    const [row] = await h.admin<{ pid: number }[]>`
      select pid from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%cleanup_step%' and pid <> pg_backend_pid()`;
    if (row) return row.pid;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no step ever waited on a lock');
}

/**
 * Run `concurrent` in an open transaction on `writer`, start `run`, wait until it is blocked on
 * a row the writer holds (it has discovered its candidates by then), then commit the writer.
 */
async function whileStepWaits<T>(writer: postgres.Sql, concurrent: (tx: postgres.TransactionSql) => Promise<void>, run: () => Promise<T>): Promise<T> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const tx = writer.begin(async (sql) => {
    await concurrent(sql);
    ready();
    await released;
  });
  await isReady;
  const running = run();
  try {
    await waitingStepPid();
  } finally {
    release();
  }
  await tx;
  return running;
}


describe('prune-library', () => {
  it('deletes exactly the unseen items in bounded steps, cascades to dependents, then reopens the library', async () => {
    const { lib, seen, unseen, jobId } = await prunable(700, 300);
    const results = await stepAll(h.app, jobId);
    const itemSteps = results.filter((r) => r.phase === 'items');
    for (const r of itemSteps) {
      expect(r.counts.visited).toBeLessThanOrEqual(128);
      expect(r.counts.deleted).toBeLessThanOrEqual(128);
    }
    expect(itemSteps.reduce((n, r) => n + r.counts.deleted, 0)).toBe(400);
    expect(results.at(-1)).toMatchObject({ phase: 'verify', done: true, stateAfter: 'completed', phaseAfter: 'done' });
    expect(results.map((r) => r.stepNo)).toEqual(results.map((_, i) => i + 1));
    expect((await itemsIn(h.admin, lib)).sort()).toEqual([...seen].sort());
    expect(await notesOf(lib)).toBe(600);
    expect(await orphanNotes()).toBe(0);
    expect(await admissionOf(h.admin, lib)).toBe('open');
    const done = await status(h.app, jobId);
    expect(done).toMatchObject({ state: 'completed', phase: 'done', pass: 1 });
    expect(done.counts).toEqual({ visited: 400, kept: 300, deleted: 400, moved: 0, alreadyAbsent: 0, retained: 0, librariesRemoved: 0, serversRemoved: 0 });
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(unseen).toHaveLength(400);
  });

  it('an empty sealed manifest means an empty library', async () => {
    const { lib, jobId } = await prunable(150, 0);
    await stepAll(h.app, jobId);
    expect(await itemsIn(h.admin, lib)).toEqual([]);
    expect((await status(h.app, jobId)).counts.deleted).toBe(150);
    expect(await admissionOf(h.admin, lib)).toBe('open');
  });

  it('a replayed step returns its recorded result without deleting; an out-of-order step is refused', async () => {
    const { lib, jobId } = await prunable(300, 100);
    const first = await step(h.app, jobId, 1, { rowBudget: 50 });
    expect(first).toMatchObject({ stepNo: 1, replayed: false });
    expect(first.counts.deleted).toBe(50);
    const before = (await itemsIn(h.admin, lib)).length;
    const again = await step(h.app, jobId, 1, { rowBudget: 50 });
    expect(again).toEqual({ ...first, replayed: true });
    expect((await itemsIn(h.admin, lib)).length).toBe(before);
    expect((await status(h.app, jobId)).counts.deleted).toBe(50);
    const skipped = await rejection(step(h.app, jobId, 3));
    expect(skipped).toBeInstanceOf(JobStateConflict);
    expect(skipped).toMatchObject({ expectedStep: 2 });
    await stepAll(h.app, jobId);
    // Replaying the last step of a finished job still answers from the record.
    const last = (await status(h.app, jobId)).stepsDone;
    expect(await step(h.app, jobId, last)).toMatchObject({ replayed: true, done: true });
    expect(await rejection(step(h.app, jobId, last + 1))).toBeInstanceOf(JobStateConflict);
  });

  it('a changed revision is retained for another pass, then deleted once it holds still', async () => {
    const { lib, unseen, seen, jobId } = await prunable(20, 10);
    // A writer that bypasses the triggers (owner, replica mode) rewrites an unseen row and holds
    // it: the step discovers the old version, waits on the row, then finds its xmin changed.
    const bypass = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      const target = unseen[3]!;
      const result = await whileStepWaits(
        bypass,
        async (tx) => {
          await tx`set local session_replication_role = replica`;
          await tx`update items set title = 'touched' where external_id = ${target}`;
        },
        () => step(h.app, jobId, 1),
      );
      expect(result.counts).toMatchObject({ visited: 10, deleted: 9, retained: 1, moved: 0, alreadyAbsent: 0 });
      expect(await itemsIn(h.admin, lib)).toContain(target);
      const rest = await stepAll(h.app, jobId);
      expect(rest.map((r) => `${r.phase}:${r.pass}`)).toEqual(['verify:1', 'items:2', 'verify:2']);
      expect(rest[1]!.counts).toMatchObject({ visited: 1, deleted: 1, kept: 10 });
      expect((await itemsIn(h.admin, lib)).sort()).toEqual([...seen].sort());
      expect((await status(h.app, jobId)).counts).toMatchObject({ deleted: 10, retained: 1, kept: 20 });
    } finally {
      await bypass.end();
    }
  });

  it('a row slipped in behind the triggers is found by the final absence check and removed in another pass', async () => {
    const { serverId, lib, seen, jobId } = await prunable(40, 20);
    await step(h.app, jobId, 1);
    // The owner, triggers off, inserts an unseen item into the draining library after the seal:
    // its id is above the sealed high-water id, so only the absence check can see it.
    await h.admin.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`insert into items (server_id, library_id, external_id) values (${serverId}, ${lib}, 'smuggled')`;
    });
    const rest = await stepAll(h.app, jobId);
    expect(rest.map((r) => `${r.phase}:${r.pass}`)).toEqual(['verify:1', 'items:2', 'verify:2']);
    expect(rest[1]!.counts.deleted).toBe(1);
    expect((await itemsIn(h.admin, lib)).sort()).toEqual([...seen].sort());
    expect(await admissionOf(h.admin, lib)).toBe('open');
  });

  it('a row moved to an open library mid-step counts as moved, one deleted meanwhile as already absent; neither as deleted', async () => {
    const { lib, libraryIds, unseen, jobId } = await prunable(20, 5, 2);
    const open = libraryIds[1]!;
    // A writer through the admission triggers: moving out of the draining library is admitted.
    // It is the owner, because it also deletes an item outside a step, which the runtime role
    // has no privilege to do.
    const writer = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      const result = await whileStepWaits(
        writer,
        async (tx) => {
          await tx`update items set library_id = ${open} where external_id = ${unseen[0]!}`;
          await tx`delete from items where external_id = ${unseen[1]!}`;
        },
        () => step(h.app, jobId, 1),
      );
      expect(result.counts).toMatchObject({ visited: 15, deleted: 13, moved: 1, alreadyAbsent: 1, retained: 0, kept: 5 });
      await stepAll(h.app, jobId);
      expect(await itemsIn(h.admin, open)).toEqual([unseen[0]]);
      expect(await itemsIn(h.admin, lib)).toHaveLength(5);
      expect((await status(h.app, jobId)).counts).toMatchObject({ deleted: 13, moved: 1, alreadyAbsent: 1 });
    } finally {
      await writer.end();
    }
  });

  it('a crash mid-job resumes on a new connection with exact final counts', async () => {
    const { lib, seen, unseen, jobId } = await prunable(600, 200);
    const doomed = createClient(h.db.url, { service: 'doomed', max: 1, role: RUNTIME_ROLE });
    const holder = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      await step(doomed, jobId, 1);
      await step(doomed, jobId, 2);
      // Step 3 is killed mid-flight: it has discovered its candidates and deleted none yet
      // (it waits on a row another session holds) when its backend is terminated.
      const victim = unseen[300]!;
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let held!: () => void;
      const isHeld = new Promise<void>((r) => (held = r));
      const holding = holder.begin(async (tx) => {
        await tx`select id from items where external_id = ${victim} for update`;
        held();
        await released;
      });
      await isHeld;
      const crashed = step(doomed, jobId, 3).then(
        () => 'completed',
        (e: unknown) => e,
      );
      const pid = await waitingStepPid();
      await h.admin`select pg_terminate_backend(${pid})`;
      expect(await crashed).not.toBe('completed');
      release();
      await holding;
    } finally {
      await Promise.all([doomed.end({ timeout: 0 }), holder.end()]);
    }
    const mid = await status(h.app, jobId);
    expect(mid.stepsDone).toBe(2);
    expect(mid.counts.deleted).toBe((await h.admin`select coalesce(sum(deleted), 0)::int as n from cleanup_steps where job_id = ${jobId}`)[0]!.n);
    expect((await itemsIn(h.admin, lib)).length).toBe(600 - mid.counts.deleted);

    const fresh = createClient(h.db.url, { service: 'fresh', max: 1, role: RUNTIME_ROLE });
    try {
      const { done } = await runToCompletion(fresh, jobId);
      expect(done).toBe(true);
    } finally {
      await fresh.end();
    }
    const final = await status(h.app, jobId);
    expect(final.counts).toEqual({ visited: 400, kept: 200, deleted: 400, moved: 0, alreadyAbsent: 0, retained: 0, librariesRemoved: 0, serversRemoved: 0 });
    expect((await itemsIn(h.admin, lib)).sort()).toEqual([...seen].sort());
    const [sum] = await h.admin`select sum(deleted)::int as deleted, count(*)::int as steps from cleanup_steps where job_id = ${jobId}`;
    expect(sum).toEqual({ deleted: 400, steps: final.stepsDone });
  });

  it('a step that meets a held gate lock fails with AdmissionBusy and the same step number succeeds later', async () => {
    const { lib, jobId } = await prunable(30, 10);
    const holder = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let held!: () => void;
      const isHeld = new Promise<void>((r) => (held = r));
      const tx = holder.begin(async (sql) => {
        await sql`select id from libraries where id = ${lib} for share`;
        held();
        await released;
      });
      await isHeld;
      expect(await rejection(step(h.app, jobId, 1))).toBeInstanceOf(AdmissionBusy);
      expect((await status(h.app, jobId)).stepsDone).toBe(0);
      expect(await itemsIn(h.admin, lib)).toHaveLength(30);
      release();
      await tx;
      expect((await step(h.app, jobId, 1)).counts.deleted).toBe(20);
    } finally {
      await holder.end();
    }
  });

  it('scans at most a bounded window per step when long runs of seen items stand between candidates', async () => {
    const { jobId } = await prunable(2100, 2000);
    const first = await step(h.app, jobId, 1);
    // 1,024 rows read, all seen: the step keeps them, finds no candidate and moves the cursor on.
    expect(first.counts).toMatchObject({ visited: 0, kept: 1024, deleted: 0 });
    const results = await stepAll(h.app, jobId);
    expect(results.reduce((n, r) => n + r.counts.deleted, 0)).toBe(100);
  });
});

describe('step windows', () => {
  it('a window runs bounded steps back to back in one transaction, each recorded, and stops when the job completes', async () => {
    const { lib, seen, unseen, jobId } = await prunable(700, 300);
    const results = await stepWindow(h.app, jobId, 1, { maxSteps: 64, maxMs: 1000 });
    expect(results.map((r) => r.stepNo)).toEqual(results.map((_, i) => i + 1));
    for (const r of results) expect(r.counts.deleted).toBeLessThanOrEqual(128);
    expect(results.reduce((n, r) => n + r.counts.deleted, 0)).toBe(unseen.length);
    expect(results.at(-1)).toMatchObject({ done: true, phase: 'verify', stateAfter: 'completed' });
    expect(results.filter((r) => r.phase === 'items').length).toBeGreaterThan(1);
    const [recorded] = await h.admin<{ n: number }[]>`select count(*)::int as n from cleanup_steps where job_id = ${jobId}`;
    expect(recorded!.n).toBe(results.length);
    expect(await itemsIn(h.admin, lib)).toEqual(seen);
    expect(await admissionOf(h.admin, lib)).toBe('open');
    expect(await status(h.app, jobId)).toMatchObject({ state: 'completed', stepsDone: results.length });
  });

  it('stops at maxSteps; replaying a committed window returns its recorded results and deletes nothing', async () => {
    const { lib, jobId } = await prunable(600, 100);
    const first = await stepWindow(h.app, jobId, 1, { maxSteps: 2, maxMs: 1000 });
    expect(first.map((r) => [r.stepNo, r.replayed])).toEqual([[1, false], [2, false]]);
    const left = (await itemsIn(h.admin, lib)).length;
    const again = await stepWindow(h.app, jobId, 1, { maxSteps: 2, maxMs: 1000 });
    expect(again.map((r) => [r.stepNo, r.replayed])).toEqual([[1, true], [2, true]]);
    expect(again.map((r) => r.counts)).toEqual(first.map((r) => r.counts));
    expect((await itemsIn(h.admin, lib)).length).toBe(left);
    expect(await status(h.app, jobId)).toMatchObject({ stepsDone: 2, nextStep: 3 });
  });

  it('a contended window fails as a whole with AdmissionBusy: nothing deleted, nothing recorded', async () => {
    const { lib, items, jobId } = await prunable(400, 100);
    const writer = postgres(h.db.url, { max: 1, onnotice: () => {} });
    try {
      const error = await writer.begin(async (tx) => {
        // An admitted writer's shared lock on the library row: every step's NOWAIT fence fails.
        await tx`select 1 from libraries where id = ${lib} for share`;
        return rejection(stepWindow(h.app, jobId, 1, { maxSteps: 8, maxMs: 1000 }));
      });
      expect(error).toBeInstanceOf(AdmissionBusy);
    } finally {
      await writer.end();
    }
    expect(await itemsIn(h.admin, lib)).toHaveLength(items.length);
    expect(await status(h.app, jobId)).toMatchObject({ stepsDone: 0 });
  });

  it('refuses windows out of bounds', async () => {
    await expect(stepWindow(h.app, 1, 1, { maxSteps: 0, maxMs: 10 })).rejects.toThrow(RangeError);
    await expect(stepWindow(h.app, 1, 1, { maxSteps: 65, maxMs: 10 })).rejects.toThrow(RangeError);
    await expect(stepWindow(h.app, 1, 1, { maxSteps: 4, maxMs: 0 })).rejects.toThrow(RangeError);
  });
});
