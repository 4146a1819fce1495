import type { Writable } from 'node:stream';

/** A progress bar on a terminal; on anything else, a line at each tenth and at the end. */
export interface Progress {
  update(done: number, detail?: string): void;
  finish(detail?: string): void;
}

const WIDTH = 24;

export function progressBar(stream: Writable & { isTTY?: boolean }, label: string, total: number, unit: string): Progress {
  const tty = stream.isTTY === true;
  let lastTenth = -1;
  let finished = false;
  const render = (done: number, detail?: string) => {
    const fraction = total === 0 ? 1 : Math.min(1, done / total);
    const filled = Math.round(fraction * WIDTH);
    return `${label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${done}/${total} ${unit}${detail ? `  ${detail}` : ''}`;
  };
  return {
    update(done, detail) {
      if (finished) return;
      if (tty) {
        stream.write(`\r${render(done, detail)}\u001b[K`);
        return;
      }
      const tenth = total === 0 ? 10 : Math.floor((done / total) * 10);
      if (tenth > lastTenth && done < total) {
        lastTenth = tenth;
        stream.write(`${render(done, detail)}\n`);
      }
    },
    finish(detail) {
      if (finished) return;
      finished = true;
      stream.write(`${tty ? '\r' : ''}${render(total, detail)}${tty ? '\u001b[K' : ''}\n`);
    },
  };
}

/** 1234567 → "1.2 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return `${value.toFixed(1)} ${units[i]}`;
}
