// `npm run bench:profile`: where a tools/call's CPU time goes, in µs per call, by stage of the pipeline.
// Each server runs under V8's CPU profiler (100 µs sampling) for PROFILE_CALLS calls (default 20,000) at
// PROFILE_CONNECTIONS (default 32), after a warm-up that is left out of the profile. Every sample is charged
// to the innermost frame of its stack that belongs to a stage (so got's socket writes count as got, and
// ajv's generated code as validation); idle time is left out. Prints one markdown table, stages as rows.
// PROFILE_OUT=<dir> keeps the profiles there (<server>.cpuprofile: open in Chrome DevTools or speedscope
// for the flame graph); PROFILE_ONLY=ours-memory,ours-file,bare-proxy (the default), ours-notion picks the servers.
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { BENCH_PAGE, children, launch, runBench } from './processes.ts';

const CALLS = Number(process.env.PROFILE_CALLS || 20_000);
const CONNECTIONS = Number(process.env.PROFILE_CONNECTIONS || 32);
const call = (name: string, args: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
const PING = call('demo_ping', {});
const GET_PAGE = call('get_page', { page_id: BENCH_PAGE.id });

interface Frame {
  functionName: string;
  url: string;
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

function stagesOf(profile: CpuProfile): Map<string, number> {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stageOfNode = new Map<number, string | null>();
  const stageOf = (id: number): string | null => {
    if (stageOfNode.has(id)) return stageOfNode.get(id)!;
    const frame = byId.get(id)!.callFrame;
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
    if (stage) micros.set(stage, (micros.get(stage) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  });
  return micros;
}

async function profileOf(name: string, file: string, args: string[], env: Record<string, string>, body: string): Promise<Map<string, number>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tool-server-profile-'));
  const out = path.join(dir, 'cpu.json');
  const target = await launch(file, args, { ...env, BENCH_PROFILE: out });
  const child = children.at(-1)!;
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(target.key ? { authorization: `Bearer ${target.key}` } : {}),
  };
  const run = (amount: number) => autocannon({ url: target.url, connections: CONNECTIONS, amount, method: 'POST', headers, body });
  await run(3000);
  child.kill('SIGUSR2');
  await sleep(200);
  const result = await run(CALLS);
  if (result.non2xx || result.errors) throw new Error(`${file}: ${result.non2xx + result.errors} failed calls`);
  child.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const text = await readFile(out, 'utf8').catch(() => '');
    if (text) {
      if (process.env.PROFILE_OUT) {
        await mkdir(process.env.PROFILE_OUT, { recursive: true });
        await copyFile(out, path.join(process.env.PROFILE_OUT, `${name}.cpuprofile`));
      }
      await rm(dir, { recursive: true, force: true });
      const micros = stagesOf(JSON.parse(text) as CpuProfile);
      for (const [k, v] of micros) micros.set(k, v / CALLS);
      return micros;
    }
    await sleep(100);
  }
  throw new Error(`${file}: no profile written`);
}

async function main(): Promise<void> {
  const upstream = (await launch('upstream.ts')).url;
  const servers: Array<[string, string, string, Record<string, string>, string]> = [
    ['ours (memory store)', 'ours-memory', 'ours.ts', {}, PING],
    ['ours (file store)', 'ours-file', 'ours.ts', { BENCH_STORE: 'file' }, PING],
    ['bare Koa+got proxy', 'bare-proxy', 'bare-proxy.ts', {}, PING],
    // Only when asked for: our Notion tools reading a page, the call the bench compares with the official Notion MCP server.
    ['ours (Notion get_page)', 'ours-notion', 'ours.ts', { BENCH_FAMILY: 'workspace' }, GET_PAGE],
  ];
  const only = (process.env.PROFILE_ONLY ?? 'ours-memory,ours-file,bare-proxy').split(',');
  const columns: Array<[string, Map<string, number>]> = [];
  for (const [title, name, file, env, body] of servers) {
    if (only.includes(name)) columns.push([title, await profileOf(name, file, [upstream], env, body)]);
  }
  const stages = [...STAGES.map(([s]) => s), 'other (V8, tsx, timers)'];
  const cell = (m: Map<string, number>, s: string) => (m.get(s) ? m.get(s)!.toFixed(0) : '-');
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`\nCPU µs per tools/call (${CALLS} calls at c=${CONNECTIONS}, V8 sampling profiler, idle excluded)\n`);
  console.log(`| stage | ${columns.map(([n]) => n).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---:').join('|')}|`);
  for (const s of stages) if (columns.some(([, m]) => m.get(s))) console.log(`| ${s} | ${columns.map(([, m]) => cell(m, s)).join(' | ')} |`);
  console.log(`| **total** | ${columns.map(([, m]) => `**${total(m).toFixed(0)}**`).join(' | ')} |`);
}

runBench(main);
