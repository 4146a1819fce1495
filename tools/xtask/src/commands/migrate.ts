import { migrate } from '@craig/db';
import pino from 'pino';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { knownServiceNames, loadToolSettings, migrationSetsOf, serviceEntry } from '../services.ts';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: "apply a service's migrations (platform sets, then its own) to its database",
  usage: `pnpm xtask migrate <service>

Reads CRAIG_<SERVICE>__DATABASE_URL from the environment (and inventory's
CLEANUP_ALLOWED_DATABASES; the admin token, HTTP and transport settings are not needed) and
applies every pending migration, set by set, each in its own transaction. Refuses to start
when an applied migration was edited or removed.`,
  async run(ctx) {
    const { positionals } = parseArgs(ctx.argv, {});
    const [name, ...extra] = positionals;
    if (!name || extra.length > 0) throw new UsageError('expected exactly one service name');
    const entry = serviceEntry(name);
    if (!entry) throw new UsageError(`unknown service "${name}" (known: ${knownServiceNames().join(', ')})`);
    const settings = loadToolSettings(entry, ctx.env);
    const logger = pino({ level: 'silent' });
    const sets = migrationSetsOf(entry, settings);
    const report = await migrate(settings.databaseUrl, sets, { service: `${name}:xtask`, logger, signal: ctx.signal });
    for (const m of report.applied) writeLine(ctx.stdout, `applied ${m.set}/${String(m.version).padStart(6, '0')}_${m.name} (${m.ms} ms)`);
    writeLine(ctx.stdout, `${name}: ${report.applied.length} applied, ${report.alreadyApplied} already applied (sets: ${sets.map((s) => s.name).join(', ') || 'none'})`);
    return 0;
  },
};
