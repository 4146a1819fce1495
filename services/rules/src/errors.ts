import { ServiceError } from '@craig/service';

/** A query parameter is malformed, repeated, unknown or out of range (`invalid_request`, 400). */
export { InvalidQueryError } from '@craig/service';
/** Errors of the rules service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class RulesError extends ServiceError {}


/** A request body (or path parameter) is malformed: `field` is its path (`snapshotId`, `name`). */
export class InvalidBodyError extends RulesError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, problem: string) {
    super('invalid_request', `${field}=${JSON.stringify(value) ?? 'undefined'} ${problem}`);
    this.field = field;
    this.value = boundedValue(value);
  }
}

/**
 * A rule set is refused (`invalid_request`, 400): `field` is the path of the offending value
 * (`rules[2].when.op`), `ruleIndex` the rule it belongs to (absent for the array itself).
 */
export class InvalidRuleSetError extends RulesError {
  readonly field: string;
  readonly ruleIndex: number | undefined;
  readonly value: unknown;
  constructor(field: string, ruleIndex: number | undefined, value: unknown, problem: string) {
    super('invalid_request', `${field}=${truncatedJson(value)} ${problem}`);
    this.field = field;
    this.ruleIndex = ruleIndex;
    this.value = boundedValue(value);
  }
}

/** A rule set, snapshot or evaluation that does not exist (`not_found`, 404). */
export class NotFoundError extends RulesError {
  readonly resource: string;
  readonly id: string;
  constructor(resource: string, id: string) {
    super('not_found', `${resource} ${JSON.stringify(id)} does not exist`);
    this.resource = resource;
    this.id = id;
  }
}

function truncatedJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The offending value as the error carries it: itself when small, its truncated JSON otherwise (a refusal never echoes a megabyte). */
function boundedValue(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text !== undefined && text.length > 1000 ? `${text.slice(0, 1000)}…` : value;
}
