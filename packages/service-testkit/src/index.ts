/**
 * @craig/service-testkit (dev only): what the services' tests share. A service built by its own
 * `createService` (passed in as `build`) on a database copied from its migration template, a
 * transport on scratch resources (its own PostgreSQL bus database, or its own RabbitMQ exchange,
 * deleted at the end), a fresh metrics registry and, for archivers, the testkit's S3 server; a
 * producer service; request and metric helpers; and a service's `main.ts` run as a child process.
 *
 * Not in `@craig/testkit`: that package is a dev dependency of db, mq and store, so it cannot
 * depend on them; this one does, and sits above them.
 */
export { ADMIN_TOKEN, archiveHarness, caseConsumerHarness, serviceHarness, type ArchiveHarness, type CaseConsumerHarness, type BuildContext, type CommonDeps, type HarnessOptions, type ServiceHarness } from './harness.ts';
export { deleteRabbitMqExchange, testTransport, type TestTransport, type TestTransportOptions, type TransportKind } from './transport.ts';
export { call, caseEventBody, caseEventDelivery, counterValue, producer, type Json, type Method, type Producer } from './fixtures.ts';
export { startFleet, type Fleet, type FleetMember, type FleetService } from './flow.ts';
export { demoContext, jsonStub, listenLocally } from './demo.ts';
export { archiveEngineOn, crashAfter, expectArchiveRunGuarded, expectBatchAnnouncements, expectEventAdminRoutes, expectLedger, expectNothingArchived, expectRefusedQuery, expectServiceEndpoints, expectTransportSweep, startTimerLoop } from './checks.ts';
export { objectStoreEnv, runToExit, serviceEnv, startMain, stoppedSteps, waitReady, type MainProcess } from './main-process.ts';
/** Property tests of a service's whole HTTP surface (fast-check): every route, hostile input, typed refusals, the database unchanged when refused. */
/** fast-check itself, so a service's fuzz test builds its route shapes without a dependency of its own. */
export { default as fc } from 'fast-check';
export { COMMON_SHAPES, databaseFingerprint, describeHttpFuzz, field, formatReport, fuzzRoute, fuzzRuns, fuzzSeed, hostileScalar, routesWithShapes, shapedObject, type FuzzRouteReport, type FuzzTarget, type HttpSurface, type RouteShape, type RouteShapes } from './fuzz.ts';
