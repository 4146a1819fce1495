import { randomUUID } from 'node:crypto';

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, version 7, 74 random bits.
 *
 * - Event ids (`stageEvent`'s default): they rise with time, so the outbox's unique `event_id`
 *   index, and every inbox's, takes each new entry next to the last one instead of on a random
 *   leaf page (docs/adr/082-time-ordered-event-ids.md).
 * - Archive ids: they sort by creation time, and a fresh id per batch means an archive key is
 *   never legitimately reused: an occupant at a new key is foreign by definition.
 */
export function uuidv7(now: number = Date.now(), random?: Uint8Array): string {
  if (!Number.isInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError(`uuidv7 timestamp out of range: ${now}`);
  const t = now.toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8)}-7${random === undefined ? randomUUID().slice(15) : tailOf(random)}`;
}

/**
 * The id after its version digit, `xxx-Vxxx-xxxxxxxxxxxx`, from 10 given random bytes. Without
 * them uuidv7 takes randomUUID's own: its 122 random bits come from Node's cached entropy pool, no
 * system call per id (randomBytes(10) made each id cost ~4 µs, that ~1 µs), and its variant
 * nibble is already RFC 9562's.
 */
function tailOf(random: Uint8Array): string {
  if (random.length < 10) throw new RangeError('uuidv7 needs 10 random bytes');
  const r = Buffer.from(random.buffer, random.byteOffset, 10).toString('hex');
  const variant = ((parseInt(r[4]!, 16) & 0x3) | 0x8).toString(16);
  return `${r.slice(1, 4)}-${variant}${r.slice(5, 8)}-${r.slice(8)}`;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isUuidv7(value: string): boolean {
  return UUID_V7.test(value);
}

/** The millisecond timestamp a UUIDv7 carries. */
export function uuidv7Time(id: string): number {
  return parseInt(id.replaceAll('-', '').slice(0, 12), 16);
}
