/** No case has this id (code `case_not_found`, HTTP 404). */
export class CaseNotFoundError extends Error {
  readonly code = 'case_not_found';
  readonly retryable = false;
  constructor(readonly caseId: string) {
    super(`no case ${caseId}`);
  }
}

/** The case was closed before (code `case_already_closed`, HTTP 409); names when. */
export class CaseAlreadyClosedError extends Error {
  readonly code = 'case_already_closed';
  readonly retryable = false;
  constructor(
    readonly caseId: string,
    readonly closedAt: string,
  ) {
    super(`case ${caseId} was already closed at ${closedAt}`);
  }
}
