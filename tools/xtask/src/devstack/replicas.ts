// `--replicas N`: several processes of one service, each under its own supervisor, seen by the
// rest of the devstack as one service. Every replica shares the service's database and runs
// the same sweeps; the advisory locks are what keep two of them from pruning, archiving or
// stepping a cleanup job at once, which is the point of running them.
import { ActivityTracker, mergeActivities, type Activity } from './activity.ts';
import type { Crash, ServiceStatus, SupervisedService } from './supervisor.ts';

/** Worst first: the status a set shows is its worst replica's. */
const ORDER: readonly ServiceStatus[] = ['failed', 'restarting', 'starting', 'stopping', 'stopped', 'up'];

export class ReplicaSet {
  private next = 0;
  /** One activity tracker per replica: each process's counters restart on their own. */
  readonly trackers: readonly ActivityTracker[];

  constructor(readonly replicas: readonly SupervisedService[]) {
    if (replicas.length === 0) throw new RangeError('a replica set needs at least one replica');
    this.trackers = replicas.map(() => new ActivityTracker());
  }

  get name(): string {
    return this.replicas[0]!.name;
  }
  /** `up` only when every replica is. */
  get status(): ServiceStatus {
    return ORDER.find((s) => this.replicas.some((r) => r.status === s)) ?? 'stopped';
  }
  get restarts(): number {
    return this.replicas.reduce((n, r) => n + r.restarts, 0);
  }
  get crashes(): readonly Crash[] {
    return this.replicas.flatMap((r) => r.crashes);
  }
  get options(): SupervisedService['options'] {
    return this.replicas[0]!.options;
  }
  /** Replicas up now. */
  get up(): number {
    return this.replicas.filter((r) => r.status === 'up').length;
  }
  /** A replica that is up, in turn, so demo traffic spreads over all of them. */
  get url(): string {
    const up = this.replicas.filter((r) => r.status === 'up');
    const pick = up.length ? up[this.next++ % up.length]! : this.replicas[0]!;
    return pick.url;
  }

  start(): void {
    for (const r of this.replicas) r.start();
  }

  async stop(timeoutMs?: number): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.stop(timeoutMs)));
  }

  /** The service's activity over every replica. */
  activity(): Activity {
    return mergeActivities(this.trackers.map((t) => t.activity()));
  }
}
