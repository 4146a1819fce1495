// The devstack's status page, rendered on the server: the live view's table, each demo table's
// row count over the run as a small inline SVG chart, every service's invariants verdict, and
// the latest events. The page's one small script fetches the `<main>` fragment again every
// couple of seconds; nothing is loaded from anywhere else.
import { count } from './activity.ts';
import type { Point } from './count-history.ts';
import { escapeHtml as h } from './html.ts';
import { sparkline } from './status-chart.ts';
import {
  allUp,
  archivedParts,
  cleanupParts,
  DASH,
  invariantsText,
  lastErrorText,
  outboxParts,
  prunedParts,
  restartsOf,
  stateText,
  type InvariantVerdict,
  type ServiceRow,
} from './view-rows.ts';

/** What the page shows: the same rows the live view draws, and the history behind the charts. */
export interface StatusView {
  readonly elapsedSeconds: number;
  readonly rows: readonly ServiceRow[];
  readonly history: (service: string) => ReadonlyMap<string, readonly Point[]>;
  /** Stamped event lines, oldest first. */
  readonly events: readonly string[];
}

const joined = (parts: readonly string[] | undefined) => (parts ? parts.join(' / ') : DASH);

function stateClass(row: ServiceRow): string {
  if (row.absent) return 'absent';
  if (allUp(row)) return 'up';
  return row.processes.some((p) => p.status === 'failed') ? 'failed' : 'busy';
}

function verdictClass(v: InvariantVerdict | undefined): string {
  if (!v) return 'unchecked';
  if ('error' in v) return 'error';
  return v.results.every((r) => r.ok) ? 'ok' : 'red';
}

function serviceRow(row: ServiceRow): string {
  const a = row.activity;
  const pruned = prunedParts(a);
  const archived = archivedParts(a);
  const latched = a?.latched.length ? ` <strong class="bad">LATCHED ${h(a.latched.join(', '))}</strong>` : '';
  const ports = row.processes.map((p) => `<a href="http://127.0.0.1:${p.port}/metrics">${p.port}</a>`).join(' ');
  const cells = row.absent
    ? `<td colspan="9" class="dim"></td>`
    : [
        `<td class="num">${restartsOf(row)}</td>`,
        `<td class="num">${ports || DASH}</td>`,
        `<td class="num">${h(joined(outboxParts(a)))}</td>`,
        `<td class="num">${h(pruned ? pruned.parts.join(' / ') + (pruned.local ? ` +${count(pruned.local)} local` : '') : DASH)}${latched}</td>`,
        `<td class="num">${h(archived ? archived.parts.join(' / ') : DASH)}${archived?.failed ? ` <strong class="bad">${count(archived.failed)} failed</strong>` : ''}</td>`,
        `<td class="num">${h(joined(cleanupParts(a)))}</td>`,
        `<td class="verdict ${verdictClass(row.invariants)}">${h(invariantsText(row.invariants))}</td>`,
        `<td class="error">${h(lastErrorText(row.lastError))}</td>`,
      ].join('');
  return `<tr data-service="${h(row.name)}" data-state="${stateClass(row)}"><th scope="row">${h(row.name)}</th><td class="state ${stateClass(row)}">${h(stateText(row))}</td>${cells}</tr>`;
}

function servicesTable(rows: readonly ServiceRow[]): string {
  return `<table id="services">
<thead><tr><th>service</th><th>state</th><th>restarts</th><th>port</th><th>outbox<br><small>pend / park</small></th><th>pruned<br><small>outbox / inbox</small></th><th>archived<br><small>rows / batches</small></th><th>cleanup<br><small>jobs / steps / rows</small></th><th>invariants</th><th>last error</th></tr></thead>
<tbody>${rows.map(serviceRow).join('\n')}</tbody>
</table>`;
}

function invariantsCard(row: ServiceRow, elapsedSeconds: number): string {
  const v = row.invariants;
  const head = `<h3>${h(row.name)} <span class="verdict ${verdictClass(v)}">${h(invariantsText(v))}</span>${v ? ` <small>checked ${Math.max(0, Math.round(elapsedSeconds - v.atSeconds))} s ago</small>` : ''}</h3>`;
  let body = '';
  if (v && 'error' in v) body = `<p class="bad">${h(v.error)}</p>`;
  else if (v)
    body = `<ul>${v.results.map((r) => `<li class="${r.ok ? 'ok' : 'red'}" data-invariant="${h(r.name)}"><span class="verdict ${r.ok ? 'ok' : 'red'}">${r.ok ? 'ok' : 'RED'}</span> <code>${h(r.name)}</code><br><small>${h(r.detail)}</small></li>`).join('')}</ul>`;
  return `<section class="card invariants" data-service="${h(row.name)}" data-verdict="${verdictClass(v)}">${head}${body}</section>`;
}

