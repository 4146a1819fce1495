// Row counts of each service's demo tables over the run, for the status page's charts. Bounded:
// past `maxPoints` a series keeps every other point, so a long run is still drawn end to end,
// its older part at a coarser step.

/** [seconds into the run, rows] (rows undefined: the count failed then). */
export type Point = readonly [number, number | undefined];

export class CountHistory {
  private readonly series = new Map<string, Map<string, Point[]>>();

  constructor(private readonly maxPoints = 300) {}

  /** One observation of a service's counts. */
  record(service: string, atSeconds: number, counts: ReadonlyMap<string, number | undefined>): void {
    const tables = this.series.get(service) ?? new Map<string, Point[]>();
    this.series.set(service, tables);
    for (const [table, n] of counts) {
      const points = tables.get(table) ?? [];
      tables.set(table, points);
      points.push([atSeconds, n]);
      if (points.length > this.maxPoints) {
        // Every other point of all but the newest, which stays exact.
        const newest = points.pop()!;
        const kept = points.filter((_, i) => i % 2 === 0);
        points.splice(0, points.length, ...kept, newest);
      }
    }
  }

  /** A service's series by table (empty when nothing was recorded). */
  of(service: string): ReadonlyMap<string, readonly Point[]> {
    return this.series.get(service) ?? new Map();
  }
}
