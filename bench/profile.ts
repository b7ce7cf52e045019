// `npm run bench:profile`: where a tools/call's CPU time goes, in µs per call, by stage of the pipeline.
// Each server runs under V8's CPU profiler (100 µs sampling) for PROFILE_CALLS calls (default 20,000) at
// PROFILE_CONNECTIONS (default 32), after a warm-up that is left out of the profile. Every sample is charged
// to the innermost frame of its stack that belongs to a stage (so got's socket writes count as got, and
// ajv's generated code as validation); idle time is left out. Prints one markdown table, stages as rows.
// PROFILE_OUT=<dir> keeps the profiles there (<server>.cpuprofile: open in Chrome DevTools or speedscope
// for the flame graph); PROFILE_ONLY=ours-memory,ours-file,bare-proxy (the default), bare-durable, ours-tsx,
// bare-tsx, ours-notion picks the servers. They run built, as `npm start` runs the service, except the -tsx ones.
// PROFILE_METHOD=tools/list profiles tools/list instead (ours only: the bare proxy answers every POST as a call).
// PROFILE_HEAP=1 runs V8's sampling heap profiler alongside and prints a second table: bytes allocated per call
// by stage, collected or not (what the garbage collector's share comes from); kept as <server>.heapprofile.
// PROFILE_PERF=1 samples with Linux perf instead (on-CPU time, every thread of the process, JIT frames named
// through node's --perf-basic-prof) and prints the functions that take most of a call: V8's sampler charges
// whatever native function a signal interrupts (a SHA-256 of the key: 31 µs a call by V8's profiler, 3 by perf),
// perf does not. Needs `perf` (Debian's linux-perf) and perf_event_paranoid <= 1 or root.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { BENCH_PAGE, children, cpuMicros, launch, runBench } from './processes.ts';

const CALLS = Number(process.env.PROFILE_CALLS || 20_000);
const CONNECTIONS = Number(process.env.PROFILE_CONNECTIONS || 32);
const call = (name: string, args: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
const METHOD = process.env.PROFILE_METHOD === 'tools/list' ? 'tools/list' : 'tools/call';
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const PING = METHOD === 'tools/list' ? LIST : call('demo_ping', {});
const GET_PAGE = METHOD === 'tools/list' ? LIST : call('get_page', { page_id: BENCH_PAGE.id });

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  id: number;
  callFrame: Frame;
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
  samples: Array<{ size: number; nodeId: number }>;
}
const HEAP = process.env.PROFILE_HEAP === '1';
const PERF = process.env.PROFILE_PERF === '1';
/** perf's functions shown per server: the heaviest. */
const PERF_TOP = Number(process.env.PROFILE_TOP || 30);
/** perf's row of the process's whole CPU time a call. */
const ALL = '(all)';

