import { createHash } from 'node:crypto';

/** SHA-256 of the bytes, lower-case hex (what the archive ledger records). */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Hex SHA-256 → the base64 form S3's `x-amz-checksum-sha256` carries. */
export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

export function isSha256Hex(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}
