// `npm run bench`: this service vs the official SDK references, the official Notion MCP server and the bare
// upstream, in one run, on loopback only, with a bare Koa+got proxy as the floor. Each server runs in its own
// process; autocannon drives tools/list and tools/call at concurrency 1 and 32, and every answer is checked
// (a 200 that carries an error counts as an error). Prints req/s, p50 and p99 per row, then the ratios, one
// line per goal. BENCH_SECONDS sets the length of each row (default 5).
import autocannon from 'autocannon';
import { BENCH_PAGE, cpuMicros, launch, launchNotionMcp, mongoForBench, runBench } from './processes.ts';

const SECONDS = Number(process.env.BENCH_SECONDS || 5);
/** This service: key auth + rate limits + credit charge + tool spec + ledger + usage, i.e. the full pipeline. */
const OURS = 'ours (full pipeline)';
/** The same on the file-backed embedded store that `npm start` uses. */
const OURS_FILE = 'ours (file store)';
/** The same on MongoDB (FerretDB, the test peer, unless MONGODB_URL names another server). */
const OURS_MONGO = 'ours (MongoDB)';
const REFERENCE = 'reference (SDK v1)';
const SDK_V2 = 'SDK v2 handler';
const BARE = 'bare Koa+got proxy';
/** Our Notion tools (tool-specs/workspace) and the official Notion MCP server, reading the same page. */
const OURS_NOTION = 'ours (Notion tools)';
const NOTION_MCP = 'official Notion MCP';

/**
 * A JSON-RPC request with a fresh id on every send, as a real client makes them: a session-based server
 * routes each answer by its id, so two requests in flight with one id would leave one of them unanswered.
 */
type Body = (id: number) => string;
const rpc = (method: string, params?: object): Body => {
  const rest = JSON.stringify({ method, ...(params && { params }) }).slice(1);
  return (id) => `{"jsonrpc":"2.0","id":${id},${rest}`;
};
const call = (name: string, args: object = {}) => rpc('tools/call', { name, arguments: args });
let nextId = 1;

/** One server under measure: where it listens, what it is sent, and what every good answer contains. */
interface Target {
  name: string;
  url: string;
  /** The server's process, whose CPU time is read around each measure. */
  pid?: string;
  /** Where the server says how many MongoDB commands (and writes) it has sent so far. */
  commands?: string;
  headers: Record<string, string>;
  bodies: Partial<Record<Method, Body>>;
  expect: Partial<Record<Method, string>>;
}
type Method = 'tools/list' | 'tools/call';

interface Row {
  target: string;
  method: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  completed: number;
  sent: number;
  /** The server process's CPU time per completed request, µs. */
  cpuPerCall?: number;
  /** MongoDB commands and writes per completed request; those sent while answering it (its path). */
  commandsPerCall?: number;
  onPathPerCall?: number;
  writesPerCall?: number;
}

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** The request autocannon sends to a target, again and again, each time with a new id. */
function post(target: Target, method: Method): autocannon.Request {
  const body = target.bodies[method]!;
  return { method: 'POST', headers: { ...MCP_HEADERS, ...target.headers }, setupRequest: (req: autocannon.Request) => ({ ...req, body: body(nextId++) }) };
}

