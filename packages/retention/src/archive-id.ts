import { randomBytes } from 'node:crypto';

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, version 7, 74 random bits. Archive ids
 * sort by creation time, and a fresh id per batch means an archive key is never legitimately
 * reused: an occupant at a new key is foreign by definition.
 */
export function uuidv7(now: number = Date.now(), random: Uint8Array = randomBytes(10)): string {
  if (!Number.isInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError(`uuidv7 timestamp out of range: ${now}`);
  if (random.length < 10) throw new RangeError('uuidv7 needs 10 random bytes');
  const b = Buffer.alloc(16);
  b.writeUIntBE(now, 0, 6);
  Buffer.from(random.buffer, random.byteOffset, 10).copy(b, 6);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isUuidv7(value: string): boolean {
  return UUID_V7.test(value);
}

/** The millisecond timestamp a UUIDv7 carries. */
export function uuidv7Time(id: string): number {
  return parseInt(id.replaceAll('-', '').slice(0, 12), 16);
}
