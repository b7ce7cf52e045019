// The benchmark's servers, each in its own process (`tsx bench/<file>`), announcing itself with one JSON line.
// Every process carries the test suite's network safety net: the bench reaches loopback only, whatever
// the code under measure does.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { NODE_FLAGS, buildService } from '../runtime/build.ts';

const SAFETY_NET = ['--import', 'tsx', '--import', './test/support/loopback-only.ts'];
/**
 * Node flags of every server the bench starts, whatever it is. alone() stops (SIGSTOP) every server but the one
 * measured: resumed, a server has allocated nothing for the seconds it was stopped, V8's memory reducer takes it
 * for idle and runs full collections that shrink its heap, and the turn pays to grow it again. A server under
 * steady traffic never looks idle. Measured (8 turns of 1 s at c=32, 5 s stopped before each): ours 1,966 CPU µs
 * per call without the flag, 1,014 with it; the bare proxy 1,054 and 776.
 */
const MEASURED_FLAGS = ['--no-memory-reducer'];
/**
 * The bench's build of its servers and of the safety net (runtime/build.ts, as `npm start` runs the service),
 * made once per run; inside the repository, where the bundles find node_modules.
 */
const BUILT = path.resolve(`node_modules/.cache/bench-build-${process.pid}`);
const BUILT_ENTRIES = ['bench/ours.ts', 'bench/bare-proxy.ts', 'bench/raw-list.ts', 'test/support/loopback-only.ts'];
let built: Promise<void> | undefined;

export const children: ChildProcess[] = [];

/**
 * How long each server is sent calls before it is measured (BENCH_WARM_SECONDS): until its JIT is in its steady
 * state. 500 calls were not: ours compiled 3 s of TurboFan's CPU time in its first 10,000 calls and still 0.8-1.4 s
 * in the next 10,000, its CPU per call falling from 952-988 µs to 690-790 by the third 8-second window at c=32,
 * and a short warm-up favours the server with the least code. The same time for every server.
 */
export const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS || 20);

/** The Notion page the fake upstream serves (upstream.ts) and the Notion rows of the bench read. */
export const BENCH_PAGE = { id: '59833787-2cf9-4fdf-8782-e53db20768a5', title: 'Quarterly roadmap review' };
/** The n-th page the bench reads: every call reads a page of its own, so the upstream can tell which calls reached it. */
export const benchPageId = (n: number) => `${BENCH_PAGE.id.slice(0, 24)}${n.toString(16).padStart(12, '0')}`;
/** The page id in an answer (ours quotes the page inside a JSON string, the official server as JSON). */
export const PAGE_ID_IN_ANSWER = new RegExp(`${BENCH_PAGE.id.slice(0, 24)}[0-9a-f]{12}`);

/**
 * Starts `tsx bench/<file>` and waits for the JSON line it prints. `env` adds to the environment;
 * BENCH_NODE_FLAGS there adds node flags. `build`: runs it built instead, as `npm start` runs the service
 * (bundled by runtime/build.ts with the safety net, plain node with source maps, no tsx).
 */
export async function launch(file: string, args: string[] = [], env: Record<string, string> = {}, build = false): Promise<Record<string, string>> {
  if (!build) return start(file, [...SAFETY_NET, `bench/${file}`, ...args], env);
  if (!BUILT_ENTRIES.includes(`bench/${file}`)) throw new Error(`bench/${file} is not among the bench's built servers`);
  built ??= buildService(BUILT_ENTRIES, BUILT);
  await built;
  return start(file, [...builtProgram(BUILT, file), ...args], env);
}

/** The node arguments that run bench/<file> from a build of it and of the safety net in `dir`. */
export function builtProgram(dir: string, file: string): string[] {
  return [...NODE_FLAGS, '--import', pathToFileURL(path.join(dir, 'loopback-only.js')).href, path.join(dir, file.replace(/\.ts$/, '.js'))];
}

/** Runs node with `args` (and BENCH_NODE_FLAGS) and waits for the JSON line the server prints when it is ready. */
export function start(name: string, args: string[], env: Record<string, string> = {}): Promise<Record<string, string>> {
  const all = { ...process.env, ...env };
  const flags = (all.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...MEASURED_FLAGS, ...flags, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: all });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
    // Lines before it are V8's traces when BENCH_NODE_FLAGS asks for them (--trace-deopt and the like).
    const ready = (line: string) => {
      if (!line.startsWith('{')) return;
      lines.off('line', ready);
      resolve({ ...(JSON.parse(line) as Record<string, string>), pid: String(child.pid) });
    };
    lines.on('line', ready);
  });
}

/** What a client of the official Notion MCP server sends with every request after the handshake. */
export interface NotionMcp {
  url: string;
  headers: Record<string, string>;
  pid: string;
}

