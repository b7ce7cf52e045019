// `npm run bench`: this service vs the official SDK references, the official Notion MCP server and the bare
// upstream, in one run, on loopback only, with bare Koa+got proxies as the floors (of the demo call and of the
// Notion rows) and node's http server alone under the Notion list. Each server runs in its own process;
// autocannon drives tools/list and tools/call at concurrency 1 and 32, and every answer is checked (a 200 that
// carries an error counts as an error). Prints req/s, p50 and p99 per row, then the ratios, one line per goal.
// BENCH_SECONDS sets the length of each row (default 5). While a server is measured, every other but the upstream
// is stopped (alone(), processes.ts): the idle ones' background work is no noise in its row.
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import {
  BENCH_PAGE,
  PAGE_ID_IN_ANSWER,
  WARM_SECONDS,
  alone,
  benchPageId,
  cpuMicros,
  launch,
  launchNotionMcp,
  mongoForBench,
  runBench,
  shareOf,
} from './processes.ts';

const SECONDS = Number(process.env.BENCH_SECONDS || 5);
/**
 * Each row's seconds are spread over this many turns: the targets of one method and concurrency take turns
 * (one after the other, the order reversed every other turn), so a busy moment of a shared machine falls on
 * all of them alike instead of on whichever row ran then.
 */
const TURNS = Number(process.env.BENCH_TURNS || 5);
/** This service: key auth + rate limits + credit charge + tool spec + ledger + usage, i.e. the full pipeline. */
const OURS = 'ours (full pipeline)';
/**
 * The same run through tsx instead of the build. Every other row of ours (and the two bare proxies) runs
 * built, as `npm start` runs the service (runtime/build.ts); this row says what the build gains.
 */
const OURS_TSX = 'ours (tsx)';
/** The same on the file-backed embedded store that `npm start` uses. */
const OURS_FILE = 'ours (file store)';
/** The same on MongoDB (FerretDB, the test peer, unless MONGODB_URL names another server). */
const OURS_MONGO = 'ours (MongoDB)';
const REFERENCE = 'reference (SDK v1)';
const SDK_V2 = 'SDK v2 handler';
const BARE = 'bare Koa+got proxy';
/** The same plus one durable append per call, group-committed: the floor for a service that records every call before it answers. */
const BARE_DURABLE = 'bare durable proxy';
/** Our Notion tools (tool-specs/workspace) and the official Notion MCP server, reading the same page. */
const OURS_NOTION = 'ours (Notion tools)';
const NOTION_MCP = 'official Notion MCP';
/** The floor of the Notion rows (bare-proxy.ts --notion): what any server in front of got and Koa can reach on this machine. */
const BARE_NOTION = 'bare Notion proxy';
/** Under it, on tools/list only (raw-list.ts): node's http server writing the list's bytes, no framework: what this machine allows any server. */
const RAW_LIST = 'node:http alone (list)';

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
/** A page read, of a page of its own for every send (the upstream then tells which calls reached it). */
const readPage =
  (name: string): Body =>
  (id) =>
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { page_id: benchPageId(id) } } });
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
  /** Where the target's tools/call reads a page of its own per call: the upstream, asked which of the answered pages it served. */
  pagesServedBy?: string;
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
  /** The MongoDB commands the server sent during the measure (commandCounts). */
  store?: CommandCounts;
  /** Of those, the ones sent on a call's path, by kind (name, collection, the shape of its filter and update). */
  pathKinds?: Record<string, number>;
  /** What the row's turns add up to: seconds measured, CPU µs, and each turn's p50. */
  seconds: number;
  cpu: number;
  p50s: number[];
}

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** The request autocannon sends to a target, again and again, each time with a new id. */
function post(target: Target, method: Method): autocannon.Request {
  const body = target.bodies[method]!;
  return { method: 'POST', headers: { ...MCP_HEADERS, ...target.headers }, setupRequest: (req: autocannon.Request) => ({ ...req, body: body(nextId++) }) };
}

