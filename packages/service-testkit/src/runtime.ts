// The services' tests run them as production does (docs/adr/063-runtime-roles.md): the test
// server's superuser migrates and owns the tables, the service logs in as its runtime role.

/** A service's default runtime role, as its settings profile names it (`RUNTIME_ROLE`). */
export function runtimeRoleOf(service: string): string {
  return `craig_${service.replaceAll('-', '_')}_app`;
}

/** The same database, logged in as `role` (no password: the test server trusts local logins). */
export function runtimeUrl(url: string, role: string): string {
  return Object.assign(new URL(url), { username: role, password: '' }).toString();
}
