import { formatIssue } from '@craig/settings';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { printTable } from '../bench/measure.ts';
import { checkFleet, formatMargin, type FleetMember } from '../fleet-check.ts';
import { knownServiceNames, serviceEntry } from '../services.ts';

export const fleetCommand: Command = {
  name: 'fleet',
  summary: 'check the fleet-wide dedup horizon: every producer → consumer pair, both windows and the margin',
  usage: `pnpm xtask fleet check [--json]

Reads every service's settings from the environment (CRAIG_<SERVICE>__* and the fleet
defaults CRAIG__*, exactly as each service reads them) and the subscription graph from the
services' own event catalogs (<SERVICE>_EVENTS: the event types each publishes, matched
against every consumer's topic patterns), and prints each producer → consumer pair with the
producer's outbox window, the consumer's inbox window and the margin between them.

A consumer's dedup records must outlive every outbox row its producers may replay by a day
(ADR-058): inbox ≥ producer outbox + 1 (with the producer's outbox sweep off, its inbox
window - 1 bounds its replays; a consumer with its inbox sweep off keeps its records forever).
Exits 1 naming each pair whose margin is under 1 day, with both variables and both values, or
when a service would refuse its settings; 0 otherwise. --json prints the report as JSON
(an unbounded margin is null there, with marginUnbounded). Connects to nothing.`,
  async run(ctx) {
    const { positionals, flags } = parseArgs(ctx.argv, { flags: ['json'] });
    const [sub, ...extra] = positionals;
    if (sub !== 'check' || extra.length > 0) throw new UsageError(sub === undefined ? 'expected "check"' : `unknown subcommand ${JSON.stringify([sub, ...extra].join(' '))} (expected "check")`);
    const members: FleetMember[] = [];
    for (const name of knownServiceNames()) {
      const entry = serviceEntry(name);
      if (entry?.events) members.push({ profile: entry.profile, events: entry.events });
    }
    const report = checkFleet(members, ctx.env);

    if (flags.has('json')) {
      writeLine(
        ctx.stdout,
        JSON.stringify(
          {
            ok: report.ok,
            refused: report.refused.map((r) => ({ service: r.service, issues: r.error.issues.map(formatIssue) })),
            pairs: report.pairs.map((p) => ({
              ...p,
              marginDays: Number.isFinite(p.marginDays) ? p.marginDays : null,
              ...(Number.isFinite(p.marginDays) ? {} : { marginUnbounded: p.marginDays > 0 ? 'inbox sweep off' : 'no replay limit' }),
            })),
          },
          null,
          2,
        ),
      );
      return report.ok ? 0 : 1;
    }

    for (const r of report.refused) writeLine(ctx.stderr, r.error.message);
    printTable(
      ctx.stdout,
      ['producer → consumer', 'events', 'producer outbox window', 'consumer inbox window', 'margin', 'state'],
      report.pairs.map((p) => [
        `${p.producer} → ${p.consumer}`,
        p.eventTypes.join(', '),
        `${p.producerOutbox.days} d (${p.producerOutbox.variable})`,
        `${p.consumerInbox.days} d (${p.consumerInbox.variable})`,
        formatMargin(p.marginDays),
        p.ok ? 'ok' : 'FAIL',
      ]),
    );
    const failing = report.pairs.filter((p) => !p.ok);
    for (const p of failing) writeLine(ctx.stdout, `FAIL ${p.problem}`);
    if (report.refused.length > 0) writeLine(ctx.stdout, `settings refused by ${report.refused.map((r) => r.service).join(', ')} (on stderr): those services would not start`);
    writeLine(
      ctx.stdout,
      report.ok
        ? `fleet: ${report.pairs.length} pairs, every inbox window outlives its producers' outbox windows by at least a day`
        : `fleet: ${failing.length} of ${report.pairs.length} pairs below the dedup horizon${report.refused.length ? `, ${report.refused.length} service(s) refused` : ''}; move the windows fleet-wide (CRAIG__EVENT_OUTBOX_RETENTION_DAYS / CRAIG__EVENT_INBOX_RETENTION_DAYS)`,
    );
    return report.ok ? 0 : 1;
  },
};
