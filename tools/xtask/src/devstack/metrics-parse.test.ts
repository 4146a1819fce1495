import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ActivityTracker } from './activity.ts';
import { byLabel, hasMetric, MetricsParseError, parsePrometheusText, seriesKey, sumOf } from './metrics-parse.ts';

describe('parsePrometheusText', () => {
  it('reads what prom-client writes: labels, escapes, help and type lines', async () => {
    const registry = new Registry();
    const pruned = new Counter({ name: 'event_rows_pruned_total', help: 'Rows "deleted".\nTwo lines.', labelNames: ['table'], registers: [registry] });
    const latched = new Gauge({ name: 'event_prune_cap_latched', help: 'latch', labelNames: ['table'], registers: [registry] });
    pruned.inc({ table: 'event_outbox' }, 9000);
    pruned.inc({ table: 'event_inbox' }, 4500);
    latched.set({ table: 'odd "name"\\x' }, 1);
    const samples = parsePrometheusText(await registry.metrics());
    expect(samples).toEqual([
      { name: 'event_rows_pruned_total', labels: { table: 'event_outbox' }, value: 9000 },
      { name: 'event_rows_pruned_total', labels: { table: 'event_inbox' }, value: 4500 },
      { name: 'event_prune_cap_latched', labels: { table: 'odd "name"\\x' }, value: 1 },
    ]);
    expect(sumOf(samples, 'event_rows_pruned_total')).toBe(13500);
    expect(sumOf(samples, 'event_rows_pruned_total', { table: 'event_inbox' })).toBe(4500);
    expect(sumOf(samples, 'absent_total')).toBe(0);
    expect(byLabel(samples, 'event_rows_pruned_total', 'table')).toEqual(new Map([['event_outbox', 9000], ['event_inbox', 4500]]));
    expect(hasMetric(samples, 'event_prune_cap_latched')).toBe(true);
    expect(hasMetric(samples, 'cleanup_steps_total')).toBe(false);
  });

  it('reads unlabelled samples, timestamps, exponents and the special values', () => {
    const samples = parsePrometheusText('up 1\nlag_seconds 1.5e3 1700000000000\nh_bucket{le="+Inf"} +Inf\nh_sum NaN\nneg -Inf\n');
    expect(samples.map((s) => [s.name, s.labels, s.value])).toEqual([
      ['up', {}, 1],
      ['lag_seconds', {}, 1500],
      ['h_bucket', { le: '+Inf' }, Number.POSITIVE_INFINITY],
      ['h_sum', {}, Number.NaN],
      ['neg', {}, Number.NEGATIVE_INFINITY],
    ]);
  });

  it.each([
    ['{x="1"} 2', 'no metric name'],
    ['m{x="1} 2', 'unterminated label value'],
    ['m{x=1} 2', 'malformed label'],
    ['m{x="1"}', 'no numeric value'],
    ['m twelve', 'no numeric value'],
  ])('refuses %j naming the line (%s)', (line, reason) => {
    let error: unknown;
    try {
      parsePrometheusText(`# HELP m m\nok 1\n${line}\n`);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MetricsParseError);
    expect(error).toMatchObject({ code: 'metrics_parse_error', line: 3, text: line });
    expect((error as Error).message).toContain(reason);
  });

  it('keys a series by name and sorted labels', () => {
    expect(seriesKey({ name: 'm', labels: { b: '2', a: '1' } })).toBe(seriesKey({ name: 'm', labels: { a: '1', b: '2' } }));
    expect(seriesKey({ name: 'm', labels: { a: '1' } })).not.toBe(seriesKey({ name: 'm', labels: { a: '2' } }));
  });
});

describe('ActivityTracker', () => {
  const scrape = (text: string) => parsePrometheusText(text);

  it('reports what happened between scrapes and keeps totals across a restart', () => {
    const tracker = new ActivityTracker();
    expect(tracker.update(scrape('event_rows_pruned_total{table="event_outbox"} 0\nevent_outbox_pending 4\n'))).toEqual([]);
    expect(tracker.update(scrape('event_rows_pruned_total{table="event_outbox"} 9000\nevent_rows_pruned_total{table="event_inbox"} 4500\nevent_outbox_pending 0\n'))).toEqual([
      'pruned 9,000 event_outbox rows',
      'pruned 4,500 event_inbox rows',
    ]);
    // The service restarted: its counter starts again from 0, so 300 is new work.
    expect(tracker.update(scrape('event_rows_pruned_total{table="event_outbox"} 300\n'))).toEqual(['pruned 300 event_outbox rows']);
    const a = tracker.activity();
    expect(a.pruned).toEqual(new Map([['event_outbox', 9300], ['event_inbox', 4500]]));
    expect(a.pending).toBeUndefined();
  });

  it('describes cleanup jobs, archive batches and a cap latch', () => {
    const tracker = new ActivityTracker();
    tracker.update(scrape('event_prune_cap_latched{table="event_outbox"} 0\n'));
    const lines = tracker.update(
      scrape(
        [
          'cleanup_rows_total{outcome="deleted"} 512',
          'cleanup_rows_total{outcome="kept"} 500',
          'cleanup_steps_total{kind="prune-library",phase="items",outcome="ok"} 4',
          'cleanup_jobs_finished_total{kind="prune-library",state="completed"} 1',
          'archive_rows_total{table="audit_log"} 2000',
          'archive_batches_total{table="audit_log",outcome="archived"} 2',
          'archive_batches_total{table="audit_log",outcome="store_failed"} 1',
          'event_prune_cap_latched{table="event_outbox"} 1',
          'event_outbox_parked 3',
        ].join('\n'),
      ),
    );
    expect(lines).toEqual([
      'event_outbox sweep LATCHED at its per-cycle cap (see docs/runbooks/prune-cap-latched.md)',
      'archived 2,000 audit_log rows in 2 batches',
      '1 archive batch store_failed',
      'cleanup deleted 512 rows in 4 steps',
      'cleanup: 1 prune-library job completed',
    ]);
    const a = tracker.activity();
    expect(a).toMatchObject({ cleanupDeleted: 512, cleanupSteps: 4, parked: 3, latched: ['event_outbox'] });
    expect(a.cleanupJobs).toEqual(new Map([['prune-library completed', 1]]));
    expect(a.archivedRows).toEqual(new Map([['audit_log', 2000]]));
  });
});
