// The benchmark's servers, each in its own process (`tsx bench/<file>`), announcing itself with one JSON line.
// Every process carries the test suite's network safety net: the bench reaches loopback only, whatever
// the code under measure does.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const SAFETY_NET = ['--import', 'tsx', '--import', './test/support/loopback-only.ts'];

export const children: ChildProcess[] = [];

/** The Notion page the fake upstream serves (upstream.ts) and the Notion rows of the bench read. */
export const BENCH_PAGE = { id: '59833787-2cf9-4fdf-8782-e53db20768a5', title: 'Quarterly roadmap review' };

/**
 * Starts `tsx bench/<file>` and waits for the JSON line it prints. `env` adds to the environment;
 * BENCH_NODE_FLAGS there adds node flags.
 */
export async function launch(file: string, args: string[] = [], env: Record<string, string> = {}): Promise<Record<string, string>> {
  const all = { ...process.env, ...env };
  const flags = (all.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, ...SAFETY_NET, `bench/${file}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: all });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    lines.once('line', (line) => resolve({ ...(JSON.parse(line) as Record<string, string>), pid: String(child.pid) }));
  });
}

/** What a client of the official Notion MCP server sends with every request after the handshake. */
export interface NotionMcp {
  url: string;
  headers: Record<string, string>;
}

/**
 * Starts the official Notion MCP server (@notionhq/notion-mcp-server, its HTTP transport) with its Notion
 * base URL on the bench's upstream, and opens a session the way a client does: initialize, keep the
 * session id, send notifications/initialized. NOTION_TOKEN is removed from its environment on purpose:
 * with it, the server calls the real Notion at start whatever BASE_URL says.
 */
export async function launchNotionMcp(upstream: string): Promise<NotionMcp> {
  const port = await freePort();
  const authToken = 'bench-notion-mcp-token';
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BASE_URL: upstream,
    OPENAPI_MCP_HEADERS: JSON.stringify({ Authorization: 'Bearer ntn_bench_token_000000000000', 'Notion-Version': '2025-09-03' }),
  };
  delete env.NOTION_TOKEN;
  const cli = 'node_modules/@notionhq/notion-mcp-server/bin/cli.mjs';
  const args = [...SAFETY_NET, cli, '--transport', 'http', '--host', '127.0.0.1', '--port', String(port), '--auth-token', authToken];
  // Its per-request console output goes nowhere, as our service's log does (to /dev/null).
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'ignore'], env });
  children.push(child);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if ((await fetch(`${base}/health`).catch(() => null))?.ok) break;
    if (i === 100 || child.exitCode !== null) throw new Error('the Notion MCP server did not start');
    await sleep(100);
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
  if (!init.ok || !session) throw new Error(`the Notion MCP server refused initialize (HTTP ${init.status})`);
  Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' });
  const ready = await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  if (ready.status !== 202) throw new Error(`the Notion MCP server refused notifications/initialized (HTTP ${ready.status})`);
  return { url: `${base}/mcp`, headers };
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

/** Runs a bench script; whatever happens, the processes it launched are stopped. */
export function runBench(main: () => Promise<void>): void {
  main()
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(() => {
      for (const c of children) c.kill();
    });
}
