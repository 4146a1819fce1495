/** No safety report has this id (code `safety_report_not_found`, HTTP 404). */
export class SafetyReportNotFoundError extends Error {
  readonly code = 'safety_report_not_found';
  readonly retryable = false;
  constructor(readonly reportId: string) {
    super(`no safety report ${reportId}`);
  }
}
