import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually, startEmbeddedPostgres, testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDedicatedSession } from './dedicated-session.ts';
import { SessionLostError } from './errors.ts';

const KEY = 0x63726169_00ff00n;

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());

/** Whether any session holds the advisory lock, read from pg_locks (taking it would change it). */
async function held(key: bigint): Promise<boolean> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
    where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())
      and ((classid::bigint << 32) | objid::bigint) = ${key.toString()}::bigint and objsubid = 1`;
  return row!.n > 0;
}

/** Can another client take the lock right now? (It releases it again if so.) */
async function freeForOthers(key: bigint): Promise<boolean> {
  const other = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const [r] = await other<{ ok: boolean }[]>`select pg_try_advisory_lock(${key.toString()}::bigint) as ok`;
    if (r!.ok) await other`select pg_advisory_unlock(${key.toString()}::bigint)`;
    return r!.ok;
  } finally {
    await other.end();
  }
}

describe('the driver when its server dies under a connection (patches/postgres@3.4.9.patch)', () => {
  it('refuses the next query on the dead connection with CONNECTION_CLOSED instead of crashing the process', async () => {
    const server = await startEmbeddedPostgres();
    try {
      const fixture = fileURLToPath(new URL('../test/fixtures/reserved-after-crash.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, server.url], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      await eventually(() => expect(out).toContain('reserved'), { timeoutMs: 20_000, intervalMs: 50 });
      await server.crash();
      child.stdin.write('go\n');
      expect(await exited, out).toBe(0);
      expect(out).toContain('refused: CONNECTION_CLOSED');
      expect(out).toContain('survived');
      expect(out).not.toContain('TypeError');
      await server.restart();
    } finally {
      await server.stop();
    }
  }, 60_000);
});

describe('the driver when its server dies in the middle of a transaction (patches/postgres@3.4.9.patch)', () => {
  it('refuses the transaction and its late statement, and the one-connection client works again once the server is back', async () => {
    const server = await startEmbeddedPostgres();
    try {
      const fixture = fileURLToPath(new URL('../test/fixtures/transaction-after-crash.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, server.url], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      await eventually(() => expect(out).toContain('in-tx'), { timeoutMs: 20_000, intervalMs: 50 });
      await server.crash();
      child.stdin.write('gone\n');
      await eventually(() => expect(out).toContain('transaction: failed'), { timeoutMs: 20_000, intervalMs: 50 });
      child.stdin.write('sent\n');
      await eventually(() => expect(out).toContain('late statement refused'), { timeoutMs: 20_000, intervalMs: 50 });
      await server.restart();
      child.stdin.write('back\n');
      expect(await exited, out).toBe(0);
      // Without the patch's answer (no backpressure), the pool parked its only connection as busy for good.
      expect(out).toContain('after the restart: answered 3');
    } finally {
      await server.stop();
    }
  }, 90_000);
});

describe('withDedicatedSession', () => {
  it('frees the lock of a process killed mid-statement within the client check interval, not at the statement\'s end', async () => {
    const fixture = fileURLToPath(new URL('../test/fixtures/hold-lock-and-sleep.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db.url, KEY.toString()], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
      child.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
    });
    expect(await held(KEY)).toBe(true);
    // Killed while pg_sleep(60) runs: nothing of the client is left to cancel it.
    const killedAt = performance.now();
    child.kill('SIGKILL');
    // The server checks the client every second (client_connection_check_interval) and ends
    // the backend, which releases the lock; the statement alone would hold it for a minute.
    await eventually(async () => expect(await freeForOthers(KEY)).toBe(true), { timeoutMs: 10_000, intervalMs: 100 });
    expect(performance.now() - killedAt).toBeLessThan(10_000);
  }, 30_000);

  it('unlocks on the healthy path and closes the connection', async () => {
    const pid = await withDedicatedSession(
      db.url,
      async (s) => {
        expect(await s.tryAdvisoryLock(KEY)).toBe(true);
        expect(await freeForOthers(KEY)).toBe(false);
        return s.backendPid;
      },
      { service: 'test-healthy' },
    );
    expect(await held(KEY)).toBe(false);
    await eventually(async () => {
      const [r] = await db.sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`;
      expect(r!.n).toBe(0);
    });
  });

  it('a lock taken through it is free for another client right after fn throws', async () => {
    let pid = 0;
    await expect(
      withDedicatedSession(
        db.url,
        async (s) => {
          pid = s.backendPid;
          expect(await s.tryAdvisoryLock(KEY)).toBe(true);
          throw new Error('cycle failed midway');
        },
        { service: 'test-throw' },
      ),
    ).rejects.toThrow('cycle failed midway');
    // The socket is destroyed before the rejection; the backend's exit (which releases the
    // lock) completes on the server a moment later, so poll for it rather than racing it.
    await eventually(async () => expect(await freeForOthers(KEY)).toBe(true));
    await eventually(async () => {
      const [r] = await db.sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`;
      expect(r!.n).toBe(0);
    });
  });

  it('the same lock taken on a pooled connection strands (the bug this exists for)', async () => {
    const pool = postgres(db.url, { max: 2, onnotice: () => {} });
    try {
      const cycle = async () => {
        const [r] = await pool<{ ok: boolean }[]>`select pg_try_advisory_lock(${KEY.toString()}::bigint) as ok`;
        if (!r!.ok) return 'skipped';
        throw new Error('cycle failed midway'); // the unlock never runs; the connection goes back to the pool
      };
      await expect(cycle()).rejects.toThrow('cycle failed midway');
      // Give it every chance to be released: it is not, because the session lives on, idle.
      await expect(eventually(async () => expect(await freeForOthers(KEY)).toBe(true), { timeoutMs: 750 })).rejects.toThrow();
      expect(await held(KEY)).toBe(true);
      // Every other replica's try-lock now fails: retention has switched itself off.
      expect(await freeForOthers(KEY)).toBe(false);
    } finally {
      await pool.end();
    }
    await eventually(async () => expect(await held(KEY)).toBe(false));
  });

  it('closes the connection when the caller aborts, and fn sees the signal', async () => {
    const controller = new AbortController();
    const result = withDedicatedSession(
      db.url,
      async (s) => {
        await s.tryAdvisoryLock(KEY);
        controller.abort(new Error('shutdown'));
        expect(s.signal.aborted).toBe(true);
        s.throwIfAborted();
        return 'not reached';
      },
      { service: 'test-abort', signal: controller.signal },
    );
    await expect(result).rejects.toThrow('shutdown');
    await eventually(async () => expect(await freeForOthers(KEY)).toBe(true));
  });

  it('refuses to start on an already aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already stopping'));
    let ran = false;
    await expect(
      withDedicatedSession(
        db.url,
        () => {
          ran = true;
          return Promise.resolve();
        },
        { service: 'test', signal: controller.signal },
      ),
    ).rejects.toThrow('already stopping');
    expect(ran).toBe(false);
  });

  it('never reconnects after losing its connection: the signal says so and queries fail', async () => {
    await expect(
      withDedicatedSession(
        db.url,
        async (s) => {
          expect(await s.tryAdvisoryLock(KEY)).toBe(true);
          await db.sql`select pg_terminate_backend(${s.backendPid})`;
          await eventually(() => expect(s.signal.aborted).toBe(true));
          expect(s.signal.reason).toBeInstanceOf(SessionLostError);
          // A reconnecting client would run this without the lock.
          await expect(s.sql`select 1`).rejects.toThrow();
          s.throwIfAborted();
        },
        { service: 'test-lost' },
      ),
    ).rejects.toBeInstanceOf(SessionLostError);
    expect(await freeForOthers(KEY)).toBe(true);
  });

  it('advisoryLock waits for the holder and gives up after its timeout', async () => {
    const holder = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await holder`select pg_advisory_lock(${KEY.toString()}::bigint)`;
      await expect(withDedicatedSession(db.url, (s) => s.advisoryLock(KEY, 100), { service: 'test-wait' })).rejects.toMatchObject({ code: '55P03' });
      // postgres.js queries are lazy: .execute() sends it without awaiting.
      setTimeout(() => void holder`select pg_advisory_unlock(${KEY.toString()}::bigint)`.execute(), 100);
      await withDedicatedSession(db.url, (s) => s.advisoryLock(KEY, 5000), { service: 'test-wait' });
    } finally {
      await holder.end();
    }
    expect(await held(KEY)).toBe(false);
  });
});
