// `pnpm xtask fleet check` in process: the whole fleet's windows from an environment, the
// subscription graph from the services' event catalogs.
import { describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

async function fleet(env: Record<string, string>, ...argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const code = await runXtask(['fleet', ...argv], { env, stdout, stderr });
  return { code, out: stdout.text(), err: stderr.text() };
}

interface Pair {
  producer: string;
  consumer: string;
  eventTypes: string[];
  subscriptions: string[];
  producerOutbox: { days: number; variable: string };
  consumerInbox: { days: number; variable: string };
  marginDays: number | null;
  marginUnbounded?: string;
  ok: boolean;
  problem?: string;
}

describe('pnpm xtask fleet check', () => {
  it('passes the defaults and lists every producer → consumer pair of the graph the catalogs declare', async () => {
    const { code, out } = await fleet({}, 'check');
    expect(code).toBe(0);
    expect(out).toMatch(/cases → placements\s+case\.opened, case\.closed\s+30 d \(CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS\)\s+31 d \(CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS\)\s+1 d\s+ok/);
    expect(out).toContain('fleet: 13 pairs, every inbox window outlives');

    const json = await fleet({}, 'check', '--json');
    const report = JSON.parse(json.out) as { ok: boolean; pairs: Pair[] };
    expect(report.ok).toBe(true);
    expect(report.pairs.map((p) => `${p.producer}>${p.consumer}`).sort()).toEqual(
      [
        'cases>placements', 'cases>safety', 'cases>security', 'cases>rules', 'cases>exchange',
        'placements>security', 'placements>rules', 'placements>financial',
        'safety>security', 'safety>rules',
        'security>security', 'rules>security', 'financial>security',
      ].sort(),
    );
    // Patterns matched against declared types: exchange hears only case.opened, through its one consumer.
    expect(report.pairs.find((p) => p.consumer === 'exchange')).toMatchObject({ producer: 'cases', eventTypes: ['case.opened'], subscriptions: ['exchange.cases'], marginDays: 1 });
  });

  it("exits 1 when placements' inbox window is 30 and cases' outbox window is 30, naming both variables and values", async () => {
    const env = { CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS: '30', CRAIG_PLACEMENTS__EVENT_OUTBOX_RETENTION_DAYS: '29', CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '30' };
    const { code, out } = await fleet(env, 'check');
    expect(code).toBe(1);
    expect(out).toContain(
      'FAIL cases → placements: CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS=30 < CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=30 + 1 (margin 0 d, needs at least 1)',
    );
    expect(out).toContain('fleet: 1 of 13 pairs below the dedup horizon');
    // Placements' own pair (inbox 30 ≥ outbox 29 + 1) is fine: only the fleet check sees this.
    expect(out).not.toContain('refused');
  });

  it('checks the pair even when the consumer would refuse its own settings, and says so', async () => {
    const { code, out, err } = await fleet({ CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS: '30' }, 'check');
    expect(code).toBe(1);
    expect(err).toContain('CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS="30" must be at least CRAIG_PLACEMENTS__EVENT_OUTBOX_RETENTION_DAYS + 1');
    expect(out).toContain('FAIL cases → placements: CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS=30 < CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=30 (default) + 1');
    expect(out).toContain('settings refused by placements');
  });

  it('windows moved fleet-wide pass; one service raising its outbox window above a peer’s inbox window fails', async () => {
    const moved = await fleet({ CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '60', CRAIG__EVENT_INBOX_RETENTION_DAYS: '61' }, 'check');
    expect(moved.code).toBe(0);
    expect(moved.out).toMatch(/cases → placements\s+.*60 d \(CRAIG__EVENT_OUTBOX_RETENTION_DAYS\)\s+61 d \(CRAIG__EVENT_INBOX_RETENTION_DAYS\)\s+1 d\s+ok/);

    const raised = await fleet({ CRAIG_RULES__EVENT_OUTBOX_RETENTION_DAYS: '45', CRAIG_RULES__EVENT_INBOX_RETENTION_DAYS: '46' }, 'check', '--json');
    expect(raised.code).toBe(1);
    const report = JSON.parse(raised.out) as { ok: boolean; pairs: Pair[] };
    expect(report.pairs.filter((p) => !p.ok).map((p) => [p.producer, p.consumer, p.marginDays])).toEqual([['rules', 'security', -14]]);
    expect(report.pairs.find((p) => !p.ok)!.problem).toContain('CRAIG_SECURITY__EVENT_INBOX_RETENTION_DAYS=31 (default) < CRAIG_RULES__EVENT_OUTBOX_RETENTION_DAYS=45 + 1');
  });

  it('an unbounded margin: a consumer that never prunes its dedup records, a producer that never prunes its outbox nor inbox', async () => {
    const report = JSON.parse((await fleet({ CRAIG_SECURITY__EVENT_INBOX_RETENTION_DAYS: '0' }, 'check', '--json')).out) as { ok: boolean; pairs: Pair[] };
    expect(report.ok).toBe(true);
    expect(report.pairs.find((p) => p.producer === 'cases' && p.consumer === 'security')).toMatchObject({ marginDays: null, marginUnbounded: 'inbox sweep off', ok: true });

    const both = await fleet({ CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '0', CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '0' }, 'check');
    expect(both.code).toBe(1);
    expect(both.out).toContain('FAIL cases → placements: cases replays without limit (CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=0, CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS=0: both sweeps off)');
  });

  it('refuses a typo as the services would, and a missing subcommand with usage', async () => {
    const typo = await fleet({ CRAIG__EVENT_OUTBOX_RETENTION_DAY: '30' }, 'check');
    expect(typo.code).toBe(1);
    expect(typo.err).toContain('did you mean CRAIG__EVENT_OUTBOX_RETENTION_DAYS?');
    expect((await fleet({})).code).toBe(2);
    expect((await fleet({}, 'chek')).err).toContain('unknown subcommand "chek" (expected "check")');
  });
});
