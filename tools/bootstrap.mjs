#!/usr/bin/env node
// `node tools/bootstrap.mjs <pnpm arguments>`: what `npm run devstack` and `npm test` call, so a
// machine with only Node and npm runs craig. It finds pnpm at the version `packageManager`
// pins (the one on PATH, else a project-local copy in .tools/, installed from the npm registry
// with npm on first use), runs `pnpm install --frozen-lockfile` (a no-op of a few milliseconds
// once node_modules matches the lockfile), then `pnpm <arguments>` with the same exit code.
//
// Plain Node, no dependencies: it runs before anything is installed. Corepack is not used: the
// corepack bundled with Node 20 refuses pnpm 12 ("No compatible signature found in package
// metadata"), and Node 25 no longer ships it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => process.stderr.write(`bootstrap: ${line}\n`);
const fail = (line) => {
  say(line);
  process.exit(1);
};

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const minNode = /^>=(\d+)\.(\d+)$/.exec(pkg.engines?.node ?? '');
const [major, minor] = process.versions.node.split('.').map(Number);
if (minNode && (major < Number(minNode[1]) || (major === Number(minNode[1]) && minor < Number(minNode[2])))) {
  fail(`Node ${process.versions.node} is too old: craig needs Node ${pkg.engines.node} (package.json "engines")`);
}
const pinned = /^pnpm@(\d+\.\d+\.\d+)$/.exec(pkg.packageManager ?? '')?.[1];
if (!pinned) fail(`package.json "packageManager" must be pnpm@<x.y.z>, got ${JSON.stringify(pkg.packageManager)}`);

/** `<command> --version`, or undefined when it does not run. */
function versionOf(command, args = []) {
  const r = spawnSync(command, [...args, '--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

const local = join(root, '.tools', `pnpm-${pinned}`);
const localBin = join(local, 'node_modules', '.bin', 'pnpm');

/**
 * The pnpm to run: the one on PATH when it is the pinned version (people who have pnpm keep
 * theirs), else the project-local copy, installed now when absent. It goes into a scratch
 * directory renamed into place once it runs, so an interrupted install is never mistaken for a
 * good one.
 */
function findPnpm() {
  if (versionOf('pnpm') === pinned) return 'pnpm';
  if (existsSync(localBin) && versionOf(localBin) === pinned) return localBin;
  // Run by `npm run`: the same npm (its CLI under this Node); else the npm on PATH.
  const npm = process.env.npm_execpath?.endsWith('npm-cli.js') ? [process.execPath, process.env.npm_execpath] : ['npm'];
  const scratch = `${local}.partial-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  say(`pnpm ${pinned} (package.json "packageManager") is not on PATH: installing it into ${join('.tools', `pnpm-${pinned}`)} with npm ...`);
  const started = performance.now();
  const r = spawnSync(npm[0], [...npm.slice(1), 'install', '--prefix', scratch, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', `pnpm@${pinned}`], { stdio: 'inherit' });
  if (r.status !== 0) {
    rmSync(scratch, { recursive: true, force: true });
    fail(`npm could not install pnpm@${pinned} (${r.error ? r.error.message : `exit ${r.status}`}); is the npm registry reachable?`);
  }
  const got = versionOf(join(scratch, 'node_modules', '.bin', 'pnpm'));
  if (got !== pinned) {
    rmSync(scratch, { recursive: true, force: true });
    fail(`the pnpm npm installed answers ${JSON.stringify(got)}, not ${pinned}`);
  }
  rmSync(local, { recursive: true, force: true });
  renameSync(scratch, local);
  say(`pnpm ${pinned} installed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return localBin;
}

const pnpm = findPnpm();
// Install what the lockfile says (the first run downloads everything; later runs check and
// return). --frozen-lockfile: a lockfile that does not match package.json is an error, never
// silently rewritten.
// Its output goes to stderr: stdout stays the command's own (`--json` output, say).
const install = spawnSync(pnpm, ['install', '--frozen-lockfile'], { cwd: root, stdio: ['ignore', 2, 2] });
if (install.status !== 0) fail(`pnpm install --frozen-lockfile failed (${install.error ? install.error.message : `exit ${install.status}`})`);

const args = process.argv.slice(2);
if (args.length === 0) process.exit(0);
const child = spawn(pnpm, args, { cwd: process.cwd(), stdio: 'inherit' });
// A terminal's Ctrl-C reaches the whole foreground group, pnpm and what it runs included: let
// them stop in their own order (the devstack stops its services first) and exit with them. A
// signal sent to this process alone is passed on.
process.on('SIGINT', () => {});
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => fail(`could not run ${pnpm}: ${error.message}`));
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
