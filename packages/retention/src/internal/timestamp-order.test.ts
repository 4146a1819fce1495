import { describe, expect, it } from 'vitest';
import { timestampOrder } from './batch-sql.ts';

describe('timestampOrder (oldest/newest row of a batch, from PostgreSQL text in UTC)', () => {
  it('sorts like the timestamps', () => {
    const inOrder = [
      '-infinity',
      '0044-03-15 00:00:00+00 BC',
      '0001-01-01 00:00:00+00',
      '1999-12-31 23:59:59.999999+00',
      '2024-03-01 12:00:05+00',
      '2024-03-01 12:00:05.000001+00',
      '2024-03-01 12:00:05.25+00',
      '2024-03-01 12:00:05.5+00',
      '2024-03-01 12:00:06+00',
      '9999-12-31 23:59:59+00',
      '10000-01-01 00:00:00+00',
      'infinity',
    ];
    const shuffled = [...inOrder].reverse();
    expect(shuffled.sort((a, b) => (timestampOrder(a) < timestampOrder(b) ? -1 : 1))).toEqual(inOrder);
  });
});