function chartsCard(row: ServiceRow, history: ReadonlyMap<string, readonly Point[]>): string {
  const figures = [...history]
    .map(([table, points]) => {
      const latest = [...points].reverse().find((p) => p[1] !== undefined)?.[1];
      const max = Math.max(0, ...points.map((p) => p[1] ?? 0));
      return `<figure>${sparkline(table, points, { width: 140, height: 40 })}<figcaption>${h(table)} <b>${latest === undefined ? '?' : count(latest)}</b> <small>max ${count(max)}</small></figcaption></figure>`;
    })
    .join('');
  return `<section class="card charts" data-service="${h(row.name)}"><h3>${h(row.name)}</h3>${figures || '<p class="dim">no demo tables counted yet</p>'}</section>`;
}

/** The part of the page that is fetched again on every refresh. */
export function renderLive(view: StatusView): string {
  const running = view.rows.filter((r) => !r.absent);
  const up = running.filter(allUp).length;
  const red = running.filter((r) => verdictClass(r.invariants) === 'red' || verdictClass(r.invariants) === 'error').length;
  return `<p class="summary" data-elapsed="${Math.floor(view.elapsedSeconds)}"><b>${up}/${running.length}</b> services up · invariants ${red === 0 ? '<b class="ok">ok</b>' : `<b class="bad">red in ${red}</b>`} · ${Math.floor(view.elapsedSeconds)} s since start</p>
${servicesTable(view.rows)}
<h2>Invariants <small>(what <code>pnpm xtask invariants &lt;service&gt;</code> reports)</small></h2>
<div class="grid">${running.map((r) => invariantsCard(r, view.elapsedSeconds)).join('\n')}</div>
<h2>Rows over time <small>(count(*) of each demo table)</small></h2>
<div class="grid">${running.map((r) => chartsCard(r, view.history(r.name))).join('\n')}</div>
<h2>What happened <small>(newest first)</small></h2>
<ul id="events">${[...view.events].reverse().map((e) => `<li>${h(e)}</li>`).join('')}</ul>`;
}

const STYLE = `
:root { color-scheme: light; font: 14px/1.4 system-ui, sans-serif; color: #1d2327; background: #f6f7f8; }
body { margin: 0 auto; padding: 12px 20px 40px; max-width: 1400px; }
h1 { font-size: 20px; margin: 4px 0; } h2 { font-size: 16px; margin: 22px 0 8px; } h3 { font-size: 14px; margin: 0 0 6px; }
small, .dim { color: #68737d; font-weight: normal; }
#conn { color: #b32d2e; font-weight: bold; }
table { border-collapse: collapse; background: #fff; }
#services { width: 100%; box-shadow: 0 1px 2px #0002; }
#services th, #services td { padding: 4px 8px; border-bottom: 1px solid #e2e4e7; text-align: left; vertical-align: top; }
#services thead th { background: #eef0f2; font-size: 12px; }
.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.error { max-width: 28em; overflow-wrap: anywhere; font-size: 12px; }
.state.up, .verdict.ok, .ok { color: #007017; } .state.busy { color: #996800; } .state.failed, .bad, .verdict.red, .verdict.error { color: #b32d2e; }
.state.absent, .verdict.unchecked { color: #68737d; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 10px; }
.card { background: #fff; padding: 8px 10px; box-shadow: 0 1px 2px #0002; }
.card ul { list-style: none; margin: 0; padding: 0; font-size: 12px; } .card li { padding: 2px 4px; overflow-wrap: anywhere; } .card li.red { background: #fcf0f1; }
.card code { font-size: 12px; color: inherit; } .card li.ok small { color: #68737d; }
figure { display: inline-block; width: 140px; margin: 0 10px 8px 0; vertical-align: top; } figcaption { font-size: 12px; overflow-wrap: anywhere; }
.chart .line { fill: none; stroke: #2271b1; stroke-width: 1.5; } .chart .dot { fill: #2271b1; } .chart .axis { stroke: #c3c4c7; stroke-width: 1; }
#events { font: 12px/1.35 ui-monospace, monospace; background: #fff; padding: 8px; margin: 0; list-style: none; max-height: 22em; overflow: auto; }
`;

/** The whole page; `nonce` lets the inline style and script through the page's CSP. */
export function renderPage(view: StatusView, options: { readonly nonce: string; readonly refreshMs: number }): string {
  // Plain script, no framework: fetch the fragment, swap it in, say so when the devstack stops answering.
  const script = `
const live = document.getElementById('live'), conn = document.getElementById('conn');
async function refresh() {
  try {
    const res = await fetch('fragment', { cache: 'no-store' });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    live.innerHTML = await res.text();
    conn.textContent = '';
    document.body.dataset.connected = 'true';
  } catch (error) {
    conn.textContent = 'the devstack is not answering (' + error.message + '): this is the last data it sent';
    document.body.dataset.connected = 'false';
  } finally {
    setTimeout(refresh, ${options.refreshMs});
  }
}
setTimeout(refresh, ${options.refreshMs});`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>craig devstack</title>
<style nonce="${h(options.nonce)}">${STYLE}</style>
</head>
<body data-connected="true">
<h1>craig devstack <small>read-only status · refreshed every ${Math.round(options.refreshMs / 100) / 10} s</small> <span id="conn"></span></h1>
<main id="live">${renderLive(view)}</main>
<script nonce="${h(options.nonce)}">${script}</script>
</body>
</html>
`;
}