/** Stages, tried from the innermost frame outwards; the first that claims a frame takes the sample. */
const STAGES: Array<[string, (f: Frame) => boolean]> = [
  ['log (pino)', (f) => /node_modules\/(pino|sonic-boom|thread-stream)|runtime\/log\.ts/.test(f.url)],
  ['validation (ajv)', (f) => /node_modules\/ajv/.test(f.url) || (f.url === '' && /^validate\d*$/.test(f.functionName))],
  ['rate limits', (f) => /rate-limiter-flexible|runtime\/access\/rate-limit\.ts/.test(f.url)],
  [
    'auth (key lookup)',
    (f) =>
      /runtime\/access\/keys\.ts|runtime\/oauth\//.test(f.url) || (/runtime\/pipeline\/call-pipeline\.ts/.test(f.url) && /authenticate/.test(f.functionName)),
  ],
  ['credits', (f) => /runtime\/billing\/credits\.ts/.test(f.url)],
  ['ledger', (f) => /runtime\/billing\/ledger\.ts/.test(f.url)],
  ['store', (f) => /runtime\/store\/|node_modules\/(@seald-io\/nedb|nedb|mongodb|bson)/.test(f.url)],
  ['render request', (f) => /runtime\/engine\//.test(f.url) && /render|authHeaders|accountFacts|bind/.test(f.functionName)],
  ['mapping (templates)', (f) => /runtime\/template\//.test(f.url) || /node_modules\/handlebars/.test(f.url)],
  ['plugins', (f) => /\/plugins\//.test(f.url)],
  [
    'got + outbound guard',
    (f) =>
      /node_modules\/(got|@szmarczak|cacheable|http2-wrapper|responselike|lowercase-keys|p-cancelable|decompress-response|form-data-encoder|@sindresorhus|byte-counter|chunk-data)|runtime\/http\/(client|guard)\.ts/.test(
        f.url,
      ),
  ],
  ['engine (other)', (f) => /runtime\/engine\//.test(f.url)],
  ['tools, accounts, call pipeline', (f) => /runtime\/(servers|accounts|pipeline)\//.test(f.url)],
  ['MCP protocol + JSON', (f) => /runtime\/mcp\//.test(f.url)],
  [
    'Koa + middleware',
    (f) =>
      /node_modules\/(koa|@koa|koa-compose|on-finished|statuses|http-errors|content-type|type-is|accepts|vary|cookies|delegates)|runtime\/(service|http|metrics)/.test(
        f.url,
      ) || /bench\/bare-proxy/.test(f.url),
  ],
  // File writes belong to whoever writes (the log, the store's files), so node:fs is left to the callers.
  ['node http + sockets', (f) => /^node:/.test(f.url) && !/^node:(internal\/)?fs/.test(f.url)],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
];

/**
 * A built server's frames name its bundle: each is moved to the TypeScript source its source map gives (what
 * the stages match, and what a flame graph of a kept profile should show).
 */
function mapToSources(profile: { nodes: Array<{ callFrame: Frame }> }): void {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (url: string) => {
    if (!maps.has(url)) {
      let map: SourceMap | null = null;
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')) as SourceMapPayload);
      } catch {
        // not a bundle of ours (a package's file): kept as it is
      }
      maps.set(url, map);
    }
    return maps.get(url);
  };
  for (const { callFrame: f } of profile.nodes) {
    const map = f.url.startsWith('file://') && f.url.endsWith('.js') ? mapOf(f.url) : null;
    const entry = map?.findEntry(f.lineNumber, f.columnNumber);
    if (!entry || !('originalSource' in entry)) continue;
    Object.assign(f, { url: new URL(entry.originalSource, f.url).href, lineNumber: entry.originalLine, columnNumber: entry.originalColumn });
  }
}

/** `weight(i)` of each sample `i`, summed by the stage of its node. */
function stagesOf(profile: Pick<CpuProfile, 'nodes' | 'samples'>, weight: (i: number) => number): Map<string, number> {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stageOfNode = new Map<number, string | null>();
  const stageOf = (id: number): string | null => {
    if (stageOfNode.has(id)) return stageOfNode.get(id)!;
    // A heap sample may name a node the profile's tree no longer has (its stack was dropped): no stage to give.
    const frame = byId.get(id)?.callFrame;
    if (!frame) return 'other (V8, tsx, timers)';
    if (frame.functionName === '(idle)') return null;
    const own = STAGES.find(([, claims]) => claims(frame))?.[0];
    const up = parent.get(id);
    const stage = own ?? (up === undefined ? 'other (V8, tsx, timers)' : stageOf(up));
    stageOfNode.set(id, stage);
    return stage;
  };
  const micros = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const stage = stageOf(id);
    if (stage) micros.set(stage, (micros.get(stage) ?? 0) + weight(i));
  });
  return micros;
}

interface Server {
  title: string;
  /** Its name in PROFILE_ONLY and PROFILE_OUT. */
  name: string;
  file: string;
  args?: string[];
  env?: Record<string, string>;
  body: string;
  /** Run from the build, as `npm start` runs the service (processes.ts, launch). */
  built?: boolean;
}

/** A heap profile's tree as a CPU profile's list of nodes, its samples as node ids (weighed by `sizes`). */
function flatHeap(heap: HeapProfile): { nodes: ProfileNode[]; samples: number[]; sizes: number[] } {
  const nodes: ProfileNode[] = [];
  const walk = (n: HeapNode) => {
    nodes.push({ id: n.id, callFrame: n.callFrame, children: n.children.map((c) => c.id) });
    n.children.forEach(walk);
  };
  walk(heap.head);
  return { nodes, samples: heap.samples.map((s) => s.nodeId), sizes: heap.samples.map((s) => s.size) };
}

/** When the server wrote `file` (after the second signal): its JSON. */
async function written<T>(file: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text) return JSON.parse(text) as T;
    await sleep(100);
  }
  throw new Error(`no profile written to ${file}`);
}

async function profileOf(server: Server, upstream: string): Promise<{ cpu: Map<string, number>; heap?: Map<string, number> }> {
  const { name, file, body } = server;
  const dir = await mkdtemp(path.join(tmpdir(), 'tool-server-profile-'));
  const out = path.join(dir, 'cpu.json');
  const heapOut = path.join(dir, 'heap.json');
  const env = PERF
    ? Object.assign({}, server.env, { BENCH_NODE_FLAGS: `${process.env.BENCH_NODE_FLAGS ?? ''} --perf-basic-prof` })
    : Object.assign({}, server.env, { BENCH_PROFILE: out }, HEAP ? { BENCH_HEAP_PROFILE: heapOut } : {});
  const target = await launch(file, [upstream, ...(server.args ?? [])], env, server.built);
  const child = children.at(-1)!;
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(target.key ? { authorization: `Bearer ${target.key}` } : {}),
  };
  const run = (amount: number) => autocannon({ url: target.url, connections: CONNECTIONS, amount, method: 'POST', headers, body });
  await run(3000);
  if (PERF) {
    const cpu = await perfOf(target.pid!, dir, () => run(CALLS));
    await rm(dir, { recursive: true, force: true });
    return { cpu };
  }
  child.kill('SIGUSR2');
  await sleep(200);
  const result = await run(CALLS);
  if (result.non2xx || result.errors) throw new Error(`${file}: ${result.non2xx + result.errors} failed calls`);
  child.kill('SIGUSR2');
  const profile = await written<CpuProfile>(out);
  const heapProfile = HEAP ? await written<HeapProfile>(heapOut) : undefined;
  await rm(dir, { recursive: true, force: true });
  mapToSources(profile);
  const kept = process.env.PROFILE_OUT;
  if (kept) {
    await mkdir(kept, { recursive: true });
    await writeFile(path.join(kept, `${name}.cpuprofile`), JSON.stringify(profile));
  }
  const perCall = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, v / CALLS]));
  const cpu = perCall(stagesOf(profile, (i) => profile.timeDeltas[i + 1] ?? 0));
  if (!heapProfile) return { cpu };
  const heap = flatHeap(heapProfile);
  mapToSources(heap);
  if (kept) await writeFile(path.join(kept, `${name}.heapprofile`), JSON.stringify(heapProfile));
  return { cpu, heap: perCall(stagesOf(heap, (i) => heap.sizes[i]!)) };
}

