// Metric names in PromQL expressions and in the Prometheus text format, so the shipped alerts
// and dashboard can be checked against what the services export.

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan', 'atan2']);

/**
 * The metric names an expression selects: every identifier that is not a function or
 * aggregation (followed by `(`), a keyword, a label (inside `{}` or a `by (…)` list), a string,
 * a duration or a dashboard variable (`$service`, `$__rate_interval`).
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const name = m[0];
    const rest = stripped.slice(m.index + name.length);
    if (/^\s*\(/.test(rest) || KEYWORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/**
 * The series names a `/metrics` page can produce, from its `# TYPE` lines (a metric with no
 * sample yet still has one): a histogram's `_bucket`, `_sum` and `_count`, a summary's
 * `_sum` and `_count`, every other metric under its own name.
 */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (!m) continue;
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}
