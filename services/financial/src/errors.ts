import { previewValue, ServiceError } from '@craig/service';
/** Errors of the financial service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class FinancialError extends ServiceError {}

/** A request field or query parameter is malformed or out of range (`invalid_request`, 400). */
export class InvalidRequestError extends FinancialError {
  /** Where the bad value is: `period`, `lines[3].amount`, `limit` … */
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, problem: string) {
    super('invalid_request', `${field}=${previewValue(value)} ${problem}`);
    this.field = field;
    this.value = value;
  }
}

/** An import for this source and period was already recorded (`subsidy_import_exists`, 409): nothing was written. */
export class SubsidyImportExistsError extends FinancialError {
  readonly source: string;
  readonly period: string;
  readonly importId: string;
  constructor(source: string, period: string, importId: string) {
    super('subsidy_import_exists', `subsidy import ${importId} already covers source ${JSON.stringify(source)} for period ${period}; nothing was written`);
    this.source = source;
    this.period = period;
    this.importId = importId;
  }
}

/** Another sweeper of this database holds the reconcile sweep lock (`sweep_lock_held`, 409): an on-demand sweep did nothing. */
export class SweepLockHeldError extends FinancialError {
  constructor() {
    super('sweep_lock_held', 'another sweeper of the financial database holds the reconcile sweep lock; nothing was deleted', { retryable: true });
  }
}
