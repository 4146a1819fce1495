import { describe, expect, it } from 'vitest';
import { ActivityTracker } from './activity.ts';
import { compactLine, renderTable, type ServiceRow } from './live-view.ts';
import { parsePrometheusText } from './metrics-parse.ts';

function inventoryRow(): ServiceRow {
  const tracker = new ActivityTracker();
  tracker.update(parsePrometheusText('event_rows_pruned_total{table="event_outbox"} 0\n'));
  tracker.update(
    parsePrometheusText(
      'event_rows_pruned_total{table="event_outbox"} 12000\nevent_rows_pruned_total{table="event_inbox"} 6000\nevent_outbox_pending 2\nevent_outbox_parked 3\ncleanup_steps_total{kind="prune-library",phase="items",outcome="ok"} 5\ncleanup_rows_total{outcome="deleted"} 412\ncleanup_jobs_finished_total{kind="prune-library",state="completed"} 1\n',
    ),
  );
  return { name: 'inventory', status: 'up', restarts: 1, port: 7108, activity: tracker.activity(), counts: new Map([['items', 1514], ['event_outbox', undefined]]) };
}

describe('live view', () => {
  it('renders a row per service, its table counts, and the services not built yet', () => {
    const lines = renderTable([inventoryRow(), { name: 'cases', status: 'not built yet', restarts: 0, port: undefined, activity: undefined, counts: new Map() }]);
    expect(lines[0]).toMatch(/^service\s+status\s+port\s+outbox pend\/park\s+pruned\s+latched/);
    expect(lines[2]).toMatch(/^inventory\s+up \(1 restart\)\s+7108\s+2 \/ 3\s+outbox 12,000, inbox 6,000\s+-\s+-\s+1 \/ 5 \/ 412$/);
    expect(lines[3]!.trim()).toBe('rows: items=1,514  event_outbox=?');
    expect(lines[4]).toMatch(/^cases\s+not built yet$/);
  });

  it('prints one compact line for pipes, running services only', () => {
    const line = compactLine([inventoryRow(), { name: 'cases', status: 'not built yet', restarts: 0, port: undefined, activity: undefined, counts: new Map() }], 12.7);
    expect(line).toBe('[   12s] inventory up (1 restart); outbox 2 / 3; pruned outbox 12,000, inbox 6,000; cleanup 1 / 5 / 412; items=1,514  event_outbox=?');
  });
});
