// `npm run -s peer:mongo -- start | stop | status`: a real MongoDB-wire server for the test runs, FerretDB on
// SQLite (no MongoDB server can be installed on these machines). `start` builds it when needed (Go and the Go
// module proxy; the binary is cached under ~/.cache, keyed by the hash of this folder's go.mod, go.sum and
// main.go), starts it detached on a free loopback port with its data in a new temporary folder, waits until it
// answers a ping and prints exactly one line, `MONGODB_URL=mongodb://127.0.0.1:<port>/<db>`, so that
// `eval "$(npm run -s peer:mongo -- start)"` sets it. One peer per checkout: a second start reuses the running
// one (saying so on stderr). `stop` stops it and removes its data.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { Peer, type PeerState, cacheRoot, sleep } from '../peer-process.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DB_NAME = 'tool_server_test';
const BINARY_NAME = 'ferretdb-peer';
const READY_TIMEOUT_MS = 60_000;

interface MongoPeerState extends PeerState {
  url: string;
}

const peer = new Peer<MongoPeerState>('mongo');

/** The source of the peer, hashed: a new go.sum (FerretDB upgrade) or main.go gets a new binary. */
function sourceHash(): string {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(file).update(readFileSync(path.join(HERE, file)));
  return hash.digest('hex').slice(0, 16);
}

async function ensureBinary(): Promise<string> {
  const dir = path.join(cacheRoot(), `ferretdb-${sourceHash()}`);
  const binary = path.join(dir, BINARY_NAME);
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const partial = path.join(dir, `${BINARY_NAME}.${process.pid}.partial`);
  // -mod=readonly: go.sum is our lock; a build never changes it. Only the SQLite backend is compiled in.
  await peer.goBuild(['build', '-mod=readonly', '-trimpath', '-tags', 'ferretdb_no_postgresql', '-o', partial, '.'], {
    cwd: HERE,
    partial,
    binary,
    what: `the MongoDB test peer (FerretDB) into ${dir}`,
  });
  return binary;
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
  const running = await peer.readState();
  if (running && peer.isRunning(running)) {
    if (await ping(running.url)) {
      peer.say(`already running (pid ${running.pid}, data in ${running.dataDir}); reusing it`);
      console.log(`MONGODB_URL=${running.url}`);
      return;
    }
    peer.fail(`a peer is running (pid ${running.pid}) but does not answer at ${running.url}; run \`npm run -s peer:mongo -- stop\` first`);
  }
  if (running) await peer.cleanUp(running); // it died: its data folder and state are stale

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
      peer.fail(`FerretDB did not start (${exitedEarly ? 'it exited' : `no answer within ${READY_TIMEOUT_MS / 1000} s`}):\n${text}`);
    }
    await sleep(50);
  }
  const url = new URL(DB_NAME, base).toString();
  await peer.writeState({ pid: child.pid!, url, dataDir, binary });
  if (!(await ping(url))) {
    await peer.stop();
    peer.fail(`FerretDB printed ${base} but does not answer a ping there`);
  }
  peer.say(`FerretDB pid ${child.pid} on ${base}, data in ${dataDir}, ready in ${Date.now() - started} ms`);
  console.log(`MONGODB_URL=${url}`);
}

async function status(): Promise<void> {
  const state = await peer.readState();
  if (state && peer.isRunning(state) && (await ping(state.url))) console.log(`MONGODB_URL=${state.url}`);
  else peer.fail('no peer is running for this checkout');
}

await peer.main({ start, status });
