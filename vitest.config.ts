// One vitest run for the whole workspace: every package, service and tool is a project, and
// every test (unit and integration) runs against the real servers the testkit resolves.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

const root = import.meta.dirname;
const projects = ['packages', 'services', 'tools'].flatMap((group) => {
  const dir = join(root, group);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'package.json')))
    .map((name) => {
      const pkg = JSON.parse(readFileSync(join(dir, name, 'package.json'), 'utf8')) as { name: string };
      return {
        extends: true as const,
        test: { name: pkg.name, root: join(dir, name), include: ['src/**/*.test.ts', 'test/**/*.test.ts'] },
      };
    });
});

export default defineConfig({
  test: {
    projects,
    globalSetup: [join(root, 'packages/testkit/src/vitest-global-setup.ts')],
    reporters: ['default', join(root, 'packages/testkit/src/no-skips-reporter.ts')],
    pool: 'forks',
    // s3rver's list continuation tokens use DES, which Node 20's OpenSSL 3 keeps in the legacy provider.
    execArgv: ['--openssl-legacy-provider'],
    // Tests wait on PostgreSQL and RabbitMQ far more than on the CPU; each file holds a few
    // connections, so this stays well under the server's 100.
    maxWorkers: 4,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
