import { prepareServiceDatabase } from '@craig/service';
import pino from 'pino';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { knownServiceNames, loadToolSettings, migrationSetsOf, serviceEntry } from '../services.ts';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: "apply a service's migrations as its owner and create or update its runtime role with exactly its grants",
  usage: `pnpm xtask migrate <service>

Reads the service's database settings from the environment, as the service does (and
inventory's CLEANUP_ALLOWED_DATABASES; the admin token, HTTP and transport settings are not
needed). As the migration login
(CRAIG_<SERVICE>__MIGRATION_DATABASE_URL, else DATABASE_URL's login) it applies every pending
migration, set by set, each in its own transaction, and refuses to start when an applied
migration was edited or removed. Then it creates or updates the runtime login role
(CRAIG_<SERVICE>__RUNTIME_ROLE, default craig_<service>_app: LOGIN, no superuser, createdb,
createrole, replication or bypassrls, a member of no role; its password set from
DATABASE_URL's when DATABASE_URL logs in as it) and grants it exactly what the service's code
paths need in this database, revoking anything else it held. Re-runnable: a second run changes
nothing but the password. See docs/security.md.`,
  async run(ctx) {
    const { positionals } = parseArgs(ctx.argv, {});
    const [name, ...extra] = positionals;
    if (!name || extra.length > 0) throw new UsageError('expected exactly one service name');
    const entry = serviceEntry(name);
    if (!entry) throw new UsageError(`unknown service "${name}" (known: ${knownServiceNames().join(', ')})`);
    const settings = loadToolSettings(entry, ctx.env);
    const logger = pino({ level: 'silent' });
    const sets = migrationSetsOf(entry, settings);
    const { report, poolRole } = await prepareServiceDatabase(settings, sets, { service: `${name}:xtask`, logger, signal: ctx.signal, resetPassword: true });
    for (const m of report.applied) writeLine(ctx.stdout, `applied ${m.set}/${String(m.version).padStart(6, '0')}_${m.name} (${m.ms} ms)`);
    writeLine(ctx.stdout, `${name}: ${report.applied.length} applied, ${report.alreadyApplied} already applied (sets: ${sets.map((s) => s.name).join(', ') || 'none'})`);
    const runtime = report.runtime!;
    const changes = [runtime.role.created ? 'created' : 'exists', ...runtime.role.altered.map((a) => `set ${a}`), ...(runtime.role.passwordSet ? ['password set'] : []), ...runtime.role.revokedMemberships.map((m) => `left ${m}`)];
    writeLine(
      ctx.stdout,
      `${name}: runtime role ${runtime.role.role} (${changes.join(', ')}): ${runtime.grants.tables} tables, ${runtime.grants.columns} update columns, ${runtime.grants.sequences.length} sequences, ${runtime.grants.functions.length} functions granted; everything else revoked; ${runtime.role.parameters.map((p) => `SET ${p.parameter} ${p.status}`).join(', ')}`,
    );
    for (const p of runtime.role.parameters.filter((x) => x.status === 'refused')) {
      writeLine(ctx.stderr, `${name}: warning: ${runtime.role.role} may not SET ${p.parameter} (${p.reason}), so its retention sweeps write uncompressed full-page images; as a superuser: GRANT SET ON PARAMETER ${p.parameter} TO ${runtime.role.role} (docs/adr/069-prune-wal-compression.md)`);
    }
    if (poolRole !== undefined) writeLine(ctx.stdout, `${name}: DATABASE_URL does not log in as ${poolRole}: the service will SET ROLE ${poolRole} at connection start (single-user development setup)`);
    return 0;
  },
};
