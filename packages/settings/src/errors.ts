/** One problem found while loading settings. */
export interface SettingsIssue {
  /** Dotted path in the typed settings, e.g. `retention.outboxDays`. */
  readonly path: string;
  /** The environment variable the value came from (or would come from, when unset). */
  readonly variable: string;
  /** The raw value as read (secrets redacted), or `undefined` when the variable is unset. */
  readonly value: string | undefined;
  /** What is wrong, for a human. */
  readonly message: string;
}

/**
 * Thrown by `loadServiceSettings` when anything is wrong. `issues` lists every problem at once,
 * so an operator fixes a deployment in one pass instead of one restart per typo.
 */
export class SettingsError extends Error {
  readonly code = 'settings_invalid';
  readonly retryable = false;
  readonly service: string;
  readonly issues: readonly SettingsIssue[];

  constructor(service: string, issues: readonly SettingsIssue[]) {
    const lines = issues.map((i) => `  - ${formatIssue(i)}`);
    super(
      `invalid settings for service "${service}" (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n${lines.join('\n')}`,
    );
    this.name = 'SettingsError';
    this.service = service;
    this.issues = issues;
  }
}

/** `path: VARIABLE="value" message`, the one line an operator reads. */
export function formatIssue(issue: SettingsIssue): string {
  const shown = issue.value === undefined ? '(unset)' : `=${JSON.stringify(issue.value)}`;
  return `${issue.path}: ${issue.variable}${shown} ${issue.message}`;
}