const started = Date.now();
/** The upstream every server calls: never stopped while another is measured (alone). */
let upstreamPid: string | undefined;
const progress = (what: string) => console.error(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${what}`);

/**
 * One measure of `seconds`. `rate`: requests per second for all connections together (autocannon's
 * overallRate); as fast as answered when absent.
 */
async function measure(target: Target, method: Method, connections: number, seconds = SECONDS, rate?: number): Promise<Row> {
  const expected = target.expect[method]!;
  const cpuBefore = target.pid ? await cpuMicros(target.pid) : 0;
  const countsBefore = target.commands ? await commandCounts(target.commands) : undefined;
  const kindsBefore = target.commands ? await pathKinds(target.commands) : undefined;
  let wrong = 0;
  const pages: string[] = [];
  const result = await autocannon({
    url: target.url,
    connections,
    duration: seconds,
    ...(rate && { overallRate: rate }),
    requests: [
      {
        ...post(target, method),
        onResponse: (status: number, answer: string) => {
          if (status !== 200) return;
          if (!answer.includes(expected) || answer.includes('"isError":true')) wrong++;
          else if (target.pagesServedBy && method === 'tools/call') pages.push(PAGE_ID_IN_ANSWER.exec(answer)?.[0] ?? 'no page id in the answer');
        },
      },
    ],
  });
  // Every answered page read reached the upstream: an answer the upstream never served is an error of the row.
  if (pages.length) wrong += await pagesNotServed(target.pagesServedBy!, pages);
  const r = row(target.name, method, connections, result, wrong);
  if (target.pid) {
    r.cpu = (await cpuMicros(target.pid)) - cpuBefore;
    r.cpuPerCall = r.cpu / r.completed;
  }
  if (countsBefore) {
    const after = await commandCounts(target.commands!);
    r.store = { commands: 0, writes: 0, onPath: 0, ownerLine: 0 };
    for (const k of Object.keys(r.store) as Array<keyof CommandCounts>) r.store[k] = after[k] - countsBefore[k];
    const kindsAfter = await pathKinds(target.commands!);
    r.pathKinds = Object.fromEntries(Object.entries(kindsAfter).map(([kind, n]) => [kind, n - (kindsBefore![kind] ?? 0)]));
  }
  return r;
}

/**
 * A measure of `target` with every other server but the upstream stopped (alone, processes.ts). The target was
 * stopped itself while the one before was measured: its timers are overdue when it goes on, and a live process is
 * never in that state (a MongoDB instance's change feed, read each second, is then too old to vouch for its
 * caches, so its first calls would read the store). A few calls, not counted, let that background work run first.
 */
function measureAlone(target: Target, method: Method, connections: number, seconds: number, rate?: number): Promise<Row> {
  return alone([upstreamPid, target.pid], async () => {
    await autocannon({ url: target.url, connections: 1, amount: 20, requests: [post(target, method)] });
    return measure(target, method, connections, seconds, rate);
  });
}

/** WARM_SECONDS at c=32 of each method a target is measured on, so that JIT and connection pools are in their steady state. */
async function warm(target: Target, methods: Method[]): Promise<void> {
  progress(`warm ${target.name}`);
  // Every method it is measured on, in turn on each connection: a list measured cold was measured compiling.
  await alone([upstreamPid, target.pid], () =>
    autocannon({ url: target.url, connections: 32, duration: WARM_SECONDS, requests: methods.map((method) => post(target, method)) }),
  );
}

/** Each target measured for SECONDS in TURNS turns taken in turn with the others: one row each, their sums. */
async function measureInTurns(targets: Target[], method: Method, connections: number): Promise<Row[]> {
  progress(`${method} c=${connections}: ${targets.map((t) => t.name).join(', ')}`);
  const rows = new Map<Target, Row>();
  for (let turn = 0; turn < TURNS; turn++) {
    for (const target of turn % 2 ? [...targets].reverse() : targets) {
      const r = await measureAlone(target, method, connections, SECONDS / TURNS);
      const sum = rows.get(target);
      rows.set(target, sum ? added(sum, r) : r);
    }
  }
  return targets.map((t) => rows.get(t)!);
}

/** Two measures of one target as one: counts added, the rate over both, the median of the p50s, the larger p99. */
function added(a: Row, b: Row): Row {
  const seconds = a.seconds + b.seconds;
  const cpu = a.cpu + b.cpu;
  const completed = a.completed + b.completed;
  const p50s = [...a.p50s, ...b.p50s];
  return {
    ...a,
    rps: (a.rps * a.seconds + b.rps * b.seconds) / seconds,
    p50: [...p50s].sort((x, y) => x - y)[Math.floor(p50s.length / 2)],
    p99: Math.max(a.p99, b.p99),
    errors: a.errors + b.errors,
    completed,
    sent: a.sent + b.sent,
    seconds,
    cpu,
    p50s,
    ...(a.cpuPerCall !== undefined && { cpuPerCall: cpu / completed }),
    ...(a.store && b.store && { store: sumCounts([a.store, b.store]) }),
    ...(a.pathKinds && b.pathKinds && { pathKinds: addedKinds(a.pathKinds, b.pathKinds) }),
  };
}

const sumCounts = (counts: CommandCounts[]): CommandCounts => ({
  commands: counts.reduce((n, c) => n + c.commands, 0),
  writes: counts.reduce((n, c) => n + c.writes, 0),
  onPath: counts.reduce((n, c) => n + c.onPath, 0),
  ownerLine: counts.reduce((n, c) => n + c.ownerLine, 0),
});

const addedKinds = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries([...new Set([...Object.keys(a), ...Object.keys(b)])].map((kind) => [kind, (a[kind] ?? 0) + (b[kind] ?? 0)]));

async function pagesNotServed(upstream: string, pages: string[]): Promise<number> {
  const res = await fetch(`${upstream}/__served`, { method: 'POST', body: JSON.stringify(pages) });
  return ((await res.json()) as { missing: number }).missing;
}

/**
 * MongoDB commands a server sent: all, the writes among them, those sent while answering a request (on a call's
 * path), and the writes to the owner's credit document (the owner's line).
 */
interface CommandCounts {
  commands: number;
  writes: number;
  onPath: number;
  ownerLine: number;
}
async function commandCounts(url: string): Promise<CommandCounts> {
  return (await (await fetch(url)).json()) as CommandCounts;
}
/** How many commands of each kind a server sent on a call's path so far. */
async function pathKinds(url: string): Promise<Record<string, number>> {
  const kinds = (await (await fetch(`${url}kinds`)).json()) as Record<string, { onPath: number }>;
  return Object.fromEntries(Object.entries(kinds).map(([kind, n]) => [kind, n.onPath]));
}

async function measureGet(name: string, url: string, connections: number): Promise<Row> {
  return row(name, 'GET /ping', connections, await alone([upstreamPid], () => autocannon({ url, connections, duration: SECONDS })), 0);
}

function row(target: string, method: string, connections: number, result: autocannon.Result, wrong: number): Row {
  return {
    target,
    method,
    connections,
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts + wrong,
    completed: result['2xx'],
    sent: result.requests.sent,
    seconds: result.duration,
    cpu: 0,
    p50s: [result.latency.p50],
  };
}

async function main(): Promise<void> {
  const upstreamServer = await launch('upstream.ts');
  const upstream = upstreamServer.url;
  upstreamPid = upstreamServer.pid;
  const mongodbUrl = mongoForBench();
  if (!mongodbUrl) progress('NO MongoDB-wire server (set MONGODB_URL, or install Go for the FerretDB peer): the MongoDB rows and lines are left out');
  // The MongoDB row's database and master key, which the two more instances of the owner-line measure share.
  const mongoEnv = mongodbUrl && {
    BENCH_STORE: 'mongodb',
    BENCH_MONGODB_URL: mongodbUrl,
    BENCH_MONGODB_DB: `bench_${process.pid}`,
    BENCH_MASTER_KEY: randomBytes(32).toString('hex'),
  };
  const [ours, oursTsx, oursFile, oursNotion, notionMcp, v1, v2, bare, bareDurable, oursMongo] = await Promise.all([
    launch('ours.ts', [upstream], {}, true),
    launch('ours.ts', [upstream]),
    launch('ours.ts', [upstream], { BENCH_STORE: 'file' }, true),
    launch('ours.ts', [upstream], { BENCH_FAMILY: 'workspace' }, true),
    launchNotionMcp(upstream),
    launch('reference-v1.ts', [upstream]),
    launch('reference-v2.ts', [upstream]),
    launch('bare-proxy.ts', [upstream], {}, true),
    launch('bare-proxy.ts', [upstream, '--durable'], {}, true),
    mongoEnv ? launch('ours.ts', [upstream], mongoEnv, true) : undefined,
  ]);
  const notionList = { BENCH_NOTION_LIST: await listResult(oursNotion) };
  const [bareNotion, rawList] = await Promise.all([
    launch('bare-proxy.ts', [upstream, '--notion'], notionList, true),
    launch('raw-list.ts', [], notionList, true),
  ]);
  // Two more instances serving the MongoDB row's owner, server and key: one busy owner through three processes.
  // Started for that measure only, at the end: their polls of the store would load FerretDB during every row.
  const join = oursMongo && { BENCH_JOIN: JSON.stringify({ owner: oursMongo.owner, server: oursMongo.server, key: oursMongo.key }) };
  const moreInstances = () => Promise.all([1, 2].map(() => launch('ours.ts', [upstream], { ...mongoEnv, ...join }, true)));
  const demo = (name: string, server: Record<string, string>, headers: Record<string, string> = {}): Target => ({
    name,
    url: server.url,
    pid: server.pid,
    commands: server.commands,
    headers,
    bodies: { 'tools/list': rpc('tools/list'), 'tools/call': call('demo_ping') },
    expect: { 'tools/list': 'demo_ping', 'tools/call': '"ok":true' },
  });
  const keyed = (name: string, server: Record<string, string>) => demo(name, server, { authorization: `Bearer ${server.key}` });
  const general = [keyed(OURS, ours), keyed(OURS_FILE, oursFile), ...(oursMongo ? [keyed(OURS_MONGO, oursMongo)] : []), demo(REFERENCE, v1), demo(SDK_V2, v2)];
  const bareProxy = demo(BARE, bare);
  /** Measured on tools/call only: the two floors, and ours through tsx. */
  const callOnly = [bareProxy, demo(BARE_DURABLE, bareDurable), keyed(OURS_TSX, oursTsx)];
  const notion: Target[] = [
    {
      name: OURS_NOTION,
      url: oursNotion.url,
      pid: oursNotion.pid,
      headers: { authorization: `Bearer ${oursNotion.key}` },
      bodies: { 'tools/list': rpc('tools/list'), 'tools/call': readPage('get_page') },
      expect: { 'tools/list': 'get_page', 'tools/call': BENCH_PAGE.title },
      pagesServedBy: upstream,
    },
    {
      name: NOTION_MCP,
      url: notionMcp.url,
      pid: notionMcp.pid,
      headers: notionMcp.headers,
      bodies: { 'tools/list': rpc('tools/list'), 'tools/call': readPage('API-retrieve-a-page') },
      expect: { 'tools/list': 'API-retrieve-a-page', 'tools/call': BENCH_PAGE.title },
      pagesServedBy: upstream,
    },
    {
      name: BARE_NOTION,
      url: bareNotion.url,
      pid: bareNotion.pid,
      headers: {},
      bodies: { 'tools/list': rpc('tools/list'), 'tools/call': readPage('get_page') },
      expect: { 'tools/list': 'get_page', 'tools/call': BENCH_PAGE.title },
      pagesServedBy: upstream,
    },
  ];
  /** Measured on tools/list only. */
  const listOnly: Target[] = [
    { name: RAW_LIST, url: rawList.url, pid: rawList.pid, headers: {}, bodies: { 'tools/list': rpc('tools/list') }, expect: { 'tools/list': 'get_page' } },
  ];
  progress('all servers up');
  for (const t of [...general, ...notion]) await warm(t, ['tools/list', 'tools/call']);
  for (const t of callOnly) await warm(t, ['tools/call']);
  for (const t of listOnly) await warm(t, ['tools/list']);

  const rows: Row[] = [];
  for (const connections of [1, 32]) {
    progress(`direct upstream c=${connections}`);
    rows.push(await measureGet('direct upstream', `${upstream}/ping`, connections));
    rows.push(...(await measureInTurns([...general, ...notion, ...listOnly], 'tools/list', connections)));
    rows.push(...(await measureInTurns([...general, ...callOnly, ...notion], 'tools/call', connections)));
  }
  const instances = oursMongo ? [oursMongo, ...(await moreInstances())] : [];
  const sharedOwner = instances.map((server, i) => keyed(`${OURS_MONGO} #${i + 1}`, server));
  for (const t of sharedOwner.slice(1)) await warm(t, ['tools/call']);
  const shared = sharedOwner.length ? await measureSharedOwner(sharedOwner) : undefined;
  if (shared) rows.push(shared);

  const pad = (s: string | number, n: number) => String(s).padEnd(n);
  console.log(`\n${pad('target', 24)}${pad('method', 12)}${pad('c', 4)}${pad('req/s', 10)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('errors', 8)}cpu µs`);
  for (const r of rows) {
    const cpu = r.cpuPerCall === undefined ? '' : Math.round(r.cpuPerCall);
    console.log(
      `${pad(r.target, 24)}${pad(r.method, 12)}${pad(r.connections, 4)}${pad(Math.round(r.rps), 10)}${pad(r.p50, 8)}${pad(r.p99, 8)}${pad(r.errors, 8)}${cpu}`,
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
    lines.push(ratio('tools/call', c, OURS, REFERENCE, 'ours/reference'));
  }
  for (const c of [1, 32]) {
    lines.push(ratio('tools/call', c, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp'));
    lines.push(ratio('tools/list', c, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp'));
    lines.push(ratio('tools/call', c, BARE_NOTION, NOTION_MCP, 'bare-notion-proxy/notion-mcp'));
    lines.push(ratio('tools/list', c, BARE_NOTION, NOTION_MCP, 'bare-notion-proxy/notion-mcp'));
    lines.push(ratio('tools/list', c, RAW_LIST, NOTION_MCP, 'node-http-alone/notion-mcp'));
  }
  lines.push(ratio('tools/call', 1, OURS, BARE, 'ours/bare-proxy'));
  lines.push(ratio('tools/call', 1, OURS_FILE, BARE, 'ours-file/bare-proxy'));
  lines.push(ratio('tools/call', 32, OURS_FILE, BARE_DURABLE, 'ours-file/bare-durable-proxy'));
  lines.push(ratio('tools/call', 1, OURS_FILE, BARE_DURABLE, 'ours-file/bare-durable-proxy'));
  for (const c of [1, 32]) lines.push(ratio('tools/call', c, OURS, OURS_TSX, 'ours-built/ours-tsx'));
  const cpuAt32 = (target: string) => rows.find((r) => r.target === target && r.method === 'tools/call' && r.connections === 32)!.cpuPerCall!;
  lines.push(`tools/call c=32 cpu-us-per-call ours-built/ours-tsx ${(cpuAt32(OURS) / cpuAt32(OURS_TSX)).toFixed(2)} (flat out)`);

  // The goals of #31, last, so that one glance at the end of the output says where we stand.
  const goals: string[] = [];
  goals.push(ratio('tools/call', 32, OURS, BARE, 'ours/bare-proxy'));
  goals.push(ratio('tools/call', 32, OURS_FILE, BARE, 'ours-file/bare-proxy'));
  goals.push(ratio('tools/call', 1, OURS, BARE_DURABLE, 'ours/bare-durable-proxy'));
  goals.push(await cpuLine(rows, general[0], bareProxy));
  if (oursMongo) {
    const rowOf = (target: string, c: number) => rows.find((r) => r.target === target && r.method === 'tools/call' && r.connections === c)!;
    // At c=1 the commands sent while a call is answered are the ones it waits for, one after the other. Per call
    // the server got: the calls in flight when a measure stops are not among those answered, but they are served.
    const perCall = (r: Row, count: (c: CommandCounts) => number) => (count(r.store!) / r.sent).toFixed(2);
    const single = rowOf(OURS_MONGO, 1);
    const kinds = Object.entries(single.pathKinds!)
      .filter(([, n]) => n > 0)
      .sort(([, x], [, y]) => y - x)
      .map(([kind, n]) => `${(n / single.sent).toFixed(3)} ${kind}`);
    goals.push(
      `mongo commands per call c=1 ${perCall(single, (c) => c.onPath)} (on the call's path: ${kinds.join('; ')}; ${perCall(single, (c) => c.commands - c.onPath)} more in the background)`,
    );
    goals.push(`mongo writes per call c=32 ${perCall(rowOf(OURS_MONGO, 32), (c) => c.writes)}`);
    goals.push(
      `owner line writes per call c=32 ${perCall(shared!, (c) => c.ownerLine)} (one owner through ${instances.length} processes, ${Math.round(shared!.rps)} calls/s together)`,
    );
  }
  // With the floors' ratios in the same run beside them: the most any server in front of got and Koa reached,
  // and for the list any server at all.
  const toNotionMcp = (name: string, method: Method) => (rps(name, method, 32) / rps(NOTION_MCP, method, 32)).toFixed(2);
  goals.push(`${ratio('tools/call', 32, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp')} (the bare Notion proxy: ${toNotionMcp(BARE_NOTION, 'tools/call')})`);
  goals.push(
    `${ratio('tools/list', 32, OURS_NOTION, NOTION_MCP, 'ours/notion-mcp')} (the bare Notion proxy: ${toNotionMcp(BARE_NOTION, 'tools/list')}; node:http alone: ${toNotionMcp(RAW_LIST, 'tools/list')})`,
  );
  console.log(`\nratios (req/s):\n${lines.join('\n')}\n\ngoals:\n${goals.join('\n')}`);
}

/** The `result` of a server's tools/list, as it sends it. */
async function listResult(server: Record<string, string>): Promise<string> {
  const res = await fetch(server.url, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${server.key}` }, body: rpc('tools/list')(0) });
  const text = await res.text();
  if (!res.ok) throw new Error(`tools/list of ${server.url} answered ${res.status}: ${text.slice(0, 200)}`);
  return JSON.stringify((JSON.parse(text) as { result: unknown }).result);
}

/**
 * CPU time of the serving process per call. Flat out, each server answers at its own rate, and the CPU a request
 * costs falls as the rate rises (one wake-up serves several), so the bare proxy, twice as fast, looks cheaper
 * per call than at ours's rate. The goal line gives both the same offered load instead: half what ours answered
 * flat out, twice each, alternating, so that a slow moment of the machine hits both.
 */
async function cpuLine(rows: Row[], ours: Target, bare: Target): Promise<string> {
  const rowOf = (target: string) => rows.find((r) => r.target === target && r.method === 'tools/call' && r.connections === 32)!;
  const flatOut = rowOf(ours.name).cpuPerCall! / rowOf(bare.name).cpuPerCall!;
  const rate = Math.round(rowOf(ours.name).rps / 2);
  const paced = new Map<Target, number>([
    [ours, 0],
    [bare, 0],
  ]);
  for (let i = 0; i < 2; i++) {
    for (const target of [ours, bare]) {
      progress(`${target.name} tools/call c=32 at ${rate} req/s`);
      const r = await measureAlone(target, 'tools/call', 32, SECONDS, rate);
      if (r.errors > 0) throw new Error(`errors in ${target.name} tools/call c=32 at ${rate} req/s: the CPU line would not mean anything`);
      paced.set(target, paced.get(target)! + r.cpuPerCall!);
    }
  }
  return `tools/call c=32 cpu-us-per-call ours/bare-proxy ${(paced.get(ours)! / paced.get(bare)!).toFixed(2)} (both at ${rate} req/s; flat out ${flatOut.toFixed(2)})`;
}

/**
 * One owner's calls through several instances at once (32 connections shared among them), as a busy owner
 * behind a load balancer: the calls answered and the writes that reached the owner's credit document.
 */
async function measureSharedOwner(instances: Target[]): Promise<Row> {
  progress(`one owner through ${instances.map((t) => t.name).join(', ')} at once`);
  const pids = [upstreamPid, ...instances.map((t) => t.pid)];
  const parts = await alone(pids, () => Promise.all(instances.map((t, i) => measure(t, 'tools/call', shareOf(32, instances.length, i)))));
  const total = (pick: (r: Row) => number) => parts.reduce((sum, r) => sum + pick(r), 0);
  return {
    target: `${OURS_MONGO} x${instances.length}`,
    method: 'tools/call',
    connections: 32,
    rps: total((r) => r.rps),
    // The slowest instance's.
    p50: Math.max(...parts.map((r) => r.p50)),
    p99: Math.max(...parts.map((r) => r.p99)),
    errors: total((r) => r.errors),
    completed: total((r) => r.completed),
    sent: total((r) => r.sent),
    seconds: SECONDS,
    cpu: 0,
    p50s: [],
    store: sumCounts(parts.map((r) => r.store!)),
  };
}

runBench(main);
