// FerretDB, the MongoDB-wire server of the test runs: built from the Go module proxy when needed (the binary
// is cached under ~/.cache, keyed by the hash of this folder's go.mod, go.sum and main.go) and started on a
// loopback port with its data in a folder. `peer.ts` keeps one running per checkout for every suite; a suite
// that stops or pauses its server (test/store-outage.test.ts) launches one of its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PeerError, cacheRoot, goBuild, sleep } from '../peer-process.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BINARY_NAME = 'ferretdb-peer';
const READY_TIMEOUT_MS = 60_000;

/** The source of the peer, hashed: a new go.sum (FerretDB upgrade) or main.go gets a new binary. */
function sourceHash(): string {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(file).update(readFileSync(path.join(HERE, file)));
  return hash.digest('hex').slice(0, 16);
}

export async function ensureBinary(): Promise<string> {
  const dir = path.join(cacheRoot(), `ferretdb-${sourceHash()}`);
  const binary = path.join(dir, BINARY_NAME);
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const partial = path.join(dir, `${BINARY_NAME}.${process.pid}.partial`);
  // -mod=readonly: go.sum is our lock; a build never changes it. Only the SQLite backend is compiled in.
  await goBuild('mongo', ['build', '-mod=readonly', '-trimpath', '-tags', 'ferretdb_no_postgresql', '-o', partial, '.'], {
    cwd: HERE,
    partial,
    binary,
    what: `the MongoDB test peer (FerretDB) into ${dir}`,
  });
  return binary;
}

export interface LaunchedPeer {
  child: ChildProcess;
  /** `mongodb://127.0.0.1:<port>/`, as the peer printed it once it accepted connections. */
  base: string;
}

/**
 * Starts the binary on `listen` (port 0: the kernel picks a free one) with its data in `dataDir` (created: its
 * SQLite files in db/, its output in peer.log) and waits until it says it is ready. `detached`: it outlives
 * this process (the per-checkout peer).
 */
export async function launchPeer(binary: string, dataDir: string, options: { listen?: string; detached?: boolean } = {}): Promise<LaunchedPeer> {
  const started = Date.now();
  const logFile = path.join(dataDir, 'peer.log');
  await mkdir(path.join(dataDir, 'db'), { recursive: true });
  // A peer started again on the same folder appends to its log: only what it writes from now on counts.
  const from = await stat(logFile).then(
    (s) => s.size,
    () => 0,
  );
  // The socket a killed peer left behind would keep a new one from listening.
  await rm(path.join(dataDir, 'db', 'ferretdb.sock'), { force: true });
  const log = openSync(logFile, 'a');
  const child = spawn(binary, ['-listen', options.listen ?? '127.0.0.1:0', '-data', path.join(dataDir, 'db')], {
    detached: options.detached ?? false,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  let exited = false;
  child.once('exit', () => (exited = true));
  if (options.detached) child.unref();
  for (;;) {
    const text = (await readFile(logFile)).subarray(from).toString('utf8');
    const base = /^ready (mongodb:\/\/\S+)$/m.exec(text)?.[1];
    if (base) return { child, base };
    if (exited || Date.now() - started > READY_TIMEOUT_MS) {
      if (!exited) child.kill('SIGKILL');
      throw new PeerError(`FerretDB did not start (${exited ? 'it exited' : `no answer within ${READY_TIMEOUT_MS / 1000} s`}):\n${text}`);
    }
    await sleep(50);
  }
}
