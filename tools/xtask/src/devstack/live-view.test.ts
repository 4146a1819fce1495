import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { fleetLine, LiveView, renderFrame, renderTable } from './live-view.ts';
import { displayWidth, truncate, wrap } from './terminal-text.ts';
import { fakeFleet } from './view-fixtures.ts';
import { stateText, type ServiceRow } from './view-rows.ts';

const rowOf = (rows: readonly string[], service: string) => rows.find((l) => l.startsWith(`${service} `))!;

/** A terminal-like stream: its size, its resize event, and everything written to it. */
function screen(columns: number, rows: number) {
  const chunks: string[] = [];
  const out = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return Object.assign(out, { columns, rows, isTTY: true, chunks, text: () => chunks.join('') });
}

describe('live view table', () => {
  it('has one row per service with state and restarts, outbox, pruned, archived, cleanup, invariants and last error', () => {
    const { rows } = fakeFleet({ restarting: ['rules'] });
    const { lines, hidden } = renderTable(rows, 240);
    expect(hidden).toEqual([]);
    expect(lines[0]).toMatch(/^service\s+state\s+outbox\s+pruned\s+archived\s+cleanup\s+invariants\s+last error$/);
    expect(lines[1]).toMatch(/pend\/park\s+outbox\/inbox\s+rows\/batches\s+jobs\/steps\/rows$/);
    expect(lines).toHaveLength(3 + 8);
    expect(rowOf(lines, 'inventory')).toMatch(/^inventory\s+up\s+0 \/ 3\s+12,100 \/ {2}6,000\s+-\s+2 \/ 9 \/ 780\s+1 red\s+-$/);
    expect(rowOf(lines, 'rules')).toMatch(/^rules\s+restarting \(1 restart\)\s+2 \/ 0\s+9,000 \/ {2}9,000\s+12,000 \/ 3 \(1 failed\)\s+-\s+1 red\s+\d+s: exited/);
    expect(rowOf(lines, 'safety')).toContain('12,000 /  6,000 LATCHED');
    expect(rowOf(lines, 'exchange')).toContain(' 3,000 /  3,000 +1,200 local');
    expect(rowOf(lines, 'exchange')).toMatch(/41s: demo tick failed: POST \/v1\/screenings answered 503 <service unavailable>$/);
    expect(rowOf(lines, 'cases')).toMatch(/\s+ok\s+-$/);
  });

  it('lines the figures up part by part, so the slashes form a column', () => {
    const { lines } = renderTable(fakeFleet().rows, 200);
    const slashes = (service: string) => rowOf(lines, service).indexOf(' / ', rowOf(lines, service).indexOf(' / ') + 3);
    // The second " / " of each row is the pruned column's: cases 30,000 / 0 and security 171 / 20,000.
    expect(slashes('cases')).toBe(slashes('security'));
    expect(rowOf(lines, 'security')).toContain('   171 / 20,000');
  });

  it('fits a narrow window by leaving the least needed columns out, and says which', () => {
    const { rows } = fakeFleet();
    for (const width of [150, 120, 100, 80, 60, 40]) {
      const { lines, hidden } = renderTable(rows, width);
      for (const line of lines) expect(displayWidth(line), `${width}: ${line}`).toBeLessThanOrEqual(width);
      for (const r of rows) expect(rowOf(lines, r.name), `${width}`).toMatch(new RegExp(`^${r.name}\\s+up`));
      if (width <= 100) expect(hidden.length, `${width}`).toBeGreaterThan(0);
    }
    const at80 = renderTable(rows, 80);
    expect(at80.hidden).toEqual(['archived', 'cleanup', 'invariants']);
    expect(rowOf(at80.lines, 'inventory')).toMatch(/^inventory\s+up\s+0 \/ 3\s+12,100 \/ {2}6,000\s+-$/);
    expect(rowOf(renderTable(rows, 120).lines, 'inventory')).toMatch(/^inventory\s+up\s+0 \/ 3\s+12,100 \/ {2}6,000\s+-\s+1 red\s+-$/);
  });

  it('sums a service of several processes: "2/2 up", "1/2 up, 1 restarting", restarts added up', () => {
    const two = fakeFleet({ replicas: 2, restarting: ['cases'] });
    const cases = two.rows.find((r) => r.name === 'cases')!;
    expect(stateText(cases)).toBe('1/2 up, 1 restarting');
    expect(stateText(two.rows.find((r) => r.name === 'rules')!)).toBe('2/2 up');
    expect(rowOf(renderTable(two.rows, 200).lines, 'cases')).toMatch(/^cases\s+1\/2 up, 1 restarting \(1 restart\)\s+0 \/ 0\s/);
    const absent: ServiceRow = { name: 'ledger', absent: 'not built yet', processes: [], activity: undefined, counts: new Map(), lastError: undefined, invariants: undefined };
    expect(rowOf(renderTable([...two.rows, absent], 200).lines, 'ledger')).toMatch(/^ledger\s+not built yet$/);
  });
});

