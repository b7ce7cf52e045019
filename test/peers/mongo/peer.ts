// `npm run -s peer:mongo -- start | stop | status`: a real MongoDB-wire server for the test runs, FerretDB on
// SQLite (no MongoDB server can be installed on these machines). `start` builds it when needed (Go and the Go
// module proxy; the binary is cached under ~/.cache, keyed by the hash of this folder's go.mod, go.sum and
// main.go), starts it detached on a free loopback port with its data in a new temporary folder, waits until it
// answers a ping and prints exactly one line, `MONGODB_URL=mongodb://127.0.0.1:<port>/<db>`, so that
// `eval "$(npm run -s peer:mongo -- start)"` sets it. One peer per checkout: a second start reuses the running
// one (saying so on stderr). `stop` stops it and removes its data.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../../..');
const DB_NAME = 'tool_server_test';
const BINARY_NAME = 'ferretdb-peer';
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

interface PeerState {
  pid: number;
  url: string;
  dataDir: string;
  binary: string;
}

/** One state file per checkout, outside it (so two worktrees on one machine have a peer each). */
const stateFile = path.join(tmpdir(), `tool-server-mongo-peer-${createHash('sha256').update(REPO).digest('hex').slice(0, 12)}.json`);

function fail(message: string): never {
  console.error(`peer:mongo: ${message}`);
  process.exit(1);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The source of the peer, hashed: a new go.sum (FerretDB upgrade) or main.go gets a new binary. */
function sourceHash(): string {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(file).update(readFileSync(path.join(HERE, file)));
  return hash.digest('hex').slice(0, 16);
}

function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'tool-server');
}

function goVersion(): string | undefined {
  try {
    return execFileSync('go', ['version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

async function ensureBinary(): Promise<string> {
  const dir = path.join(cacheRoot(), `ferretdb-${sourceHash()}`);
  const binary = path.join(dir, BINARY_NAME);
  if (existsSync(binary)) return binary;
  const go = goVersion();
  if (!go)
    fail(
      'Go is not installed (no `go` on PATH). The MongoDB test peer is FerretDB built from the Go module proxy: install Go 1.24 or newer ' +
        '(https://go.dev/dl/ or your package manager) and run this again. Without it `npm test` skips the MongoDB tests (and fails under CI=true).',
    );
  await mkdir(dir, { recursive: true });
  const partial = path.join(dir, `${BINARY_NAME}.${process.pid}.partial`);
  console.error(`peer:mongo: building FerretDB with ${go} into ${dir} (once; a few minutes the first time, seconds with the module cache warm)`);
  const started = Date.now();
  // -mod=readonly: go.sum is our lock; a build never changes it. GOTOOLCHAIN=local: an older Go says so instead
  // of downloading a toolchain. Only the SQLite backend is compiled in.
  const code = await new Promise<number | null>((resolve) => {
    const build = spawn('go', ['build', '-mod=readonly', '-trimpath', '-tags', 'ferretdb_no_postgresql', '-o', partial, '.'], {
      cwd: HERE,
      env: { ...process.env, GOTOOLCHAIN: 'local' },
      stdio: ['ignore', process.stderr, process.stderr],
    });
    build.once('error', () => resolve(-1));
    build.once('exit', resolve);
  });
  if (code !== 0) {
    await rm(partial, { force: true });
    fail(`go build failed (exit ${code}); see its output above`);
  }
  await rename(partial, binary); // atomic: a concurrent start sees the whole binary or none
  console.error(`peer:mongo: built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return binary;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether pid is still our peer (a recycled pid must never be signalled). */
function isPeer(state: PeerState): boolean {
  if (!isAlive(state.pid)) return false;
  try {
    return readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').split('\0')[0] === state.binary;
  } catch {
    return true; // no /proc: trust the pid
  }
}

async function readState(): Promise<PeerState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile, 'utf8')) as PeerState;
  } catch {
    return undefined;
  }
}

async function ping(url: string): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 2_000, connectTimeoutMS: 2_000 });
  try {
    await client.connect();
    await client.db(DB_NAME).command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function start(): Promise<void> {
  const running = await readState();
  if (running && isPeer(running)) {
    if (await ping(running.url)) {
      console.error(`peer:mongo: already running (pid ${running.pid}, data in ${running.dataDir}); reusing it`);
      console.log(`MONGODB_URL=${running.url}`);
      return;
    }
    fail(`a peer is running (pid ${running.pid}) but does not answer at ${running.url}; run \`npm run -s peer:mongo -- stop\` first`);
  }
  if (running) await cleanUp(running); // it died: its data folder and state are stale

  const binary = await ensureBinary();
  const started = Date.now();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-mongo-peer-'));
  const logFile = path.join(dataDir, 'peer.log');
  await mkdir(path.join(dataDir, 'db'));
  const log = openSync(logFile, 'a');
  // Port 0: the kernel picks a free port and the peer prints it, so no other process can take it meanwhile.
  const child = spawn(binary, ['-listen', '127.0.0.1:0', '-data', path.join(dataDir, 'db')], { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  child.unref();

  let base: string | undefined;
  while (!base) {
    const text = await readFile(logFile, 'utf8');
    base = /^ready (mongodb:\/\/\S+)$/m.exec(text)?.[1];
    if (base) break;
    if (exitedEarly || Date.now() - started > READY_TIMEOUT_MS) {
      if (!exitedEarly) child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      fail(`FerretDB did not start (${exitedEarly ? 'it exited' : `no answer within ${READY_TIMEOUT_MS / 1000} s`}):\n${text}`);
    }
    await sleep(50);
  }
  const url = new URL(DB_NAME, base).toString();
  const state: PeerState = { pid: child.pid!, url, dataDir, binary };
  await writeFile(stateFile, JSON.stringify(state));
  if (!(await ping(url))) {
    await stop();
    fail(`FerretDB printed ${base} but does not answer a ping there`);
  }
  console.error(`peer:mongo: FerretDB pid ${child.pid} on ${base}, data in ${dataDir}, ready in ${Date.now() - started} ms`);
  console.log(`MONGODB_URL=${url}`);
}

async function stop(): Promise<void> {
  const state = await readState();
  if (!state) {
    console.error('peer:mongo: no peer is running for this checkout');
    return;
  }
  if (isPeer(state)) {
    process.kill(state.pid, 'SIGTERM');
    const deadline = Date.now() + STOP_TIMEOUT_MS;
    while (isAlive(state.pid) && Date.now() < deadline) await sleep(50);
    if (isAlive(state.pid)) process.kill(state.pid, 'SIGKILL');
  }
  await cleanUp(state);
  console.error(`peer:mongo: stopped (pid ${state.pid}), removed ${state.dataDir}`);
}

async function cleanUp(state: PeerState): Promise<void> {
  await rm(state.dataDir, { recursive: true, force: true });
  await rm(stateFile, { force: true });
}

async function status(): Promise<void> {
  const state = await readState();
  if (state && isPeer(state) && (await ping(state.url))) console.log(`MONGODB_URL=${state.url}`);
  else fail('no peer is running for this checkout');
}

const commands: Record<string, () => Promise<void>> = { start, stop, status };
const command = commands[process.argv[2] ?? ''];
if (!command) fail(`usage: npm run -s peer:mongo -- start | stop | status (got "${process.argv.slice(2).join(' ')}")`);
await command();
