import { freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from './client.ts';
import { classifyPgError } from './errors.ts';

describe('classifyPgError against real PostgreSQL errors', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
    await db.sql`create table t (id int primary key, n int check (n >= 0))`;
    await db.sql`insert into t values (1, 1), (2, 2)`;
  });
  afterAll(() => db.drop());

  const caught = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (error) {
      return error;
    }
    throw new Error('expected a failure');
  };

  it('unique violation', async () => {
    expect(classifyPgError(await caught(db.sql`insert into t values (1, 1)`))).toEqual({ kind: 'unique_violation', retryable: false, code: '23505' });
  });

  it('check violation', async () => {
    expect(classifyPgError(await caught(db.sql`insert into t values (3, -1)`)).kind).toBe('check_violation');
  });

  it('lock not available (NOWAIT) is retryable', async () => {
    const other = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const error = await db.sql.begin(async (tx) => {
        await tx`select * from t where id = 1 for update`;
        return caught(other`select * from t where id = 1 for update nowait`);
      });
      expect(classifyPgError(error)).toEqual({ kind: 'lock_not_available', retryable: true, code: '55P03' });
    } finally {
      await other.end();
    }
  });

  it('statement timeout is a retryable timeout', async () => {
    const sql = createClient(db.url, { service: 'test', max: 1, statementTimeoutMs: 50 });
    try {
      expect(classifyPgError(await caught(sql`select pg_sleep(1)`))).toEqual({ kind: 'timeout', retryable: true, code: '57014' });
    } finally {
      await sql.end();
    }
  });

  it('deadlock is retryable', async () => {
    const a = postgres(db.url, { max: 1, onnotice: () => {} });
    const b = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const results = await Promise.allSettled([
        a.begin(async (tx) => {
          await tx`update t set n = n + 1 where id = 1`;
          await tx`select pg_sleep(0.2)`;
          await tx`update t set n = n + 1 where id = 2`;
        }),
        b.begin(async (tx) => {
          await tx`update t set n = n + 1 where id = 2`;
          await tx`select pg_sleep(0.2)`;
          await tx`update t set n = n + 1 where id = 1`;
        }),
      ]);
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(failed).toHaveLength(1);
      expect(classifyPgError(failed[0]!.reason)).toEqual({ kind: 'deadlock', retryable: true, code: '40P01' });
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('a refused connection is a retryable connection error', async () => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${await freePort()}/x`, { max: 1, connect_timeout: 2 });
    try {
      expect(classifyPgError(await caught(sql`select 1`))).toMatchObject({ kind: 'connection', retryable: true });
    } finally {
      await sql.end({ timeout: 0 });
    }
  });

  it('anything else is not retryable', () => {
    expect(classifyPgError(new Error('boom'))).toEqual({ kind: 'other', retryable: false, code: undefined });
    expect(classifyPgError({ code: '42P01' })).toEqual({ kind: 'other', retryable: false, code: '42P01' });
    expect(classifyPgError({ code: '40001' })).toEqual({ kind: 'serialization', retryable: true, code: '40001' });
    expect(classifyPgError({ code: '08006' }).kind).toBe('connection');
  });
});
