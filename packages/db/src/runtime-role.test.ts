import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RuntimeRoleError } from './errors.ts';
import { assertRoleName, scramVerifier } from './runtime-role.ts';

describe('scramVerifier', () => {
  // RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
  const authMessage = [
    'n=user,r=rOprNGfwEbeRWgbNEkqO',
    'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  ].join(',');

  it('derives the stored and server keys of the RFC 7677 exchange', () => {
    const verifier = scramVerifier('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'));
    const match = /^SCRAM-SHA-256\$4096:([^$]+)\$([^:]+):(.+)$/.exec(verifier);
    expect(match?.[1]).toBe('W22ZaJ0SNY7soEsUEjb6gQ==');
    const storedKey = Buffer.from(match![2]!, 'base64');
    const serverKey = Buffer.from(match![3]!, 'base64');
    // The server proves itself with ServerKey …
    expect(createHmac('sha256', serverKey).update(authMessage).digest('base64')).toBe('6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    // … and checks the client's proof against StoredKey: H(proof XOR HMAC(StoredKey, auth)) = StoredKey.
    const proof = Buffer.from('dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=', 'base64');
    const signature = createHmac('sha256', storedKey).update(authMessage).digest();
    const clientKey = Buffer.from(proof.map((b, i) => b ^ signature[i]!));
    expect(createHash('sha256').update(clientKey).digest().equals(storedKey)).toBe(true);
  });

  it('salts every verifier afresh and never contains the password', () => {
    const a = scramVerifier('s3cret-password');
    expect(a).not.toBe(scramVerifier('s3cret-password'));
    expect(a).not.toContain('s3cret');
    expect(a).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
  });
});

describe('assertRoleName', () => {
  it.each(['craig_cases_app', 'craig_inventory_runtime', '_x'])('accepts %s', (name) => {
    expect(() => assertRoleName(name)).not.toThrow();
  });

  it.each(['Craig', 'craig-app', 'a"; drop role x; --', '', 'x'.repeat(64)])('refuses %j, naming it', (name) => {
    expect(() => assertRoleName(name)).toThrow(RuntimeRoleError);
    expect(() => assertRoleName(name)).toThrow(JSON.stringify(name));
  });
});
