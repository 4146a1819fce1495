import { ServiceError } from '@craig/service';

/** A query parameter is malformed, repeated, unknown or out of range (`invalid_request`, 400). */
export { InvalidQueryError } from '@craig/service';
/** Errors of the exchange service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class ExchangeError extends ServiceError {}


/** No send job has this id (`send_job_not_found`, 404). */
export class SendJobNotFoundError extends ExchangeError {
  readonly jobId: string;
  constructor(jobId: string) {
    super('send_job_not_found', `send job ${jobId} does not exist`);
    this.jobId = jobId;
  }
}

/** The send job has finished (sent, failed, cancelled) and can no longer be cancelled (`send_job_terminal`, 409). */
export class SendJobTerminalError extends ExchangeError {
  readonly jobId: string;
  readonly status: string;
  constructor(jobId: string, status: string) {
    super('send_job_terminal', `send job ${jobId} is ${status}: a finished job is never changed`);
    this.jobId = jobId;
    this.status = status;
  }
}

/** No screening run has this id (`screening_not_found`, 404). */
export class ScreeningNotFoundError extends ExchangeError {
  readonly screeningId: string;
  constructor(screeningId: string) {
    super('screening_not_found', `screening run ${screeningId} does not exist`);
    this.screeningId = screeningId;
  }
}

/**
 * The run is completed and its `as_of` is past the freshness horizon: it is at its archive
 * fixpoint, and the writer-side refusal keeps it unchanged (`screening_past_freshness`, 409).
 */
export class ScreeningPastFreshnessError extends ExchangeError {
  readonly screeningId: string;
  readonly asOf: string;
  readonly freshnessMonths: number;
  constructor(screeningId: string, asOf: string, freshnessMonths: number) {
    super('screening_past_freshness', `screening run ${screeningId} completed as of ${asOf}, more than ${freshnessMonths} months ago: it is final and can no longer be invalidated`);
    this.screeningId = screeningId;
    this.asOf = asOf;
    this.freshnessMonths = freshnessMonths;
  }
}
