// The Prometheus text exposition format (what prom-client's `registry.metrics()` writes), read
// back: the devstack's live view scrapes each service's GET /metrics.

/** One sample line: `name{label="value",…} value`. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A line the parser could not read, with its number (1-based) and text. */
export class MetricsParseError extends Error {
  override readonly name = 'MetricsParseError';
  readonly code = 'metrics_parse_error';
  constructor(
    readonly line: number,
    readonly text: string,
    reason: string,
  ) {
    super(`metrics line ${line}: ${reason}: ${JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text)}`);
  }
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

/** Every sample of a text exposition; `# HELP` / `# TYPE` and blank lines are skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const name = NAME.exec(line)?.[0];
    if (!name) throw new MetricsParseError(index + 1, raw, 'no metric name');
    let rest = line.slice(name.length);
    const labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      const { parsed, end } = parseLabels(rest, index + 1, raw);
      Object.assign(labels, parsed);
      rest = rest.slice(end);
    }
    const [valueText] = rest.trim().split(/\s+/);
    const value = parseValue(valueText ?? '');
    if (value === undefined) throw new MetricsParseError(index + 1, raw, 'no numeric value');
    samples.push({ name, labels, value });
  });
  return samples;
}

function parseLabels(text: string, lineNo: number, raw: string): { parsed: Record<string, string>; end: number } {
  const parsed: Record<string, string> = {};
  let i = 1;
  for (;;) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return { parsed, end: i + 1 };
    const key = NAME.exec(text.slice(i))?.[0];
    if (!key || text[i + key.length] !== '=' || text[i + key.length + 1] !== '"') throw new MetricsParseError(lineNo, raw, 'malformed label');
    i += key.length + 2;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new MetricsParseError(lineNo, raw, 'unterminated label value');
      if (c === '"') break;
      if (c === '\\') {
        const next = text[i + 1];
        value += next === 'n' ? '\n' : (next ?? '');
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    parsed[key] = value;
    i++;
  }
}

function parseValue(text: string): number | undefined {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  if (text === '' || !/^[-+]?[0-9.]+(e[-+]?[0-9]+)?$/i.test(text)) return undefined;
  return Number(text);
}

/** Sum of a metric's samples whose labels include every pair of `where`; 0 when there are none. */
export function sumOf(samples: readonly Sample[], name: string, where: Readonly<Record<string, string>> = {}): number {
  let total = 0;
  for (const s of samples) if (s.name === name && matches(s, where)) total += s.value;
  return total;
}

/** The metric's samples summed per value of one label (e.g. rows pruned per `table`). */
export function byLabel(samples: readonly Sample[], name: string, label: string, where: Readonly<Record<string, string>> = {}): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name || !matches(s, where)) continue;
    const key = s.labels[label] ?? '';
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

/** Whether the exposition has the metric at all (a service without cleanup has no cleanup_* series). */
export function hasMetric(samples: readonly Sample[], name: string): boolean {
  return samples.some((s) => s.name === name);
}

/** A stable key for one series: `name{a="1",b="2"}` with labels sorted. */
export function seriesKey(sample: Pick<Sample, 'name' | 'labels'>): string {
  const labels = Object.entries(sample.labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  return `${sample.name}{${labels}}`;
}

function matches(sample: Sample, where: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(where)) if (sample.labels[k] !== v) return false;
  return true;
}
