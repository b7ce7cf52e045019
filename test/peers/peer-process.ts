// What the test peers (`npm run peer:mongo`, `npm run peer:mail`) share: Go built into a cache under
// ~/.cache/tool-server, one detached process per checkout whose state (pid, data folder, URLs) is a file
// outside the checkout, and stopping it (SIGTERM, then SIGKILL) without ever signalling a recycled pid.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PeerState {
  pid: number;
  dataDir: string;
  binary: string;
}

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const STOP_TIMEOUT_MS = 10_000;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'tool-server');
}

export function goVersion(): string | undefined {
  try {
    return execFileSync('go', ['version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** A peer cannot be built or started: the message says why and what to do. */
export class PeerError extends Error {}

/**
 * Runs `go <args>` (GOTOOLCHAIN=local: an older Go says so instead of downloading a toolchain) writing
 * `partial`, then moves it to `binary` atomically: a concurrent start sees the whole binary or none. `name`
 * (`mongo`, `mail`) names its messages.
 */
export async function goBuild(
  name: string,
  args: string[],
  o: { cwd: string; env?: NodeJS.ProcessEnv; partial: string; binary: string; what: string },
): Promise<void> {
  const go = goVersion();
  if (!go)
    throw new PeerError(
      `Go is not installed (no \`go\` on PATH). ${o.what} is built from the Go module proxy: install Go 1.24 or newer (https://go.dev/dl/ or ` +
        'your package manager) and run this again. Without it `npm test` skips the tests that need this peer (and fails under CI=true).',
    );
  console.error(`peer:${name}: building ${o.what} with ${go} (once; a few minutes the first time, seconds with the module cache warm)`);
  const started = Date.now();
  const code = await new Promise<number | null>((resolve) => {
    const build = spawn('go', args, {
      cwd: o.cwd,
      // The Go module proxy only, never a repository fetched directly (a caller's own GOPROXY is kept).
      env: { ...process.env, GOTOOLCHAIN: 'local', GOPROXY: process.env.GOPROXY || 'https://proxy.golang.org', ...o.env },
      stdio: ['ignore', process.stderr, process.stderr],
    });
    build.once('error', () => resolve(-1));
    build.once('exit', resolve);
  });
  if (code !== 0) {
    await rm(o.partial, { force: true });
    throw new PeerError(`go ${args[0]} failed (exit ${code}); see its output above`);
  }
  await rename(o.partial, o.binary);
  console.error(`peer:${name}: built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** One peer of this checkout: its name (`mongo`, `mail`) names its messages and its state file. */
export class Peer<S extends PeerState> {
  /** One state file per checkout, outside it (so two worktrees on one machine have a peer each). */
  private readonly stateFile: string;

  constructor(readonly name: string) {
    this.stateFile = path.join(tmpdir(), `tool-server-${name}-peer-${createHash('sha256').update(REPO).digest('hex').slice(0, 12)}.json`);
  }

  fail(message: string): never {
    console.error(`peer:${this.name}: ${message}`);
    process.exit(1);
  }

  say(message: string): void {
    console.error(`peer:${this.name}: ${message}`);
  }

  async readState(): Promise<S | undefined> {
    try {
      return JSON.parse(await readFile(this.stateFile, 'utf8')) as S;
    } catch {
      return undefined;
    }
  }

  writeState(state: S): Promise<void> {
    return writeFile(this.stateFile, JSON.stringify(state));
  }

  /** Whether the state's pid is still our peer (a recycled pid must never be signalled). */
  isRunning(state: S): boolean {
    if (!isAlive(state.pid)) return false;
    try {
      return readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').split('\0')[0] === state.binary;
    } catch {
      return true; // no /proc: trust the pid
    }
  }

  /** Stops the peer of this checkout (if any) and removes its data and state. */
  async stop(): Promise<void> {
    const state = await this.readState();
    if (!state) return this.say('no peer is running for this checkout');
    if (this.isRunning(state)) {
      process.kill(state.pid, 'SIGTERM');
      const deadline = Date.now() + STOP_TIMEOUT_MS;
      while (isAlive(state.pid) && Date.now() < deadline) await sleep(50);
      if (isAlive(state.pid)) process.kill(state.pid, 'SIGKILL');
    }
    await this.cleanUp(state);
    this.say(`stopped (pid ${state.pid}), removed ${state.dataDir}`);
  }

  async cleanUp(state: S): Promise<void> {
    await rm(state.dataDir, { recursive: true, force: true });
    await rm(this.stateFile, { force: true });
  }

  /** `npm run -s peer:<name> -- start | stop | status`. */
  async main(commands: { start: () => Promise<void>; status: () => Promise<void> }): Promise<void> {
    const all: Record<string, () => Promise<void>> = { ...commands, stop: () => this.stop() };
    const command = all[process.argv[2] ?? ''];
    if (!command) this.fail(`usage: npm run -s peer:${this.name} -- start | stop | status (got "${process.argv.slice(2).join(' ')}")`);
    await command();
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
