/** Edit distance, for "did you mean" suggestions on unknown keys. */
export function levenshtein(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The closest candidate within a distance that still reads as a typo, else undefined. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  // The distance is at least the difference in length, so a word half again as long as every
  // candidate cannot be within the threshold: skip the O(n·m) work (an env key can be huge).
  const longest = Math.max(0, ...candidates.map((c) => c.length));
  if (word.length > longest * 1.5 + 3) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = levenshtein(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(3, Math.floor(word.length / 3)) ? best : undefined;
}
