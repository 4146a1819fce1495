import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';
import { BEGIN_MARKER, END_MARKER } from './security.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('pnpm xtask security', () => {
  // Each run prepares eight scratch databases: slow on a loaded machine.
  it('--check agrees with the committed docs/security.md', { timeout: 180_000 }, async () => {
    const out = capture();
    expect(await runXtask(['security', '--check'], { root: ROOT, stdout: out, stderr: out })).toBe(0);
    expect(out.text()).toContain('up to date');
  });

  it('rewrites only the generated section, and --check fails on a stale one', { timeout: 180_000 }, async () => {
    const root = await mkdtemp(join(tmpdir(), 'craig-security-doc-'));
    dirs.push(root);
    await mkdir(join(root, 'docs'));
    const path = join(root, 'docs/security.md');
    await writeFile(path, `# hand-written\n\n${BEGIN_MARKER}\nstale\n${END_MARKER}\n\nafter, by hand\n`);
    const stderr = capture();
    expect(await runXtask(['security', '--check'], { root, stderr })).toBe(1);
    expect(stderr.text()).toContain('stale');
    expect(await runXtask(['security'], { root, stdout: capture() })).toBe(0);
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('# hand-written\n\n')).toBe(true);
    expect(text.endsWith(`${END_MARKER}\n\nafter, by hand\n`)).toBe(true);
    expect(text).toContain('### security: `craig_security_app`');
    expect(text).toContain('| `audit_log` | ✓ | ✓ | — | — | — | — | — | no |');
    // The same section as the committed document's.
    const committed = await readFile(join(ROOT, 'docs/security.md'), 'utf8');
    const section = (t: string) => t.slice(t.indexOf(BEGIN_MARKER), t.indexOf(END_MARKER));
    expect(section(text)).toBe(section(committed));
  });
});
