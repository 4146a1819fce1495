// The benchmarks' concurrent writers run in a child process (writer-main.ts): see there why.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TimedSample } from './measure.ts';

export type WriterSpec =
  /** One autocommit INSERT into `table` (our event_outbox, or a peer's table of its shape), 5 ms apart. */
  | { readonly kind: 'outbox'; readonly url: string; readonly table?: string }
  /** An upsert of `page` existing items (`w-1`…`w-<items>`) into one library, through the admission triggers, 2 ms apart. */
  | { readonly kind: 'items'; readonly url: string; readonly role: string; readonly serverId: number; readonly libraryId: number; readonly page: number; readonly items: number };

export interface RemoteWriter {
  /** Ends the writer; its samples, `at` on this process's performance.now() clock. */
  stop(): Promise<TimedSample[]>;
}

const MAIN = fileURLToPath(new URL('./writer-main.ts', import.meta.url));

/** Start a writer process; resolves once it is connected and writing. */
export async function startWriter(spec: WriterSpec): Promise<RemoteWriter> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
  });
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: string) => {
      out += chunk;
      if (out.startsWith('ready\n')) {
        out = out.slice('ready\n'.length);
        child.stdout.off('data', onData);
        child.stdout.on('data', (c: string) => void (out += c));
        resolve();
      }
    };
    child.stdout.on('data', onData);
    exited.then((code) => reject(new Error(`the writer process exited (${code}) before it was ready`)), reject);
  });
  return {
    async stop() {
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(`the writer process exited with ${code}`);
      const origin = performance.timeOrigin;
      return (JSON.parse(out.trim()) as TimedSample[]).map((s) => ({ ...s, at: s.at - origin }));
    },
  };
}
