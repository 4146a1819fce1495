// The status page in a real browser (Debian's Chromium, headless, through playwright-core): the
// server on the same typed rows stack.ts feeds it, the page read back from the DOM, refreshed
// live, and a PNG screenshot (in .artifacts/status-page.png, to look at).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAMES } from '@craig/settings';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, pngSize } from '../test-browser.ts';
import { startStatusServer, type StatusServer } from './status-server.ts';
import { fakeFleet } from './view-fixtures.ts';

const ARTIFACTS = fileURLToPath(new URL('../../../../.artifacts/', import.meta.url));

let browser: Awaited<ReturnType<typeof launchChromium>>;
let server: StatusServer | undefined;
let view = fakeFleet({ seconds: 60 });

beforeAll(async () => {
  browser = await launchChromium();
  server = await startStatusServer({ port: 0, view: () => view, refreshMs: 250 });
});

afterAll(async () => {
  await server?.close();
  await browser?.close();
});

describe('status page in headless Chromium', () => {
  it('shows all eight services, their invariants and row-count charts, refreshes live, and says when the devstack stops answering', async () => {
    const page = await browser.context.newPage();
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(server!.url);

    // The table: a row per service, in SERVICE_NAMES order, each up.
    const rows = page.locator('#services tbody tr');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-service')))).toEqual([...SERVICE_NAMES]);
    for (const name of SERVICE_NAMES) {
      const row = page.locator(`#services tr[data-service="${name}"]`);
      expect(await row.locator('th').textContent()).toBe(name);
      expect(await row.locator('td.state').textContent()).toBe('up');
    }
    expect(await page.locator('#services tr[data-service="inventory"]').textContent()).toContain('2 / 9 / 780');
    expect(await page.locator('#services tr[data-service="security"]').textContent()).toContain('171 / 20,000');
    // A log line's markup is text, never markup.
    expect(await page.locator('#services tr[data-service="exchange"] td.error').textContent()).toBe('41s: demo tick failed: POST /v1/screenings answered 503 <service unavailable>');
    expect(await page.locator('.summary').textContent()).toContain('8/8 services up');

    // The invariants: a card per service, red where a check is red, with the failing line.
    const verdicts = await page.locator('section.invariants').evaluateAll((s) => Object.fromEntries(s.map((e) => [e.getAttribute('data-service'), e.getAttribute('data-verdict')])));
    expect(verdicts).toEqual({ cases: 'ok', placements: 'ok', safety: 'red', security: 'ok', rules: 'red', exchange: 'ok', financial: 'ok', inventory: 'red' });
    expect(await page.locator('section.invariants[data-service="rules"] li.red').textContent()).toContain('rule_evaluations_archive_overrun');

    // The charts: one inline SVG per demo table, each a drawn line.
    const charts = await page.locator('section.charts').evaluateAll((s) => Object.fromEntries(s.map((e) => [e.getAttribute('data-service'), e.querySelectorAll('svg.chart polyline').length])));
    expect(charts).toEqual({ cases: 2, placements: 3, safety: 3, security: 4, rules: 3, exchange: 3, financial: 3, inventory: 5 });
    expect(await page.locator('section.charts[data-service="security"] svg[data-table="audit_log"]').getAttribute('aria-label')).toBe('audit_log: 2,413 rows now, at most 22,233 during the run');

    mkdirSync(ARTIFACTS, { recursive: true });
    const png = await page.screenshot({ fullPage: true });
    writeFileSync(join(ARTIFACTS, 'status-page.png'), png);
    const size = pngSize(png);
    expect(size.width).toBe(1400);
    expect(size.height).toBeGreaterThan(900);

    // Live: the next fragment shows what changed, without a reload.
    view = fakeFleet({ seconds: 90, restarting: ['cases'] });
    await page.locator('#services tr[data-service="cases"] td.state', { hasText: 'restarting' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('.summary').textContent()).toContain('7/8 services up');
    expect(await page.locator('section.charts[data-service="security"] svg[data-table="audit_log"]').getAttribute('aria-label')).toBe('audit_log: 2,503 rows now, at most 22,233 during the run');

    // Stopped: the page keeps its last data and says the devstack is not answering.
    await server!.close();
    server = undefined;
    await page.locator('body[data-connected="false"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('#conn').textContent()).toMatch(/^the devstack is not answering/);
    expect(await page.locator('#services tbody tr').count()).toBe(8);

    // Nothing came from anywhere but the devstack, and the page's script ran clean (the
    // refused fetches after the stop are the only errors Chromium logs).
    expect(requests.filter((u) => !u.startsWith('http://127.0.0.1:'))).toEqual([]);
    expect(problems.filter((p) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(p))).toEqual([]);
    await page.close();
  }, 60_000);
});
