/**
 * @craig/testkit (dev only): real servers for tests, benchmarks and the devstack. PostgreSQL
 * from the environment, 127.0.0.1:5432 or an embedded cluster; a fresh database per test file
 * from a migrated template; RabbitMQ from the environment; an S3-protocol server in process
 * with a conditional/fault layer in front.
 */
export { postgres, resolvePostgres, startEmbeddedPostgres, stopEmbeddedPostgres, databaseUrl, redact, TESTKIT_URL_VARIABLE, type EmbeddedOptions, type EmbeddedServer, type ResolveOptions } from './postgres.ts';
export { testDatabase, sweepStaleDatabases, type TemplateRecipe, type TestDatabase, type TestDatabaseOptions } from './database.ts';
export { rabbitmq } from './rabbitmq.ts';
export { s3, type RequestRecord, type S3Fault, type S3Options, type S3TestServer } from './s3.ts';
export { tcpReachable, freePort } from './internal/net.ts';
export { eventually } from './eventually.ts';
export { dropRoles } from './roles.ts';
export { alive, commandLine, descendants } from './processes.ts';
