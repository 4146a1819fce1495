import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { perRegistry } from './metrics.ts';

describe('perRegistry', () => {
  it('creates once per registry (a second registration would throw) and separately for another registry', async () => {
    let made = 0;
    const counter = perRegistry((registry) => {
      made++;
      return new Counter({ name: 'lab_total', help: 'lab', registers: [registry] });
    });
    const a = new Registry();
    const b = new Registry();
    expect(counter(a)).toBe(counter(a));
    expect(counter(b)).not.toBe(counter(a));
    expect(made).toBe(2);
    counter(a).inc(3);
    expect(await a.getSingleMetricAsString('lab_total')).toContain('lab_total 3');
    expect(await b.getSingleMetricAsString('lab_total')).toContain('lab_total 0');
  });
});
