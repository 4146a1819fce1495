// The archive benchmark's engine process: one archive cycle of `audit_log`, in a process of
// its own so its peak RSS is the archiver's alone (not the benchmark's, nor the S3 server's).
// Argument: a JSON object (database URL, store settings, batch, object bytes, gzip level, key
// prefix). Prints one JSON line: rows, bytes, objects, ms, the cycle's CPU (this process, its main
// thread, its two database sessions, the whole machine), peak and starting RSS (MB), and every
// batch's profile.
import { readFileSync } from 'node:fs';
import { createClient } from '@craig/db';
import { createArchiveEngine, defineArchiveSpec, fixpoints, registerArchiveSpecs, type BatchProfile } from '@craig/retention';
import { createObjectStore } from '@craig/store';
import { Registry } from 'prom-client';
import { followBackends, machineBusyBetween, machineCpu, threadCpuMs } from './backend-cpu.ts';

interface Args {
  readonly url: string;
  readonly store: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string };
  readonly batchSize?: number;
  readonly maxObjectBytes?: number;
  readonly level: number;
  readonly prefix: string;
}

/** The engine's backends by `application_name`: its read connection; its lease session (and that session's parallel workers, which carry its name). */
const SESSIONS = { read: 'security:archive-read', write: 'security:archive' } as const;
const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const store = createObjectStore({ backend: 's3', ...args.store, forcePathStyle: true });
const spec = defineArchiveSpec({ table: 'audit_log', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly(), ...(args.batchSize ? { batchSize: args.batchSize } : {}) });
// The owner's gate prunes only registered tables (ADR-063): register the spec as a service's
// migrations would, before the measurement starts.
const owner = createClient(args.url, { service: 'bench-archive-register', max: 1 });
await registerArchiveSpecs(owner, [spec], 90);
await owner.end();
const profiles: BatchProfile[] = [];
const engine = createArchiveEngine({ service: 'security', databaseUrl: args.url, store, specs: [spec], hotWindowDays: 90, prefix: args.prefix, registry: new Registry(), gzipLevel: args.level, ...(args.maxObjectBytes ? { maxObjectBytes: args.maxObjectBytes } : {}), onBatchProfile: (p) => void profiles.push(p) });
global.gc?.();
const startRss = process.memoryUsage.rss();
let peak = startRss;
const parts = { heapTotal: 0, external: 0, arrayBuffers: 0 };
/** VmHWM from /proc/self/status (Linux), in bytes; undefined elsewhere. */
function ownHighWaterMark(): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

const sampler = setInterval(() => {
  const now = process.memoryUsage.rss();
  peak = Math.max(peak, now);
  if (process.env.CRAIG_BENCH_MEMORY) {
    const m = process.memoryUsage();
    for (const k of ['heapTotal', 'external', 'arrayBuffers'] as const) parts[k] = Math.max(parts[k], m[k]);
  }
}, 20);
// The engine's sessions close with the cycle: their backends' CPU is followed while they live
// (ADR-080), on a connection of the benchmark's own.
const watcher = createClient(args.url, { service: 'bench-archive-watch', max: 1 });
const backends = await followBackends(watcher, [SESSIONS.write, SESSIONS.read]);
const started = performance.now();
const cpuBefore = process.cpuUsage();
const mainBefore = threadCpuMs();
const machineBefore = machineCpu();
const report = await engine.runCycle();
const ms = performance.now() - started;
// The process's CPU over the cycle, every thread (main, zlib's and V8's collectors) included.
const cpu = process.cpuUsage(cpuBefore);
const mainMs = mainBefore === undefined ? undefined : threadCpuMs()! - mainBefore;
// Every process on the machine: the engine, its backends, the S3 server, PostgreSQL's own.
const machineBusyMs = machineBusyBetween(machineBefore, machineCpu());
clearInterval(sampler);
const sessions = await backends.stop();
await watcher.end();
// The kernel's high-water mark of this process's own memory (VmHWM), which catches a peak
// between two samples. Not getrusage's maxRSS: that survives execve, so a child spawned by a
// benchmark holding 200 MB reports at least 200 MB whatever it uses itself.
peak = Math.max(peak, process.memoryUsage.rss(), ownHighWaterMark() ?? 0);
store.close();
if (process.env.CRAIG_BENCH_MEMORY) process.stderr.write(`memory peaks MB: ${JSON.stringify(Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Math.round(v / 1e6)])))}\n`);
const table = report.tables[0]!;
process.stdout.write(`${JSON.stringify({ outcome: table.outcome, error: table.error, rows: table.rows, bytes: table.bytes, objects: table.batches, ms, cpuMs: Math.round((cpu.user + cpu.system) / 1000), mainThreadCpuMs: mainMs, readSessionCpuMs: sessions?.[SESSIONS.read], writeSessionsCpuMs: sessions?.[SESSIONS.write], machineBusyMs, peakRssMb: Math.round(peak / 1e6), baselineRssMb: Math.round(startRss / 1e6), profiles })}\n`);
