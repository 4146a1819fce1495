/** The worker loop's tick: drain, then (every {@link PRUNE_EVERY_TICKS} ticks) prune. */
export const POLL_INTERVAL_MS = 1000;
/** Ticks between prune cycles: with {@link POLL_INTERVAL_MS} that is one hour (seed 000 Step 4). */
export const PRUNE_EVERY_TICKS = 3600;

/**
 * The tick a service's worker starts at, in [0, everyTicks): FNV-1a of the service name, so
 * replicas of one service share a phase (and the advisory lock picks one of them) while the
 * fleet's services spread over the hour instead of all pruning at tick 0. Deterministic: no
 * randomness, the same name always gives the same phase.
 */
export function pruneJitter(service: string, everyTicks: number = PRUNE_EVERY_TICKS): number {
  if (!Number.isInteger(everyTicks) || everyTicks < 1) throw new RangeError(`everyTicks must be a positive integer: ${everyTicks}`);
  return cadencePhase(service, everyTicks);
}

/**
 * A deterministic phase in [0, span) for `seed` (FNV-1a): what {@link pruneJitter} and the
 * archive runner's first cycle use, so a service's replicas align and the fleet spreads out.
 */
export function cadencePhase(seed: string, span: number): number {
  if (!Number.isInteger(span) || span < 1) throw new RangeError(`span must be a positive integer: ${span}`);
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(seed, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % span;
}
