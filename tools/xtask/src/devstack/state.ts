// `<state-dir>/state.json`: what the devstack remembers between runs (the admin token, the
// runtime logins' password, which databases already got their aged history).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface DevstackState {
  adminToken?: string;
  /** The password of the services' runtime logins on the devstack's server. */
  runtimePassword?: string;
  /** By `host:port/database`: the database's oid when it was seeded, so a recreated one is seeded again. */
  seeded: Record<string, { oid: number; at: string; rows: number }>;
  /** By the same key: databases the devstack created (their oid); only these are seeded. */
  created: Record<string, number>;
}

const file = (dir: string) => join(dir, 'state.json');

export async function loadState(dir: string): Promise<DevstackState> {
  try {
    const parsed = JSON.parse(await readFile(file(dir), 'utf8')) as Partial<DevstackState>;
    return { ...parsed, seeded: parsed.seeded ?? {}, created: parsed.created ?? {} };
  } catch {
    return { seeded: {}, created: {} };
  }
}

export async function saveState(dir: string, state: DevstackState): Promise<void> {
  await writeFile(file(dir), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/**
 * The key of a database in `seeded`: `host:port/database`, or `embedded/database` for the
 * embedded cluster, which listens on a new free port every run.
 */
export function databaseKey(url: string, embedded: boolean): string {
  const u = new URL(url);
  return `${embedded ? 'embedded' : `${u.hostname}:${u.port || '5432'}`}${u.pathname}`;
}
