// Headless Chromium for the tests that look at a page: Debian's package at /usr/bin/chromium
// (CI installs it; nothing ever downloads a browser), driven by playwright-core, with the flags
// this machine's closed network needs and a fresh profile directory per launch.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A browser context on a fresh profile; `close()` ends the browser and removes the profile. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  // A missing browser fails the test, loudly: it is never a reason to skip.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium; .ci/run does)`);
  const profile = await mkdtemp(join(tmpdir(), 'craig-chromium-'));
  // launchPersistentContext takes the profile directory as --user-data-dir (launch() would make its own).
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1400, height: 900 } });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Width and height from a PNG's IHDR chunk (throws when the bytes are not a PNG). */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.subarray(0, 8).toString('hex') !== '89504e470d0a1a0a' || png.subarray(12, 16).toString('latin1') !== 'IHDR') throw new Error('not a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}
