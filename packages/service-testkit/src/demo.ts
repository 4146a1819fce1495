import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN } from './harness.ts';

/** Listen on a free local port and return the base URL (`http://127.0.0.1:<port>`). */
export async function listenLocally(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** A stand-in HTTP server answering every request with `body` as JSON (another service a demo reads from). */
export async function jsonStub(body: unknown): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify(body)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

/** A demo tick's context (`DemoContext` of @craig/service): `urls` by service name, a fixed `random`. */
export function demoContext(options: { readonly urls: Readonly<Record<string, string>>; readonly random?: number; readonly tick?: number; readonly signal?: AbortSignal }) {
  return {
    urlOf: (service: string): string | undefined => options.urls[service],
    adminToken: ADMIN_TOKEN,
    signal: options.signal ?? new AbortController().signal,
    random: () => options.random ?? 0.5,
    tick: options.tick ?? 0,
  };
}