describe('live view frame', () => {
  const long = `[   12s] inventory: demo tick failed: ${'x'.repeat(150)} end`;

  it('is never wider than the window nor taller than it, and wraps long events itself', () => {
    const { rows } = fakeFleet();
    const events = Array.from({ length: 60 }, (_, i) => `[${String(i).padStart(5)}s] event ${i}`).concat(long);
    for (const [columns, height] of [
      [80, 24],
      [120, 40],
      [60, 20],
      [200, 60],
    ] as const) {
      const frame = renderFrame({ title: 'craig devstack · 12 s', banner: ['craig devstack: state in .devstack', '  PostgreSQL embedded'], rows, events }, { columns, rows: height });
      expect(frame.length, `${columns}x${height}`).toBeLessThanOrEqual(height - 1);
      for (const line of frame) expect(displayWidth(line), `${columns}x${height}: ${line}`).toBeLessThan(columns);
      // The newest event is the last thing on the screen, whole, across as many lines as it takes.
      expect(frame.at(-1)!.trimEnd().endsWith('end')).toBe(true);
    }
    const at80 = renderFrame({ title: 't', banner: [], rows, events: [long] }, { columns: 80, rows: 40 });
    const start = at80.findIndex((l) => l.startsWith('[   12s] inventory'));
    expect(at80.slice(start).join('').replaceAll(/\s/g, '')).toBe(long.replaceAll(/\s/g, ''));
    expect(at80[start]).toBe('[   12s] inventory: demo tick failed:');
    expect(at80[start + 1]).toMatch(/^ {9}x/);
  });

  it('shows the banner when the window is tall enough, and the newest events when it is not', () => {
    const { rows } = fakeFleet();
    const banner = Array.from({ length: 12 }, (_, i) => `  banner line ${i}`);
    const events = Array.from({ length: 40 }, (_, i) => `[${String(i).padStart(5)}s] event ${i}`);
    const tall = renderFrame({ title: 'title', banner, rows, events }, { columns: 200, rows: 60 });
    expect(tall).toContain('  banner line 11');
    expect(tall.at(-1)).toBe('[   39s] event 39');
    const short = renderFrame({ title: 'title', banner, rows, events }, { columns: 200, rows: 24 });
    expect(short).not.toContain('  banner line 0');
    expect(short[0]).toBe('title');
    expect(short.at(-1)).toBe('[   39s] event 39');
    expect(short).not.toContain('[    0s] event 0');
    // Too short for the table: cut, and said so.
    const tiny = renderFrame({ title: 'title', banner, rows, events }, { columns: 200, rows: 8 });
    expect(tiny).toHaveLength(7);
    expect(tiny.at(-1)).toMatch(/^… \(window too short: \d+ more lines\)$/);
  });

  it('keeps control characters from a service log off the screen', () => {
    const frame = renderFrame({ title: 't', banner: [], rows: [], events: ['[    1s] rules:   | \x1b[2J\x1b[31mred\x07'] }, { columns: 80, rows: 24 });
    expect([...frame.join('\n')].filter((c) => c !== '\n' && c.charCodeAt(0) < 0x20)).toEqual([]);
    expect(frame.at(-1)).toBe('[    1s] rules:   | ?[2J?[31mred?');
  });

  it('wraps at spaces, splitting only a word longer than a line', () => {
    expect(wrap('[  133s] inventory: cleanup: 1 prune-library job completed', 39, 9)).toEqual(['[  133s] inventory: cleanup: 1', '         prune-library job completed']);
    expect(wrap('abcdefghij', 4, 1)).toEqual(['abcd', ' efg', ' hij']);
  });

  it('measures wide characters as two cells', () => {
    expect(displayWidth('日本')).toBe(4);
    expect(truncate('日本語テキスト', 7)).toBe('日本語…');
    expect(wrap('日本語テキスト', 6).every((l) => displayWidth(l) <= 6)).toBe(true);
  });
});

