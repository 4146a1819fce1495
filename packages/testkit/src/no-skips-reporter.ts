// A vitest reporter that fails the run when any test was skipped or left as a todo: a skipped
// integration test must never be counted as a pass (the servers are always there in CI).
import type { Reporter, TestModule } from 'vitest/node';

export default class NoSkipsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const skipped: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        if (test.result().state === 'skipped') skipped.push(`${module.moduleId} > ${test.fullName}`);
      }
    }
    if (skipped.length === 0) return;
    process.stderr.write(`\n${skipped.length} test(s) skipped; a skipped test is a failure here:\n${skipped.map((s) => `  - ${s}`).join('\n')}\n`);
    process.exitCode = 1;
  }
}