/**
 * Starts the official Notion MCP server (@notionhq/notion-mcp-server, its HTTP transport) with its Notion
 * base URL on the bench's upstream, and opens a session the way a client does: initialize, keep the
 * session id, send notifications/initialized. NOTION_TOKEN is removed from its environment on purpose:
 * with it, the server calls the real Notion at start whatever BASE_URL says. It is ready when its /health
 * answers, however long that takes on a loaded machine; it failed to start when it exits first (its port
 * taken between our probe and its listen: tried again on another port) or is not ready after
 * NOTION_MCP_START_SECONDS (default 120); the error then carries the end of its stderr.
 */
export async function launchNotionMcp(upstream: string): Promise<NotionMcp> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNotionMcp(upstream);
    } catch (err) {
      if (attempt === 3 || !/EADDRINUSE/.test(String(err))) throw err;
    }
  }
}

async function startNotionMcp(upstream: string): Promise<NotionMcp> {
  const port = await freePort();
  const authToken = 'bench-notion-mcp-token';
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BASE_URL: upstream,
    OPENAPI_MCP_HEADERS: JSON.stringify({ Authorization: 'Bearer ntn_bench_token_000000000000', 'Notion-Version': '2025-09-03' }),
  };
  delete env.NOTION_TOKEN;
  const cli = 'node_modules/@notionhq/notion-mcp-server/bin/cli.mjs';
  const args = [...MEASURED_FLAGS, ...SAFETY_NET, cli, '--transport', 'http', '--host', '127.0.0.1', '--port', String(port), '--auth-token', authToken];
  // Its console output goes nowhere, as our service's log does (to /dev/null); the end of stderr is kept to say why it failed.
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + Number(process.env.NOTION_MCP_START_SECONDS || 120) * 1000;
  const why = (what: string) => new Error(`the Notion MCP server ${what}${stderr ? `; its stderr ends with:\n${stderr}` : ''}`);
  for (;;) {
    if ((await fetch(`${base}/health`).catch(() => null))?.ok) break;
    if (child.exitCode !== null || child.signalCode !== null) throw why(`exited (${child.signalCode ?? child.exitCode}) before it was ready`);
    if (Date.now() > deadline) throw why(`was not ready within ${process.env.NOTION_MCP_START_SECONDS || 120} s`);
    await Promise.race([sleep(100), exited]);
  }
  const headers: Record<string, string> = {
    authorization: `Bearer ${authToken}`,
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
  };
  const init = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const session = init.headers.get('mcp-session-id');
  await init.text();
  if (!init.ok || !session) throw why(`refused initialize (HTTP ${init.status})`);
  Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' });
  const ready = await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  if (ready.status !== 202) throw why(`refused notifications/initialized (HTTP ${ready.status})`);
  return { url: `${base}/mcp`, headers, pid: String(child.pid) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });
}

/** CPU time (user + system) a process has used so far, in µs (from /proc: the machine's whole-process view). */
export async function cpuMicros(pid: string): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
/** USER_HZ: the unit of utime and stime, 100 on Linux everywhere we run. */
const CLOCK_TICKS = 100;

/**
 * A MongoDB-wire server for the "ours (MongoDB)" row: MONGODB_URL when set, else the test peer (FerretDB, `npm
 * run -s peer:mongo -- start`, which needs Go); undefined when neither is there (the row is left out, loudly).
 */
export function mongoForBench(): string | undefined {
  if (process.env.MONGODB_URL) return process.env.MONGODB_URL;
  try {
    const line = execFileSync(process.execPath, ['--import', 'tsx', 'test/peers/mongo/peer.ts', 'start'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return /^MONGODB_URL=(\S+)/m.exec(line)?.[1];
  } catch {
    return undefined;
  }
}

/** The connections of part `i` when `total` are spread over `parts` as evenly as they go. */
export const shareOf = (total: number, parts: number, i: number): number => Math.floor(total / parts) + (i < total % parts ? 1 : 0);

/**
 * Runs `work` with every process the bench launched stopped (SIGSTOP) but those of `pids`, then lets them go on:
 * an idle server's own background work (its housekeeping; the MongoDB instances' reads of the store, which keep
 * FerretDB busy too) is no noise in the measure of another.
 */
export async function alone<T>(pids: Array<string | undefined>, work: () => Promise<T>): Promise<T> {
  const stopped = children.filter((c) => c.exitCode === null && c.signalCode === null && !pids.includes(String(c.pid)));
  for (const c of stopped) c.kill('SIGSTOP');
  try {
    return await work();
  } finally {
    for (const c of stopped) c.kill('SIGCONT');
  }
}

/** Runs a bench script; whatever happens, the processes it launched are stopped. */
export function runBench(main: () => Promise<void>): void {
  main()
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(async () => {
      for (const c of children) {
        c.kill();
        c.kill('SIGCONT'); // one stopped by alone() ends only once it runs again
      }
      await rm(BUILT, { recursive: true, force: true });
    });
}
