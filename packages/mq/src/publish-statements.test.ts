import { describe, expect, it } from 'vitest';
import { PUBLISH_STATEMENT_BYTES, publishStatements } from './postgres-bus-transport.ts';

const message = (i: number) => ({ eventId: `e${i}`, routingKey: 'case.opened', body: `b${i}` });

describe('publishStatements', () => {
  it('keeps every message once and in order, each statement within the bound (or one message alone), none ended while the next message fitted', () => {
    // A fixed pseudo-random sequence: sizes from a few bytes to past the bound itself.
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 200; run++) {
      const count = 1 + Math.floor(next() * 60);
      const sizes = Array.from({ length: count }, () => (next() < 0.05 ? PUBLISH_STATEMENT_BYTES + 1 + Math.floor(next() * 1000) : 1 + Math.floor(next() * PUBLISH_STATEMENT_BYTES * 0.4)));
      const messages = sizes.map((_, i) => message(i));
      const parts = publishStatements(messages, sizes);
      expect(parts.flat()).toEqual(messages);
      let at = 0;
      for (const [p, part] of parts.entries()) {
        expect(part.length).toBeGreaterThan(0);
        const bytes = sizes.slice(at, at + part.length).reduce((a, b) => a + b, 0);
        if (part.length > 1) expect(bytes).toBeLessThanOrEqual(PUBLISH_STATEMENT_BYTES);
        at += part.length;
        if (p < parts.length - 1) expect(bytes + sizes[at]!).toBeGreaterThan(PUBLISH_STATEMENT_BYTES);
      }
    }
  });

  it('sends a call within the bound as one statement, and a message over it alone', () => {
    expect(publishStatements([message(0), message(1)], [10, 20])).toEqual([[message(0), message(1)]]);
    expect(publishStatements([message(0), message(1), message(2)], [10, PUBLISH_STATEMENT_BYTES + 1, 10])).toEqual([[message(0)], [message(1)], [message(2)]]);
    expect(publishStatements([message(0), message(1)], [PUBLISH_STATEMENT_BYTES - 10, 10])).toEqual([[message(0), message(1)]]);
    expect(publishStatements([message(0), message(1)], [PUBLISH_STATEMENT_BYTES - 10, 11])).toEqual([[message(0)], [message(1)]]);
  });
});
