import { describe, expect, it } from 'vitest';
import { InvalidEventError } from './errors.ts';
import { defineEventCatalog, subscriptionGraph } from './event-catalog.ts';

describe('defineEventCatalog', () => {
  const cases = defineEventCatalog({ service: 'cases', publishes: ['case.opened', 'case.closed'] });

  it('hands out declared event types and consumers, and refuses undeclared ones by name', () => {
    expect(cases.type('case.opened')).toBe('case.opened');
    // @ts-expect-error: not declared, refused at compile time and at run time
    expect(() => cases.type('case.reopened')).toThrow(/eventType is not an event type cases declares \(case\.opened, case\.closed\) \(got "case\.reopened"\)/);
    const placements = defineEventCatalog({ service: 'placements', publishes: ['placement.started'], consumes: [{ consumer: 'placements.cases', patterns: ['case.*'] }] });
    expect(placements.consumer('placements.cases')).toEqual({ consumer: 'placements.cases', patterns: ['case.*'] });
    // @ts-expect-error: not declared
    expect(() => placements.consumer('placements.other')).toThrow(InvalidEventError);
    expect(Object.isFrozen(placements.consumes[0]!.patterns)).toBe(true);
  });

  it('refuses what is not an event type, a pattern or a consumer name, and duplicates', () => {
    expect(() => defineEventCatalog({ service: 's', publishes: ['case.*'] })).toThrow(InvalidEventError);
    expect(() => defineEventCatalog({ service: 's', publishes: ['a.b', 'a.b'] })).toThrow(/twice/);
    expect(() => defineEventCatalog({ service: 's', publishes: [], consumes: [{ consumer: 'Bad Name', patterns: ['#'] }] })).toThrow(InvalidEventError);
    expect(() => defineEventCatalog({ service: 's', publishes: [], consumes: [{ consumer: 's.c', patterns: ['a..b'] }] })).toThrow(InvalidEventError);
    expect(() => defineEventCatalog({ service: 's', publishes: [], consumes: [{ consumer: 's.c', patterns: [] }] })).toThrow(/at least one pattern/);
  });
});

describe('subscriptionGraph', () => {
  it('matches every consumer pattern against every service’s types, itself included', () => {
    const catalogs = [
      defineEventCatalog({ service: 'cases', publishes: ['case.opened', 'case.closed'] }),
      defineEventCatalog({ service: 'exchange', publishes: [], consumes: [{ consumer: 'exchange.cases', patterns: ['case.opened'] }] }),
      defineEventCatalog({ service: 'security', publishes: ['security.archive.batch'], consumes: [{ consumer: 'security.audit', patterns: ['#'] }] }),
      defineEventCatalog({ service: 'rules', publishes: ['rule.evaluated'], consumes: [{ consumer: 'rules.evaluate', patterns: ['case.*', 'safety.*'] }] }),
    ];
    expect(subscriptionGraph(catalogs)).toEqual([
      { producer: 'cases', consumer: 'exchange', subscription: 'exchange.cases', eventTypes: ['case.opened'] },
      { producer: 'cases', consumer: 'security', subscription: 'security.audit', eventTypes: ['case.opened', 'case.closed'] },
      { producer: 'cases', consumer: 'rules', subscription: 'rules.evaluate', eventTypes: ['case.opened', 'case.closed'] },
      { producer: 'security', consumer: 'security', subscription: 'security.audit', eventTypes: ['security.archive.batch'] },
      { producer: 'rules', consumer: 'security', subscription: 'security.audit', eventTypes: ['rule.evaluated'] },
    ]);
  });
});
