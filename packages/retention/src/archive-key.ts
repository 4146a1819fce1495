const SEGMENT = /^[a-z0-9][a-z0-9_-]*$/;
const PREFIX = /^[a-z0-9][a-z0-9-]*(\/[a-z0-9][a-z0-9-]*)*$/;

export interface ArchiveKeyParts {
  readonly prefix: string;
  readonly service: string;
  readonly table: string;
  /** The batch's oldest row timestamp as PostgreSQL prints it in UTC (`2024-03-01 12:00:00.5+00`). */
  readonly oldestRow: string;
  readonly archiveId: string;
}

/**
 * `<prefix>/<service>/<table>/<yyyy>/<mm>/<archive_id>.ndjson.gz`, where yyyy/mm is the UTC
 * month of the batch's oldest row: the objects of a period sit together, and the ledger says
 * exactly which rows each holds.
 */
export function archiveKey(parts: ArchiveKeyParts): string {
  if (!PREFIX.test(parts.prefix)) throw new TypeError(`archive prefix must be slash-separated lower-case segments: ${JSON.stringify(parts.prefix)}`);
  for (const [what, value] of [['service', parts.service], ['table', parts.table]] as const) {
    if (!SEGMENT.test(value)) throw new TypeError(`archive ${what} must be a lower-case key segment: ${JSON.stringify(value)}`);
  }
  // Infinite or BC timestamps have no calendar month; they file under 0000/00.
  const month = /^(\d{4})-(\d{2})-/.exec(parts.oldestRow);
  const [yyyy, mm] = month ? [month[1]!, month[2]!] : ['0000', '00'];
  return `${parts.prefix}/${parts.service}/${parts.table}/${yyyy}/${mm}/${parts.archiveId}.ndjson.gz`;
}

/** Where every archive object of a service (or one of its tables) lives. */
export function archivePrefixOf(prefix: string, service: string, table?: string): string {
  return `${prefix}/${service}/${table ? `${table}/` : ''}`;
}
