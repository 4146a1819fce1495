/** Errors of the security service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class SecurityError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** A query parameter of the audit API is malformed or out of range (`invalid_request`, 400). */
export class InvalidQueryError extends SecurityError {
  readonly parameter: string;
  readonly value: unknown;
  constructor(parameter: string, value: unknown, problem: string) {
    super('invalid_request', `query parameter ${parameter}=${JSON.stringify(value)} ${problem}`);
    this.parameter = parameter;
    this.value = value;
  }
}
