import { Writable } from 'node:stream';

/** A Writable that keeps what was written, for asserting on command output in tests. */
export function capture(): Writable & { text(): string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return Object.assign(stream, { text: () => chunks.join('') });
}
