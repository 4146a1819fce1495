import { previewValue, ServiceError } from '@craig/service';

/** A query parameter is malformed, repeated, unknown or out of range (`invalid_request`, 400). */
export { InvalidQueryError } from '@craig/service';
/** Errors of the rules service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class RulesError extends ServiceError {}


/** A request body (or path parameter) is malformed: `field` is its path (`snapshotId`, `name`). */
export class InvalidBodyError extends RulesError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, problem: string) {
    super('invalid_request', `${field}=${previewValue(value)} ${problem}`);
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
    super('invalid_request', `${field}=${previewValue(value)} ${problem}`);
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
    super('not_found', `${resource} ${previewValue(id)} does not exist`);
    this.resource = resource;
    this.id = id;
  }
}

/**
 * The offending value as the error carries it: itself when small, a bounded preview otherwise (a
 * refusal never echoes a megabyte, nor walks a 100,000-deep array: the preview stops at three levels).
 */
function boundedValue(value: unknown): unknown {
  const preview = previewValue(value, 1000);
  return preview.length >= 1000 || preview.includes('"[array]"') || preview.includes('"[object]"') ? preview : value;
}
