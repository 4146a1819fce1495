import { describe, expect, it } from 'vitest';
import { isUuidv7, uuidv7, uuidv7Time } from './uuidv7.ts';

describe('uuidv7', () => {
  it('is version 7, RFC variant, the creation millisecond up front', () => {
    const id = uuidv7(1_700_000_000_123, new Uint8Array(10).fill(0xff));
    expect(id).toBe('018bcfe5-687b-7fff-bfff-ffffffffffff');
    expect(isUuidv7(id)).toBe(true);
    expect(uuidv7Time(id)).toBe(1_700_000_000_123);
    expect(isUuidv7('6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(false); // v1
    // Each random bit lands where RFC 9562 puts it; the version and variant bits are forced.
    expect(uuidv7(0, Uint8Array.from([0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23]))).toBe('00000000-0000-7234-9678-9abcdef00123');
  });

  it('draws fresh random bits without given ones, keeping version 7 and the RFC variant', () => {
    const ids = Array.from({ length: 2000 }, () => uuidv7(1_700_000_000_123));
    for (const id of ids) {
      expect(isUuidv7(id), id).toBe(true);
      expect(uuidv7Time(id)).toBe(1_700_000_000_123);
    }
    expect(new Set(ids).size).toBe(2000);
    // All four variant values (8, 9, a, b) and every hex digit in the random tail turn up.
    expect(new Set(ids.map((id) => id[19])).size).toBe(4);
    expect(new Set(ids.flatMap((id) => [...id.slice(24)])).size).toBe(16);
  });

  it('is unique and sorts by creation time', () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(1000);
    expect(uuidv7(2_000) > uuidv7(1_000)).toBe(true);
    expect(() => uuidv7(-1)).toThrow(RangeError);
  });
});
