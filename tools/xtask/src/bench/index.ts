import { archiveSuite } from './archive.ts';
import type { BenchSuite } from './suite.ts';

/** Every benchmark suite; each issue adds its own. */
export const SUITES: readonly BenchSuite[] = [archiveSuite];
