import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ArchiveRunner } from './runner.ts';

describe('ArchiveRunner', () => {
  it('refuses a cadence that is not a whole number of minutes, naming it', () => {
    const engine = { service: 'lab' } as ConstructorParameters<typeof ArchiveRunner>[0]['engine'];
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => new ArchiveRunner({ engine, everyMinutes: bad, registry: new Registry() })).toThrow(`everyMinutes must be a whole number ≥ 1: ${bad}`);
    }
  });
});
