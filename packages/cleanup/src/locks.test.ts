import { readFile } from 'node:fs/promises';
import { LOCK_KEYS } from '@craig/db';
import { describe, expect, it } from 'vitest';
import { CLEANUP_MIGRATIONS_DIRECTORY } from './install.ts';

describe('the coordinator lock key', () => {
  it('the schema takes and checks the two-int key registered in LOCK_KEYS', async () => {
    const classId = Number(LOCK_KEYS.cleanupServerCoordinator & 0xffff_ffffn);
    expect(classId).toBe(0x0302);
    const sql = await readFile(new URL('000003_admission.sql', CLEANUP_MIGRATIONS_DIRECTORY), 'utf8');
    expect(sql).toContain(`pg_advisory_xact_lock(${classId}, p_server_id)`);
    expect(sql).toContain(`classid = ${classId} and objid = p_server_id and objsubid = 2`);
  });
});
