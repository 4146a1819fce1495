import { describe, expect, it } from 'vitest';
import { exportedNames, metricNames } from './promql.ts';

describe('metricNames', () => {
  it('finds the selected metrics, not functions, keywords, labels, strings, durations or variables', () => {
    expect(
      metricNames('sum by (service) (increase(event_prune_cycles_total{status="failed",x=~"a|b"}[2h])) > 0 or sum by (service) (event_prune_cycles_total unless other_metric offset 2h)'),
    ).toEqual(['event_prune_cycles_total', 'other_metric']);
    expect(metricNames('time() - max by (service) (a_ts{service=~"$service"}) > 2 * max by (service) (b_interval) and on (service) c > 0')).toEqual(['a_ts', 'b_interval', 'c']);
    expect(metricNames('histogram_quantile(0.99, sum by (le, phase) (rate(step_seconds_bucket{service=~"$service"}[$__rate_interval])))')).toEqual(['step_seconds_bucket']);
    expect(metricNames('max(x) > 1e3 and bool y')).toEqual(['x', 'y']);
  });
});

describe('exportedNames', () => {
  it('reads # TYPE lines, with the series a histogram or summary adds', () => {
    const text = '# HELP a_total A.\n# TYPE a_total counter\na_total 1\n# HELP h H.\n# TYPE h histogram\n# TYPE s summary\n# TYPE g gauge\n';
    expect([...exportedNames(text)].sort()).toEqual(['a_total', 'g', 'h', 'h_bucket', 'h_count', 'h_sum', 's', 's_count', 's_sum']);
  });
});