const started = Date.now();
const progress = (what: string) => console.error(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${what}`);

/** `rate`: requests per second for all connections together (autocannon's overallRate); as fast as answered when absent. */
async function measure(target: Target, method: Method, connections: number, rate?: number): Promise<Row> {
  progress(`${target.name} ${method} c=${connections}${rate ? ` at ${rate} req/s` : ''}`);
  const expected = target.expect[method]!;
  const cpuBefore = target.pid ? await cpuMicros(target.pid) : 0;
  const countsBefore = target.commands ? await commandCounts(target.commands) : undefined;
  let wrong = 0;
  const result = await autocannon({
    url: target.url,
    connections,
    duration: SECONDS,
    ...(rate && { overallRate: rate }),
    requests: [
      {
        ...post(target, method),
        onResponse: (status: number, answer: string) => {
          if (status === 200 && (!answer.includes(expected) || answer.includes('"isError":true'))) wrong++;
        },
      },
    ],
  });
  const r = row(target.name, method, connections, result, wrong);
  if (target.pid) r.cpuPerCall = ((await cpuMicros(target.pid)) - cpuBefore) / r.completed;
  if (countsBefore) {
    const after = await commandCounts(target.commands!);
    r.commandsPerCall = (after.commands - countsBefore.commands) / r.completed;
    r.writesPerCall = (after.writes - countsBefore.writes) / r.completed;
    r.onPathPerCall = (after.onPath - countsBefore.onPath) / r.completed;
  }
  return r;
}

interface CommandCounts {
  commands: number;
  writes: number;
  onPath: number;
}
async function commandCounts(url: string): Promise<CommandCounts> {
  return (await (await fetch(url)).json()) as CommandCounts;
}

async function measureGet(name: string, url: string, connections: number): Promise<Row> {
  return row(name, 'GET /ping', connections, await autocannon({ url, connections, duration: SECONDS }), 0);
}

function row(target: string, method: string, connections: number, result: autocannon.Result, wrong: number): Row {
  return {
    target,
    method,
    connections,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts + wrong,
    completed: result['2xx'],
    sent: result.requests.sent,
  };
}

async function main(): Promise<void> {
  const upstream = (await launch('upstream.ts')).url;
  const mongodbUrl = mongoForBench();
  if (!mongodbUrl) progress('NO MongoDB-wire server (set MONGODB_URL, or install Go for the FerretDB peer): the "ours (MongoDB)" row is left out');
  const pageReads = async () => ((await (await fetch(`${upstream}/__count`)).json()) as { pageReads: number }).pageReads;
  const [ours, oursFile, oursNotion, notionMcp, v1, v2, bare, oursMongo] = await Promise.all([
    launch('ours.ts', [upstream]),
    launch('ours.ts', [upstream], { BENCH_STORE: 'file' }),
    launch('ours.ts', [upstream], { BENCH_FAMILY: 'workspace' }),
    launchNotionMcp(upstream),
    launch('reference-v1.ts', [upstream]),
    launch('reference-v2.ts', [upstream]),
    launch('bare-proxy.ts', [upstream]),
    mongodbUrl ? launch('ours.ts', [upstream], { BENCH_STORE: 'mongodb', BENCH_MONGODB_URL: mongodbUrl }) : undefined,
  ]);
  const demo = (name: string, server: Record<string, string>, headers: Record<string, string> = {}): Target => ({
    name,
    url: server.url,
    pid: server.pid,
    commands: server.commands,
    headers,
    bodies: { 'tools/list': rpc('tools/list'), 'tools/call': call('demo_ping') },
    expect: { 'tools/list': 'demo_ping', 'tools/call': '"ok":true' },
  });
  const general = [
    demo(OURS, ours, { authorization: `Bearer ${ours.key}` }),
    demo(OURS_FILE, oursFile, { authorization: `Bearer ${oursFile.key}` }),
    ...(oursMongo ? [demo(OURS_MONGO, oursMongo, { authorization: `Bearer ${oursMongo.key}` })] : []),
    demo(REFERENCE, v1),
    demo(SDK_V2, v2),
  ];
  const bareProxy = demo(BARE, bare);
  const notion: Target[] = [
    {
      name: OURS_NOTION,
      url: oursNotion.url,
      headers: { authorization: `Bearer ${oursNotion.key}` },
      bodies: { 'tools/list': rpc('tools/list'), 'tools/call': call('get_page', { page_id: BENCH_PAGE.id }) },
      expect: { 'tools/list': 'get_page', 'tools/call': BENCH_PAGE.title },
    },
    {
      name: NOTION_MCP,
      url: notionMcp.url,
      headers: notionMcp.headers,
      bodies: { 'tools/list': rpc('tools/list'), 'tools/call': call('API-retrieve-a-page', { page_id: BENCH_PAGE.id }) },
      expect: { 'tools/list': 'API-retrieve-a-page', 'tools/call': BENCH_PAGE.title },
    },
  ];
  progress('all servers up');
  // Warm up every target so JIT and connection pools are in their steady state.
  for (const t of [...general, bareProxy, ...notion]) {
    progress(`warm ${t.name}`);
    await autocannon({ url: t.url, connections: 8, amount: 500, requests: [post(t, 'tools/call')] });
  }

  const rows: Row[] = [];
  for (const connections of [1, 32]) {
    rows.push(await measureGet('direct upstream', `${upstream}/ping`, connections));
    for (const method of ['tools/list', 'tools/call'] as const) {
      for (const target of general) rows.push(await measure(target, method, connections));
    }
    rows.push(await measure(bareProxy, 'tools/call', connections));
    for (const method of ['tools/list', 'tools/call'] as const) {
      for (const target of notion) {
        const before = await pageReads();
        const r = await measure(target, method, connections);
        // Every answered page read reached the upstream, and nothing reached it that was not sent.
        const reads = (await pageReads()) - before;
        if (method === 'tools/call' && (reads < r.completed || reads > r.sent)) {
          throw new Error(`${target.name}: ${r.completed} page reads answered of ${r.sent} sent, but the upstream served ${reads}`);
        }
        rows.push(r);
      }
    }
  }

  const pad = (s: string | number, n: number) => String(s).padEnd(n);
  console.log(`\n${pad('target', 22)}${pad('method', 12)}${pad('c', 4)}${pad('req/s', 10)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('errors', 8)}cpu µs`);
  for (const r of rows) {
    const cpu = r.cpuPerCall === undefined ? '' : Math.round(r.cpuPerCall);
    console.log(
      `${pad(r.target, 22)}${pad(r.method, 12)}${pad(r.connections, 4)}${pad(Math.round(r.rps), 10)}${pad(r.p50, 8)}${pad(r.p99, 8)}${pad(r.errors, 8)}${cpu}`,
    );
  }
  const failed = rows.filter((r) => r.errors > 0);
  if (failed.length)
    throw new Error(`errors in ${failed.map((r) => `${r.target} ${r.method} c=${r.connections}`).join(', ')}: the ratios would not mean anything`);

  const rps = (target: string, method: string, c: number) => rows.find((r) => r.target === target && r.method === method && r.connections === c)!.rps;
  const ratio = (method: Method, c: number, a: string, b: string, label: string) =>
    `${method} c=${c} ${label} ${(rps(a, method, c) / rps(b, method, c)).toFixed(2)}`;
  const lines: string[] = [];
  for (const c of [1, 32]) {
    lines.push(`tools/call c=${c} ours/direct-upstream ${(rps(OURS, 'tools/call', c) / rps('direct upstream', 'GET /ping', c)).toFixed(2)}`);
    lines.push(ratio('tools/list', c, OURS, REFERENCE, 'ours/reference'));
    lines.push(ratio('tools/call', c, OURS, SDK_V2, 'ours/sdk-v2'));
  }
  // The goals, last, so that one glance at the end of the output says where we stand.
  for (const c of [32, 1]) {
    lines.push(ratio('tools/call', c, OURS, BARE, 'ours/bare-proxy'));
    lines.push(ratio('tools/call', c, OURS_FILE, BARE, 'ours-file/bare-proxy'));
  }
  for (const c of [32, 1]) {
    lines.push(ratio('tools/call', c, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp'));
    lines.push(ratio('tools/list', c, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp'));
  }
  lines.push(ratio('tools/call', 1, OURS, REFERENCE, 'ours/reference'));
  lines.push(ratio('tools/call', 32, OURS, REFERENCE, 'ours/reference'));
  const rowOf = (target: string, c: number) => rows.find((r) => r.target === target && r.method === 'tools/call' && r.connections === c)!;
  // CPU time of the serving process per call. Flat out, each server answers at its own rate, and the CPU a
  // request costs falls as the rate rises (one wake-up serves several), so the bare proxy, twice as fast, looks
  // cheaper per call than at ours's rate. The goal line gives both the same offered load instead: half what
  // ours answered flat out, twice each, alternating, so that a slow moment of the machine hits both.
  const flatOut = rowOf(OURS, 32).cpuPerCall! / rowOf(BARE, 32).cpuPerCall!;
  const rate = Math.round(rowOf(OURS, 32).rps / 2);
  const paced: Record<string, number[]> = { [OURS]: [], [BARE]: [] };
  for (let i = 0; i < 2; i++) {
    for (const target of [general[0], bareProxy]) {
      const r = await measure(target, 'tools/call', 32, rate);
      if (r.errors > 0) throw new Error(`errors in ${target.name} tools/call c=32 at ${rate} req/s: the CPU line would not mean anything`);
      paced[target.name].push(r.cpuPerCall!);
    }
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  lines.push(
    `tools/call c=32 cpu-us-per-call ours/bare-proxy ${(sum(paced[OURS]) / sum(paced[BARE])).toFixed(2)} (both at ${rate} req/s; flat out ${flatOut.toFixed(2)})`,
  );
  if (oursMongo) {
    // At c=1 the commands sent while a call is answered are the ones it waits for, one after the other.
    const single = rowOf(OURS_MONGO, 1);
    lines.push(
      `mongo commands per call c=1 ${single.onPathPerCall!.toFixed(2)} (on the call's path; ${(single.commandsPerCall! - single.onPathPerCall!).toFixed(2)} more in the background)`,
    );
    lines.push(`mongo writes per call c=32 ${rowOf(OURS_MONGO, 32).writesPerCall!.toFixed(2)}`);
  }
  console.log(`\nratios (req/s):\n${lines.join('\n')}`);
}

runBench(main);
