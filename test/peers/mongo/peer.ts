// `npm run -s peer:mongo -- start | stop | status`: a real MongoDB-wire server for the test runs, FerretDB on
// SQLite (no MongoDB server can be installed on these machines). `start` builds it when needed (ferretdb.ts),
// starts it detached on a free loopback port with its data in a new temporary folder, waits until it answers a
// ping and prints exactly one line, `MONGODB_URL=mongodb://127.0.0.1:<port>/<db>`, so that
// `eval "$(npm run -s peer:mongo -- start)"` sets it. One peer per checkout: a second start reuses the running
// one (saying so on stderr). `stop` stops it and removes its data.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { ensureBinary, launchPeer } from './ferretdb.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../../..');
const DB_NAME = 'tool_server_test';
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

  const binary = await ensureBinary().catch((error: unknown) => fail((error as Error).message));
  const started = Date.now();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-mongo-peer-'));
  // Port 0: the kernel picks a free port and the peer prints it, so no other process can take it meanwhile.
  const { child, base } = await launchPeer(binary, dataDir, { detached: true }).catch(async (error: unknown) => {
    await rm(dataDir, { recursive: true, force: true });
    return fail((error as Error).message);
  });
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
