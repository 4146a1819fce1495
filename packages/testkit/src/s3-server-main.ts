// Entry of the S3 test server in a child process (benchmarks measure the archiver's own memory
// and CPU, so the server must not share its process). Prints its address as one JSON line.
import { startS3Backend } from './internal/s3-backend.ts';

const bucket = process.argv[2] ?? 'craig-archive';
const conditional = process.argv[3] === 'conditional';
const directory = process.argv[4] || undefined;
const port = Number(process.argv[5] ?? 0);
const backend = await startS3Backend({ bucket, conditional, ...(directory ? { directory } : {}), ...(port ? { port } : {}) });
process.stdout.write(`${JSON.stringify({ endpoint: backend.endpoint, bucket: backend.bucket, directory: backend.directory })}\n`);
const stop = () => {
  void backend.stop().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop); // the parent went away
process.stdin.resume();
