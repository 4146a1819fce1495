import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { migrate } from '@craig/db';
import { SERVICE_NAMES } from '@craig/settings';
import { testDatabase } from '@craig/testkit';
import { parseArgs, writeLine, type Command } from '../command.ts';
import { renderPrivileges } from '../schema/privileges.ts';
import { migrationSetsOf, serviceEntry } from '../services.ts';
import { scratchSettings } from './schema.ts';

export const BEGIN_MARKER = '<!-- BEGIN GENERATED: runtime roles (`pnpm xtask security`; do not edit by hand, CI runs `--check`) -->';
export const END_MARKER = '<!-- END GENERATED: runtime roles -->';

export const securityCommand: Command = {
  name: 'security',
  summary: "write each service's runtime role and its grants, from the catalog, into docs/security.md (--check: fail when stale)",
  usage: `pnpm xtask security [--check]

Migrates a scratch database per service as its owner, with the service's runtime role (its
default RUNTIME_ROLE) created and granted as boot and \`pnpm xtask migrate\` do, and renders
what the server says that role may do (every table's privileges, column-level UPDATE, the
sequences, the SECURITY DEFINER functions and who may call them) into docs/security.md between
its generated-section markers. Everything outside the markers is written by hand. With --check,
writes nothing and exits 1 when the section is stale.`,
  async run(ctx) {
    const { flags } = parseArgs(ctx.argv, { flags: ['check'] });
    const path = join(ctx.root, 'docs/security.md');
    const current = await readFile(path, 'utf8').catch(() => '');
    const begin = current.indexOf(BEGIN_MARKER);
    const end = current.indexOf(END_MARKER);
    if (begin < 0 || end < begin) {
      writeLine(ctx.stderr, `docs/security.md has no generated section: add the lines\n${BEGIN_MARKER}\n${END_MARKER}`);
      return 1;
    }
    const generated = `${BEGIN_MARKER}\n\n${await renderRuntimeRoles()}\n${END_MARKER}`;
    const next = current.slice(0, begin) + generated + current.slice(end + END_MARKER.length);
    if (flags.has('check')) {
      if (next !== current) {
        writeLine(ctx.stderr, 'docs/security.md: the runtime roles section is stale: run `pnpm xtask security` and commit the result');
        return 1;
      }
      writeLine(ctx.stdout, 'docs/security.md: the runtime roles section is up to date');
      return 0;
    }
    await writeFile(path, next);
    writeLine(ctx.stdout, `wrote ${path}`);
    return 0;
  },
};

/** Every built-in service's runtime role and grants, as the catalog of a freshly prepared database shows them. */
export async function renderRuntimeRoles(): Promise<string> {
  const parts: string[] = [];
  for (const name of SERVICE_NAMES) {
    const entry = serviceEntry(name)!;
    const db = await testDatabase({ prefix: 'craig_security' });
    try {
      const settings = scratchSettings(entry, db);
      const sets = migrationSetsOf(entry, settings);
      await migrate(db.url, sets, { service: 'xtask-security', runtime: { role: settings.runtimeRole } });
      parts.push(`### ${name}: \`${settings.runtimeRole}\`\n\nSets: ${sets.map((s) => `\`${s.name}\``).join(', ')}.\n\n${await renderPrivileges(db.sql, settings.runtimeRole)}`);
    } finally {
      await db.drop();
    }
  }
  return parts.join('\n');
}
