import { describe, expect, it } from 'vitest';
import { ArchiveSpecError } from './errors.ts';
import { checkSpecOrder, DEFAULT_ARCHIVE_BATCH, defineArchiveSpec, fixpoints, type ArchiveSpecInput } from './spec.ts';

const base: ArchiveSpecInput = { table: 'audit_log', keyColumn: 'id', timestampColumn: 'created_at', fixpoint: fixpoints.insertOnly() };

function problem(input: ArchiveSpecInput): string {
  try {
    defineArchiveSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ArchiveSpecError);
    expect(error).toMatchObject({ code: 'archive_spec_invalid', table: input.table });
    return (error as Error).message;
  }
  throw new Error('expected the spec to be refused');
}

describe('defineArchiveSpec', () => {
  it('fills defaults and freezes the spec', () => {
    const spec = defineArchiveSpec(base);
    expect(spec).toMatchObject({ batchSize: DEFAULT_ARCHIVE_BATCH, guards: [], mutableColumns: [] });
    expect(Object.isFrozen(spec)).toBe(true);
    expect(Object.isFrozen(spec.guards)).toBe(true);
  });

  it('accepts only plain identifiers (they become SQL identifiers)', () => {
    expect(problem({ ...base, table: 'audit_log; drop table x' })).toMatch(/table="audit_log; drop table x" must be a plain lower-case SQL identifier/);
    expect(problem({ ...base, keyColumn: 'Id' })).toMatch(/keyColumn="Id"/);
    expect(problem({ ...base, guards: [{ table: 'child', column: 'parent id' }] })).toMatch(/guards\[0\]\.column/);
  });

  it('knows exactly three fixpoint variants', () => {
    expect(defineArchiveSpec({ ...base, fixpoint: fixpoints.terminalStatus('status', ['done']) }).fixpoint).toEqual({ kind: 'terminal_status', column: 'status', values: ['done'] });
    expect(defineArchiveSpec({ ...base, fixpoint: fixpoints.terminalQuiescent('status', ['completed'], { since: 'as_of', months: 12 }) }).fixpoint).toEqual({
      kind: 'terminal_quiescent',
      column: 'status',
      values: ['completed'],
      since: 'as_of',
      months: 12,
    });
    expect(problem({ ...base, fixpoint: { kind: 'whenever' } as never })).toMatch(/fixpoint\.kind="whenever" must be insert_only, terminal_status or terminal_quiescent/);
    expect(problem({ ...base, fixpoint: fixpoints.terminalStatus('status', []) })).toMatch(/non-empty list of terminal values/);
    expect(problem({ ...base, fixpoint: fixpoints.terminalQuiescent('status', ['done'], { since: 'as_of', months: 0 }) })).toMatch(/fixpoint\.months=0/);
  });

  it('checks the numbers', () => {
    expect(problem({ ...base, batchSize: 0 })).toMatch(/batchSize=0/);
    expect(problem({ ...base, batchSize: 1.5 })).toMatch(/batchSize=1\.5/);
    expect(problem({ ...base, hotWindowDays: -1 })).toMatch(/hotWindowDays=-1/);
  });

  describe('precondition 4: every column that may change on a terminal row is protected', () => {
    const terminal = { ...base, fixpoint: fixpoints.terminalQuiescent('status', ['completed'], { since: 'as_of', months: 12 }) };

    it('by the fixpoint predicate, when the predicate reads it', () => {
      expect(defineArchiveSpec({ ...terminal, mutableColumns: [{ column: 'status', protectedBy: 'fixpoint' }, { column: 'as_of', protectedBy: 'fixpoint' }] }).mutableColumns).toHaveLength(2);
      expect(problem({ ...terminal, mutableColumns: [{ column: 'invalidated_at', protectedBy: 'fixpoint' }] })).toMatch(
        /mutableColumns\[0\]\.column="invalidated_at" is not read by the terminal_quiescent fixpoint predicate: protect it with a named writer-side in-WHERE refusal/,
      );
      expect(problem({ ...base, mutableColumns: [{ column: 'note', protectedBy: 'fixpoint' }] })).toMatch(/not read by the insert_only fixpoint/);
    });

    it('or by a named writer-side refusal', () => {
      const spec = defineArchiveSpec({ ...terminal, mutableColumns: [{ column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: 'fork-2 freshness no-op' }] });
      expect(spec.mutableColumns[0]).toEqual({ column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: 'fork-2 freshness no-op' });
      expect(problem({ ...terminal, mutableColumns: [{ column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: ' ' }] })).toMatch(/must name the writer-side refusal/);
      expect(problem({ ...terminal, mutableColumns: [{ column: 'invalidated_at', protectedBy: 'hope' } as never] })).toMatch(/protectedBy="hope"/);
    });

    it('and the key and timestamp never change', () => {
      expect(problem({ ...terminal, mutableColumns: [{ column: 'created_at', protectedBy: 'writer_refusal', refusal: 'x' }] })).toMatch(/key or timestamp column/);
      expect(problem({ ...terminal, mutableColumns: [{ column: 'status', protectedBy: 'fixpoint' }, { column: 'status', protectedBy: 'fixpoint' }] })).toMatch(/declared twice/);
    });
  });
});

describe('checkSpecOrder', () => {
  const child = defineArchiveSpec({ ...base, table: 'child' });
  const parent = defineArchiveSpec({ ...base, table: 'parent', guards: [{ table: 'child', column: 'parent_id' }] });

  it('accepts dependents first and refuses parents first', () => {
    expect(() => checkSpecOrder([child, parent])).not.toThrow();
    expect(() => checkSpecOrder([parent, child])).toThrow(/guards="child" is archived after parent/);
  });

  it('accepts a guard on a table no spec archives, and a self-reference', () => {
    const self = defineArchiveSpec({ ...base, table: 'tree', guards: [{ table: 'tree', column: 'parent_id' }, { table: 'elsewhere', column: 'tree_id' }] });
    expect(() => checkSpecOrder([self])).not.toThrow();
  });

  it('refuses two specs for one table', () => {
    expect(() => checkSpecOrder([child, child])).toThrow(/two specs in one engine/);
  });
});
