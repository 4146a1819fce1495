// `GET /status.json`: the status page's data for scripts (`curl -s …/status.json | jq`), the
// same rows, charts' series and verdicts as the page, as plain JSON.
import type { Activity } from './activity.ts';
import type { StatusView } from './status-page.ts';
import { allUp, restartsOf, stateText, type ServiceRow } from './view-rows.ts';

const object = (m: ReadonlyMap<string, number>) => Object.fromEntries(m);

function activityJson(a: Activity) {
  return {
    published: a.published,
    pending: a.pending ?? null,
    parked: a.parked ?? null,
    pruned: object(a.pruned),
    latched: a.latched,
    archivedRows: object(a.archivedRows),
    archiveBatches: object(a.archiveBatches),
    cleanupJobs: object(a.cleanupJobs),
    cleanupSteps: a.cleanupSteps,
    cleanupDeleted: a.cleanupDeleted,
  };
}

function serviceJson(row: ServiceRow, view: StatusView) {
  return {
    name: row.name,
    absent: row.absent ?? null,
    state: stateText(row),
    up: allUp(row),
    restarts: restartsOf(row),
    processes: row.processes,
    activity: row.activity ? activityJson(row.activity) : null,
    counts: Object.fromEntries([...row.counts].map(([t, n]) => [t, n ?? null])),
    history: Object.fromEntries([...view.history(row.name)].map(([t, points]) => [t, points.map(([s, n]) => [s, n ?? null])])),
    lastError: row.lastError ? { atSeconds: row.lastError.atSeconds ?? null, message: row.lastError.message } : null,
    invariants: row.invariants ?? null,
  };
}

export function statusJson(view: StatusView) {
  return { elapsedSeconds: view.elapsedSeconds, services: view.rows.map((r) => serviceJson(r, view)), events: view.events };
}
