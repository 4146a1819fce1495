import { archiveSuite } from './archive.ts';
import { cleanupSuite } from './cleanup.ts';
import { drainSuite } from './drain.ts';
import { peersSuite } from './peers.ts';
import { pruneSuite } from './prune.ts';
import type { BenchSuite } from './suite.ts';

/** Every benchmark suite; each issue adds its own. */
export const SUITES: readonly BenchSuite[] = [pruneSuite, drainSuite, cleanupSuite, archiveSuite, peersSuite];
