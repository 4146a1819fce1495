// A small inline SVG chart of one table's row count over the run: no script, no external
// asset, readable without the page's styles (its title and label say the figures).
import { count } from './activity.ts';
import type { Point } from './count-history.ts';
import { escapeHtml } from './html.ts';

export interface ChartOptions {
  readonly width?: number;
  readonly height?: number;
}

/** The `<svg>` for one series: a line from 0 to the run's highest count, gaps where a count failed. */
export function sparkline(table: string, points: readonly Point[], options: ChartOptions = {}): string {
  const width = options.width ?? 200;
  const height = options.height ?? 44;
  const known = points.filter((p): p is readonly [number, number] => p[1] !== undefined);
  const latest = known.at(-1)?.[1];
  const max = Math.max(1, ...known.map((p) => p[1]));
  const t0 = points[0]?.[0] ?? 0;
  const t1 = Math.max(t0 + 1, points.at(-1)?.[0] ?? 0);
  const x = (t: number) => ((t - t0) / (t1 - t0)) * (width - 2) + 1;
  const y = (n: number) => height - 1 - (n / max) * (height - 2);
  // One polyline per run of known counts.
  const segments: string[][] = [[]];
  for (const [t, n] of points) {
    if (n === undefined) segments.push([]);
    else segments.at(-1)!.push(`${x(t).toFixed(1)},${y(n).toFixed(1)}`);
  }
  const lines = segments
    .filter((s) => s.length > 0)
    .map((s) => (s.length === 1 ? `<circle cx="${s[0]!.split(',')[0]}" cy="${s[0]!.split(',')[1]}" r="1.5" class="dot"/>` : `<polyline points="${s.join(' ')}" class="line"/>`))
    .join('');
  const label = `${table}: ${latest === undefined ? 'no count yet' : `${count(latest)} rows now`}, at most ${count(max)} during the run`;
  return (
    `<svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(label)}" data-table="${escapeHtml(table)}">` +
    `<title>${escapeHtml(label)}</title>` +
    `<line x1="0" y1="${height - 0.5}" x2="${width}" y2="${height - 0.5}" class="axis"/>` +
    lines +
    `</svg>`
  );
}
