// `npm run -s peer:mongo -- start | stop | status`: a real MongoDB-wire server for the test runs, FerretDB on
// SQLite (no MongoDB server can be installed on these machines). `start` builds it when needed (ferretdb.ts),
// starts it detached on a free loopback port with its data in a new temporary folder, waits until it answers a
// ping and prints exactly one line, `MONGODB_URL=mongodb://127.0.0.1:<port>/<db>`, so that
// `eval "$(npm run -s peer:mongo -- start)"` sets it. One peer per checkout: a second start reuses the running
// one (saying so on stderr). `stop` stops it and removes its data.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { Peer, type PeerState } from '../peer-process.ts';
import { ensureBinary, launchPeer } from './ferretdb.ts';

const DB_NAME = 'tool_server_test';

interface MongoPeerState extends PeerState {
  url: string;
}

const peer = new Peer<MongoPeerState>('mongo');

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

  const binary = await ensureBinary().catch((error: unknown) => peer.fail((error as Error).message));
  const started = Date.now();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-mongo-peer-'));
  // Port 0: the kernel picks a free port and the peer prints it, so no other process can take it meanwhile.
  const { child, base } = await launchPeer(binary, dataDir, { detached: true }).catch(async (error: unknown) => {
    await rm(dataDir, { recursive: true, force: true });
    return peer.fail((error as Error).message);
  });
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
