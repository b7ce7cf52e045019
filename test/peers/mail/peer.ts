// `npm run -s peer:mail -- start | stop | status`: a real SMTP server with an HTTP API for the test runs,
// Mailpit. `start` builds it when needed (`go install github.com/axllent/mailpit@<version>` from the Go module
// proxy, into ~/.cache/tool-server/mailpit-<version>), starts it detached with its SMTP server and its HTTP API
// on free loopback ports (the kernel picks them; they are read back from /proc and told apart by asking each
// for Mailpit's /api/v1/info), its database in a new temporary folder, and prints two lines for eval:
// `SMTP_URL=smtp://127.0.0.1:<port>` and `MAILPIT_URL=http://127.0.0.1:<port>`. Nothing it does leaves the
// machine: no version check, no reverse DNS of SMTP clients. Any SMTP login is accepted (tests send with a user
// and a password), and recipients on the reserved .invalid domain are refused for good (550), as a real server
// refuses a mailbox that does not exist (tests of undeliverable mail). One peer per checkout: a second start
// reuses the running one. `stop` stops it and removes its data.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Peer, type PeerState, cacheRoot, goBuild, sleep } from '../peer-process.ts';

const MODULE = 'github.com/axllent/mailpit';
const VERSION = 'v1.33.1';
const READY_TIMEOUT_MS = 60_000;

interface MailPeerState extends PeerState {
  smtpUrl: string;
  apiUrl: string;
}

const peer = new Peer<MailPeerState>('mail');

async function ensureBinary(): Promise<string> {
  const dir = path.join(cacheRoot(), `mailpit-${VERSION}`);
  const binary = path.join(dir, 'mailpit');
  if (existsSync(binary)) return binary;
  const gobin = path.join(dir, `build.${process.pid}`);
  await mkdir(gobin, { recursive: true });
  // `go install module@version` builds exactly that version, checked against the Go checksum database.
  await goBuild('mail', ['install', `${MODULE}@${VERSION}`], {
    cwd: dir,
    env: { GOBIN: gobin },
    partial: path.join(gobin, 'mailpit'),
    binary,
    what: `Mailpit ${VERSION} into ${dir}`,
  }).catch((error: unknown) => peer.fail((error as Error).message));
  await rm(gobin, { recursive: true, force: true });
  return binary;
}

/** The loopback TCP ports `pid` listens on (from /proc: the process's socket inodes in the kernel's tables). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // local_address is IP:PORT in hex; state 0A is LISTEN; the inode is the tenth field.
    if (f.length > 9 && f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1].split(':')[1], 16));
  }
  return ports;
}

/** Mailpit's HTTP API answers /api/v1/info; its SMTP server does not speak HTTP. */
async function isApi(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/info`, { signal: AbortSignal.timeout(2000) });
    return res.ok && typeof ((await res.json()) as { Version?: unknown }).Version === 'string';
  } catch {
    return false;
  }
}

async function answers(state: MailPeerState): Promise<boolean> {
  return isApi(Number(new URL(state.apiUrl).port));
}

function print(state: MailPeerState): void {
  console.log(`SMTP_URL=${state.smtpUrl}`);
  console.log(`MAILPIT_URL=${state.apiUrl}`);
}

async function start(): Promise<void> {
  const running = await peer.readState();
  if (running && peer.isRunning(running)) {
    if (await answers(running)) {
      peer.say(`already running (pid ${running.pid}, data in ${running.dataDir}); reusing it`);
      return print(running);
    }
    peer.fail(`a peer is running (pid ${running.pid}) but its API does not answer at ${running.apiUrl}; run \`npm run -s peer:mail -- stop\` first`);
  }
  if (running) await peer.cleanUp(running);

  const binary = await ensureBinary();
  const started = Date.now();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-mail-peer-'));
  const logFile = path.join(dataDir, 'peer.log');
  const log = openSync(logFile, 'a');
  const args = [
    ...['--smtp', '127.0.0.1:0', '--listen', '127.0.0.1:0', '--database', path.join(dataDir, 'mailpit.db')],
    ...['--disable-version-check', '--smtp-disable-rdns', '--smtp-auth-accept-any', '--smtp-auth-allow-insecure', '--max', '10000'],
    ...['--smtp-allowed-recipients', String.raw`\.(test|com|org|net|example)$`],
  ];
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  let exited = false;
  child.once('exit', () => (exited = true));
  child.unref();

  let smtpPort: number | undefined;
  let apiPort: number | undefined;
  while (smtpPort === undefined || apiPort === undefined) {
    const ports = exited ? [] : listeningPorts(child.pid!);
    if (ports.length === 2) {
      const api = await Promise.all(ports.map(isApi));
      if (api.filter(Boolean).length === 1) [apiPort, smtpPort] = api[0] ? ports : [ports[1], ports[0]];
    }
    if (apiPort !== undefined) break;
    if (exited || Date.now() - started > READY_TIMEOUT_MS) {
      if (!exited) child.kill('SIGKILL');
      const text = await readFile(logFile, 'utf8');
      await rm(dataDir, { recursive: true, force: true });
      peer.fail(`Mailpit did not start (${exited ? 'it exited' : `not ready within ${READY_TIMEOUT_MS / 1000} s`}):\n${text}`);
    }
    await sleep(50);
  }
  const state: MailPeerState = { pid: child.pid!, dataDir, binary, smtpUrl: `smtp://127.0.0.1:${smtpPort}`, apiUrl: `http://127.0.0.1:${apiPort}` };
  await peer.writeState(state);
  peer.say(
    `Mailpit ${VERSION} pid ${child.pid}: SMTP on 127.0.0.1:${smtpPort}, API on ${state.apiUrl}, data in ${dataDir}, ready in ${Date.now() - started} ms`,
  );
  print(state);
}

async function status(): Promise<void> {
  const state = await peer.readState();
  if (state && peer.isRunning(state) && (await answers(state))) print(state);
  else peer.fail('no peer is running for this checkout');
}

await peer.main({ start, status });
