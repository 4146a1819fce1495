// The supervisor with real child processes: a service that answers /readyz is up and stops on
// SIGTERM; one that dies is reported with its last log lines and restarted with backoff until
// it is given up on.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, freePort } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SupervisedService, summarizeLogLine } from './supervisor.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'craig-supervisor-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const SERVES = `
import { createServer } from 'node:http';
const server = createServer((req, res) => { res.statusCode = req.url === '/readyz' ? 200 : 404; res.end('ok'); });
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(JSON.stringify({ level: 30, msg: 'listening' })));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;
const CRASHES = `console.log(JSON.stringify({ level: 60, msg: 'service failed to start', err: { code: 'database_not_allowed', message: 'craig_x is not on the allow-list' } })); process.exit(3);`;

describe('SupervisedService', () => {
  it('is up once /readyz answers 200 and stops on SIGTERM without a restart', async () => {
    const main = join(dir, 'serves.mjs');
    await writeFile(main, SERVES);
    const port = await freePort();
    const events: string[] = [];
    let ready = 0;
    const s = new SupervisedService({ name: 'svc', root: ROOT, mainFile: main, env: { ...process.env, PORT: String(port) }, logFile: join(dir, 'serves.log'), port, onEvent: (l) => events.push(l), onReady: () => ready++ });
    s.start();
    await eventually(() => expect(s.status).toBe('up'), { timeoutMs: 20_000 });
    expect(ready).toBe(1);
    await s.stop();
    expect(s.status).toBe('stopped');
    expect(s.crashes).toEqual([]);
    expect(events).toEqual([]);
  });

  it('reports a crash with its log tail, restarts with backoff, and gives up after maxRestarts', async () => {
    const main = join(dir, 'crashes.mjs');
    await writeFile(main, CRASHES);
    const events: string[] = [];
    const s = new SupervisedService({ name: 'svc', root: ROOT, mainFile: main, env: process.env as Record<string, string>, logFile: join(dir, 'crashes.log'), port: await freePort(), maxRestarts: 2, backoffMs: 50, onEvent: (l) => events.push(l), onReady: () => undefined });
    s.start();
    await eventually(() => expect(s.status).toBe('failed'), { timeoutMs: 20_000 });
    expect(s.restarts).toBe(2);
    expect(s.crashes.map((c) => c.code)).toEqual([3, 3, 3]);
    expect(s.crashes[0]!.tail).toContain('fatal service failed to start: database_not_allowed craig_x is not on the allow-list');
    expect(events.filter((e) => !e.startsWith('  |'))).toEqual(['exited with code 3; restart 1/2 in 0.05 s', 'exited with code 3; restart 2/2 in 0.1 s', expect.stringMatching(/^exited with code 3; gave up after 2 restarts/)]);
    await s.stop();
  });

  it('summarizes pino lines and passes other lines through', () => {
    expect(summarizeLogLine('{"level":40,"msg":"outbox drain failed","err":{"message":"connection refused"}}')).toBe('warn outbox drain failed: connection refused');
    expect(summarizeLogLine('    at main.ts:12')).toBe('    at main.ts:12');
  });
});