/**
 * perf's samples of the process `pid` while `work` runs (recorded into `dir`), as µs per call by function: each
 * function's share of the samples times the CPU time /proc gives the process over the same span.
 */
async function perfOf(pid: string, dir: string, work: () => Promise<autocannon.Result>): Promise<Map<string, number>> {
  const data = path.join(dir, 'perf.data');
  const perf = spawn('perf', ['record', '-F', '1999', '-p', pid, '-o', data], { stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  perf.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
  const ended = new Promise<number | null>((resolve, reject) => perf.once('exit', resolve).once('error', reject));
  await sleep(500); // perf attaches
  const before = await cpuMicros(pid);
  const result = await work();
  const cpu = (await cpuMicros(pid)) - before;
  perf.kill('SIGINT');
  // Stopped by the signal, perf exits with its number (or 0), after saying what it wrote.
  await ended;
  if (!said.includes('Captured and wrote')) throw new Error(`perf record failed: ${said.trim()}`);
  if (result.non2xx || result.errors) throw new Error(`${result.non2xx + result.errors} failed calls`);
  const args = ['report', '-i', data, '--stdio', '--no-children', '--sort', 'symbol', '-g', 'none', '--percent-limit', '0.05'];
  const { stdout } = await promisify(execFile)('perf', args, { maxBuffer: 64 << 20 });
  await rm(path.join(tmpdir(), `perf-${pid}.map`), { force: true }); // --perf-basic-prof's names of the JIT's code
  const micros = new Map<string, number>([[ALL, cpu / result.requests.total]]);
  for (const line of stdout.split('\n')) {
    // "  6.23%  [.] name  -  -": the name ends where two spaces begin the report's empty columns.
    const m = /^\s*([\d.]+)%\s+\[[.k]\]\s+(.+?)(?:\s{2}.*)?$/.exec(line);
    // A JIT frame, "callTool file:///.../bench-build-1/ours.js:23282:17", is named by its function and file.
    const name = m?.[2]!
      .replace(/^(?:JS|LazyCompile|Function|Builtin|Handler):[~*^]?/, '')
      .replace(/^ /, '(anonymous) ')
      .replace(/ (?:file:\/\/)?\/\S*\/([^/\s]+):\d+:\d+$/, ' ($1)');
    if (m) micros.set(name!, (micros.get(name!) ?? 0) + ((Number(m[1]) / 100) * cpu) / result.requests.total);
  }
  return micros;
}

function perfTable(columns: Array<[string, Map<string, number>]>): void {
  const heaviest = new Set(
    columns.flatMap(([, m]) =>
      [...m]
        .filter(([name]) => name !== ALL)
        .sort((a, b) => b[1] - a[1])
        .slice(0, PERF_TOP)
        .map(([name]) => name),
    ),
  );
  const rows = [...heaviest].sort((a, b) => Math.max(...columns.map(([, m]) => m.get(b) ?? 0)) - Math.max(...columns.map(([, m]) => m.get(a) ?? 0)));
  console.log(`\nCPU µs per ${METHOD} by function (${CALLS} calls at c=${CONNECTIONS}, perf, every thread of the process)\n`);
  console.log(`| function | ${columns.map(([n]) => n).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---:').join('|')}|`);
  for (const r of rows) console.log(`| \`${r.replace(/\|/g, '\\|').slice(0, 90)}\` | ${columns.map(([, m]) => (m.get(r) ?? 0).toFixed(1)).join(' | ')} |`);
  console.log(`| **the process, all of it** | ${columns.map(([, m]) => `**${m.get(ALL)!.toFixed(0)}**`).join(' | ')} |`);
}

async function main(): Promise<void> {
  const upstream = (await launch('upstream.ts')).url;
  const servers: Server[] = [
    { title: 'ours (memory store)', name: 'ours-memory', file: 'ours.ts', body: PING, built: true },
    { title: 'ours (file store)', name: 'ours-file', file: 'ours.ts', env: { BENCH_STORE: 'file' }, body: PING, built: true },
    { title: 'bare Koa+got proxy', name: 'bare-proxy', file: 'bare-proxy.ts', body: PING, built: true },
    // Only when asked for: the durable floor; ours and the bare proxy under tsx (what the build saves); our
    // Notion tools reading a page, the call the bench compares with the official Notion MCP server.
    { title: 'bare durable proxy', name: 'bare-durable', file: 'bare-proxy.ts', args: ['--durable'], body: PING, built: true },
    { title: 'ours (memory store, tsx)', name: 'ours-tsx', file: 'ours.ts', body: PING },
    { title: 'bare Koa+got proxy (tsx)', name: 'bare-tsx', file: 'bare-proxy.ts', body: PING },
    { title: 'ours (Notion get_page)', name: 'ours-notion', file: 'ours.ts', env: { BENCH_FAMILY: 'workspace' }, body: GET_PAGE, built: true },
  ];
  const only = (process.env.PROFILE_ONLY ?? 'ours-memory,ours-file,bare-proxy').split(',');
  const profiles: Array<[string, Awaited<ReturnType<typeof profileOf>>]> = [];
  for (const server of servers) if (only.includes(server.name)) profiles.push([server.title, await profileOf(server, upstream)]);
  if (PERF) return perfTable(profiles.map(([n, p]) => [n, p.cpu]));
  table(
    `CPU µs per ${METHOD} (${CALLS} calls at c=${CONNECTIONS}, V8 sampling profiler, idle excluded)`,
    profiles.map(([n, p]) => [n, p.cpu]),
  );
  if (HEAP) {
    const kb = profiles.map(([n, p]): [string, Map<string, number>] => [n, new Map([...p.heap!].map(([k, v]) => [k, v / 1024]))]);
    table(`KB allocated per ${METHOD} (V8 sampling heap profiler, collected objects included)`, kb, 1);
  }
}

function table(title: string, columns: Array<[string, Map<string, number>]>, digits = 0): void {
  const stages = [...STAGES.map(([s]) => s), 'other (V8, tsx, timers)'];
  const cell = (m: Map<string, number>, s: string) => (m.get(s) ? m.get(s)!.toFixed(digits) : '-');
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${title}\n`);
  console.log(`| stage | ${columns.map(([n]) => n).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---:').join('|')}|`);
  for (const s of stages) if (columns.some(([, m]) => m.get(s))) console.log(`| ${s} | ${columns.map(([, m]) => cell(m, s)).join(' | ')} |`);
  console.log(`| **total** | ${columns.map(([, m]) => `**${total(m).toFixed(digits)}**`).join(' | ')} |`);
}

runBench(main);
