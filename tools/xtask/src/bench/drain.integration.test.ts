import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PUBLISH_STATEMENT_BYTES } from '@craig/mq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask bench drain (small)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('drains to both transports beside their bare ceilings in alternating rounds (the bus cleared between contenders) and writes the result', async () => {
    const out = capture();
    const err = capture();
    // Two rounds: the second one runs on a bus the first filled and cleared (delivery counts reference deliveries).
    expect(await runXtask(['bench', 'drain', '--events', '3000', '--batch', '500', '--rounds', '2'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/drain.json'), 'utf8'));
    expect(result).toMatchObject({ suite: 'drain', rounds: 2, events: 3000, walCompression: 'lz4', targets: { rabbitmq: 0.85, postgresBus: 0.8 } });
    for (const t of [result.rabbitmq, result.postgresBus]) {
      expect(t.perRound.map((r: { round: number; first: string }) => [r.round, r.first])).toEqual([
        [1, 'ours'],
        [2, 'baseline'],
      ]);
      expect(t.ratioSpread).toMatchObject({ n: 2, median: t.ratio });
      expect(t.ratio).toBeGreaterThan(0);
      expect(t.ours).toMatchObject({ batchSize: 500, lanes: 2 });
    }
    expect(result.ratio).toBe(result.rabbitmq.ratio);
    expect(result.rabbitmq.ceiling.method).toContain('same headers');
    expect(result.rabbitmq.bareWithoutHeaders.eventsPerSec.n).toBe(2);
    expect(result.postgresBus.bareWithoutHeaders.eventsPerSec.n).toBe(2);
    expect(result.rabbitmq.perRound.every((r: { bareNoHeadersEventsPerSec: number }) => r.bareNoHeadersEventsPerSec > 0)).toBe(true);
    expect(result.rabbitmq.brokerVersion).toMatch(/^\d+\./);
    // Where each bus contender's CPU went (PostgreSQL runs on this host): every process did work,
    // and each total is the sum of its parts.
    const cpu = result.postgresBus.cpuMsPer1000Events;
    for (const part of [cpu.ours.outboxSessions, cpu.ours.busSession, cpu.ours.node, cpu.ceiling.session, cpu.ceiling.node]) expect(part).toBeGreaterThan(0);
    for (const r of result.postgresBus.perRound) {
      const { ours, ceiling } = r.cpuMsPer1000Events;
      expect(ours.total).toBeCloseTo(ours.outboxSessions + ours.busSession + ours.node, 0);
      expect(ceiling.total).toBeCloseTo(ceiling.session + ceiling.node, 0);
    }
    // The bound: every core on our drain alone, at its median CPU per event.
    expect(result.postgresBus.cpuBound.oursEventsPerSec).toBe(Math.round((result.machine.cores * 1_000_000) / cpu.ours.total));
    expect(result.postgresBus.cpuBound.ratio).toBeCloseTo(result.postgresBus.cpuBound.oursEventsPerSec / result.postgresBus.ceiling.eventsPerSec.median, 2);
    expect(out.text()).toMatch(/CPU ms per 1,000 events \(medians\): our drain [\d.]+ \(outbox sessions [\d.]+, bus session [\d.]+, Node [\d.]+\); bare INSERT [\d.]+/);
    // Each transport's warm-up round ran both contenders first and is not among the rounds.
    expect(err.text().match(/(rabbitmq|postgres bus) warm-up round \(not counted\): ours \d+ ms, the bare ceiling \d+ ms/g)).toEqual([expect.stringContaining('rabbitmq'), expect.stringContaining('postgres bus')]);
    // …and its rates are in the JSON, beside the rounds, as the log gave its times.
    for (const [t, name] of [[result.rabbitmq, 'rabbitmq'], [result.postgresBus, 'postgres bus']] as const) {
      const [, oursMs, bareMs] = new RegExp(`${name} warm-up round \\(not counted\\): ours (\\d+) ms, the bare ceiling (\\d+) ms`).exec(err.text())!;
      // The log rounds to whole ms: within 2 %.
      expect(Math.abs((t.warmUpRound.oursEventsPerSec * Number(oursMs)) / 3_000_000 - 1)).toBeLessThan(0.02);
      expect(Math.abs((t.warmUpRound.ceilingEventsPerSec * Number(bareMs)) / 3_000_000 - 1)).toBeLessThan(0.02);
    }
    // The backends' minor page faults: the warm-up's backends are new, so they map memory.
    expect(result.postgresBus.warmUpRound.cpuMsPer1000Events.ours.backendPageFaults).toBeGreaterThan(0);
    expect(result.postgresBus.warmUpRound.cpuMsPer1000Events.ceiling.backendPageFaults).toBeGreaterThan(0);
    expect(cpu.ours.backendPageFaults).toBeGreaterThanOrEqual(0);
    expect(out.text()).toMatch(/backend page faults per 1,000 events \(medians\): our drain's [\d.]+, the bare INSERT's [\d.]+; each process's own: [\d.]+ and [\d.]+/);
    // Each contender runs in a process of its own: its Node figures are that process's, so they
    // include its page faults (a fresh process maps its heap as it grows).
    expect(result.postgresBus.warmUpRound.cpuMsPer1000Events.ours.nodePageFaults).toBeGreaterThan(0);
    expect(result.postgresBus.warmUpRound.cpuMsPer1000Events.ceiling.nodePageFaults).toBeGreaterThan(0);
    expect(result.postgresBus.ceiling.method).toContain(`split at ${PUBLISH_STATEMENT_BYTES} bytes`);
    expect(result.load.before).toHaveLength(3);
    expect(out.text()).toContain('postgres bus: bare multi-row INSERT');
    // Two rounds on each transport, each on fresh copies: 22 s in a loaded CI run.
  }, 120_000);

  it('refuses a transport it does not know, naming it', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'drain', '--transport', 'kafka'], { root, stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--transport');
  });

  it('refuses a wal compression it does not know, naming it and the choices', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'drain', '--wal-compression', 'gzip'], { root, stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--wal-compression must be off or one of lz4, zstd, pglz: gzip');
  });
});