describe('fleet line (pipes and files)', () => {
  it('is one short line with the totals and the problems named', () => {
    const line = fleetLine(fakeFleet({ restarting: ['rules'] }).rows, 61.4);
    expect(line).toBe(
      '[   61s] 7/8 services up · outbox 7 pending, 3 parked · pruned 166,445 · archived 33,300 · cleanup 2 jobs · not up: rules restarting · LATCHED: safety event_inbox · invariants red: safety (1 red), rules (1 red), inventory (1 red)',
    );
    expect(line.length).toBeLessThan(240);
    const starting = fakeFleet().rows.map((r) => ({ ...r, processes: r.processes.map((p) => ({ ...p, status: 'starting' as const })), invariants: undefined }));
    expect(fleetLine(starting, 5)).toBe('[    5s] 0/8 services up · outbox 7 pending, 3 parked · pruned 166,445 · archived 33,300 · cleanup 2 jobs · not up: 8 starting · LATCHED: safety event_inbox');
  });
});

describe('LiveView', () => {
  it('on a terminal: clears once, then redraws from the top, each line cleared to its end; redraws on resize and on an event', async () => {
    const out = screen(100, 30);
    const view = new LiveView(out, { tty: true, quiet: false, header: ['banner'], statusUrl: 'http://127.0.0.1:7100/' });
    const { rows } = fakeFleet();
    view.draw(rows, 12);
    expect(out.chunks[0]!.startsWith('\x1b[H\x1b[2Jcraig devstack · http://127.0.0.1:7100/ · 12 s · 8/8 services up · Ctrl-C stops\x1b[K\n')).toBe(true);
    expect(out.chunks[0]!.endsWith('\x1b[J')).toBe(true);
    view.draw(rows, 14);
    expect(out.chunks[1]!.startsWith('\x1b[Hcraig devstack · http://127.0.0.1:7100/ · 14 s')).toBe(true);
    // Every line of a frame fits the window.
    for (const line of out.chunks[1]!.slice(3).split('\n')) expect(displayWidth(line.replaceAll('\x1b[K', '').replaceAll('\x1b[J', ''))).toBeLessThan(100);

    out.columns = 60;
    out.emit('resize');
    expect(out.chunks).toHaveLength(3);
    expect(out.chunks[2]).toContain('(window too narrow for:');

    view.event(15, 'inventory: pruned 9 event_outbox rows');
    view.event(15, 'inventory: cleanup deleted 4 rows in 1 step');
    expect(out.chunks).toHaveLength(3);
    await new Promise((r) => setImmediate(r));
    expect(out.chunks).toHaveLength(4);
    expect(out.chunks[3]).toContain('[   15s] inventory: cleanup deleted 4 rows in 1 step\x1b[K\x1b[J');

    // Closed: the cursor goes under the frame, and what follows prints as lines.
    view.close();
    view.event(16, 'stopping');
    view.draw(rows, 16);
    expect(out.chunks.slice(4)).toEqual(['\n', '[   16s] stopping\n']);
    expect(out.listenerCount('resize')).toBe(0);
  });

  it('on a pipe: events as they happen, a fleet line when something changed or every 30 s, never the table', () => {
    const out = screen(0, 0);
    const view = new LiveView(out, { tty: false, quiet: false, header: [] });
    const steady = fakeFleet().rows;
    view.draw(steady, 2);
    view.draw(steady, 4);
    view.event(5, 'cases: pruned 30,000 event_outbox rows');
    view.draw(fakeFleet({ restarting: ['cases'] }).rows, 6);
    view.draw(fakeFleet({ restarting: ['cases'] }).rows, 30);
    view.draw(fakeFleet({ restarting: ['cases'] }).rows, 36);
    const lines = out.text().trimEnd().split('\n');
    expect(lines.map((l) => l.slice(0, 40))).toEqual([
      '[    2s] 8/8 services up · outbox 7 pend',
      '[    5s] cases: pruned 30,000 event_outb',
      '[    6s] 7/8 services up · outbox 7 pend',
      '[   36s] 7/8 services up · outbox 7 pend',
    ]);
    expect(out.text()).not.toContain('\x1b');
  });

  it('--quiet: events only', () => {
    const out = screen(100, 30);
    const view = new LiveView(out, { tty: true, quiet: true, header: [] });
    view.draw(fakeFleet().rows, 2);
    view.event(3, 'stack up');
    expect(out.text()).toBe('[    3s] stack up\n');
  });
});
