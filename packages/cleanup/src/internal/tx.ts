import type { Sql, TransactionSql } from '@craig/db';
import { InvalidJobRequest } from '../errors.ts';
import { translatePgError } from './translate.ts';

/** Bounds of one protocol transaction: no statement and no lock wait runs longer than these. */
export const PROTOCOL_STATEMENT_TIMEOUT_MS = 10_000;
export const PROTOCOL_LOCK_TIMEOUT_MS = 2_000;

/**
 * One protocol transaction with bounded statements and lock waits. Errors raised by the
 * admission triggers or a NOWAIT gate lock come out typed; every failed transaction is atomic.
 */
export async function protocolTx<T>(sql: Sql, fn: (tx: TransactionSql) => Promise<T>): Promise<T> {
  try {
    return (await sql.begin(async (tx) => {
      await tx`select set_config('statement_timeout', ${String(PROTOCOL_STATEMENT_TIMEOUT_MS)}, true), set_config('lock_timeout', ${String(PROTOCOL_LOCK_TIMEOUT_MS)}, true)`;
      return fn(tx);
    })) as T;
  } catch (error) {
    throw translatePgError(error);
  }
}

/**
 * The first locks of the protocol's order: the source table, then the server's coordinator
 * lock. Every transaction that fences, deletes or changes a job takes them in this order.
 */
export async function lockSourceAndCoordinator(tx: TransactionSql, serverId: number): Promise<void> {
  await tx`lock table items in row exclusive mode`;
  await tx`select cleanup_lock_coordinator(${serverId}::int)`;
}

/** An id the database can hold: a positive safe integer. */
export function assertId(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidJobRequest(`${field} must be a positive integer, got ${JSON.stringify(value) ?? String(value)}`, field, value);
  }
}

/** Server ids are `integer` (they key the two-int coordinator lock). */
export function assertServerId(value: unknown): asserts value is number {
  assertId('serverId', value);
  if (value > 2_147_483_647) throw new InvalidJobRequest(`serverId must be at most 2147483647, got ${value}`, 'serverId', value);
}
