// Text measured the way a terminal lays it out: the live view fits every line to the window,
// because a line the terminal wraps moves everything under it and the in-place redraw tears.

/** Control characters (and so escape sequences) from a service's log would move the cursor. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\t/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

function charWidth(cp: number): number {
  // Combining marks, zero-width spaces and joiners, variation selectors.
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || cp === 0x2060 || (cp >= 0xfe00 && cp <= 0xfe0f)) return 0;
  // East Asian wide and fullwidth forms, and emoji: two cells.
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  )
    return 2;
  return 1;
}

/** Terminal cells the (printable) text takes. */
export function displayWidth(text: string): number {
  let w = 0;
  for (const ch of text) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/** The text cut to at most `width` cells, ending in "…" when something was cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(text) <= width) return text;
  let out = '';
  let w = 0;
  for (const ch of text) {
    const cw = charWidth(ch.codePointAt(0)!);
    if (w + cw > width - 1) break;
    out += ch;
    w += cw;
  }
  return `${out}…`;
}

/** Padded with spaces to `width` cells (left-aligned, or right-aligned with `right`). */
export function pad(text: string, width: number, right = false): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(text)));
  return right ? fill + text : text + fill;
}

/**
 * The text as lines of at most `width` cells, broken at spaces where it can be (a word longer
 * than a line is split), the continuation lines indented by `indent` cells: what the terminal
 * would have wrapped, counted before it is drawn.
 */
export function wrap(text: string, width: number, indent = 0): string[] {
  if (width <= indent + 1) return [truncate(text, width)];
  const lines: string[] = [];
  let line = '';
  const room = () => width - displayWidth(line);
  const fresh = () => line.trim() === '';
  for (const word of text.split(/( +)/)) {
    if (word === '') continue;
    if (displayWidth(word) <= room()) {
      line += word;
      continue;
    }
    if (/^ +$/.test(word)) {
      lines.push(line);
      line = ' '.repeat(indent);
      continue;
    }
    if (!fresh()) {
      lines.push(line.trimEnd());
      line = ' '.repeat(indent);
    }
    // A word wider than a whole line: split it where the line ends.
    for (const ch of word) {
      if (displayWidth(ch) > room()) {
        lines.push(line);
        line = ' '.repeat(indent);
      }
      line += ch;
    }
  }
  lines.push(line);
  return lines.map((l) => l.trimEnd());
}
