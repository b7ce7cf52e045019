// `npm run bench`: this service vs the official SDK references vs the bare upstream, in one run, on
// loopback only, with a bare Koa+got proxy as the floor. Each server runs in its own process; autocannon drives tools/list and tools/call at
// concurrency 1 and 32. Prints req/s, p50 and p99 per row, then the ratios; the last line is
// `tools/call c=32 ours/reference <ratio>`. BENCH_SECONDS sets the length of each run (default 5).
import autocannon from 'autocannon';
import { launch, runBench } from './processes.ts';

const SECONDS = Number(process.env.BENCH_SECONDS || 5);
/** This service: key auth + rate limits + credit charge + tool spec + usage, i.e. the full pipeline. */
const OURS = 'ours (full pipeline)';
/** The same on the file-backed embedded store that `npm start` uses. */
const OURS_FILE = 'ours (file store)';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const BODIES = {
  'tools/list': JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  'tools/call': JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } }),
};

interface Row {
  target: string;
  method: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(target: string, url: string, method: keyof typeof BODIES | 'GET', connections: number, headers: Record<string, string> = {}): Promise<Row> {
  const opts =
    method === 'GET'
      ? { url, connections, duration: SECONDS }
      : { url, connections, duration: SECONDS, method: 'POST' as const, headers: { ...HEADERS, ...headers }, body: BODIES[method] };
  const result = await autocannon(opts);
  return {
    target,
    method: method === 'GET' ? 'GET /ping' : method,
    connections,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

async function main(): Promise<void> {
  const upstream = (await launch('upstream.ts')).url;
  const [ours, oursFile, v1, v2, bare] = await Promise.all([
    launch('ours.ts', [upstream]),
    launch('ours.ts', [upstream], { BENCH_STORE: 'file' }),
    launch('reference-v1.ts', [upstream]),
    launch('reference-v2.ts', [upstream]),
    launch('bare-proxy.ts', [upstream]),
  ]);
  const targets: Array<[string, string, Record<string, string>]> = [
    [OURS, ours.url, { authorization: `Bearer ${ours.key}` }],
    [OURS_FILE, oursFile.url, { authorization: `Bearer ${oursFile.key}` }],
    ['reference (SDK v1)', v1.url, {}],
    ['SDK v2 handler', v2.url, {}],
  ];
  // Warm up every target so JIT and connection pools are in their steady state.
  for (const [name, url, headers] of targets) await autocannon({ url, connections: 8, amount: 500, method: 'POST', headers: { ...HEADERS, ...headers }, body: BODIES['tools/call'] }).catch(() => name);

  const rows: Row[] = [];
  for (const connections of [1, 32]) {
    rows.push(await measure('direct upstream', `${upstream}/ping`, 'GET', connections));
    for (const method of ['tools/list', 'tools/call'] as const) {
      for (const [name, url, headers] of targets) rows.push(await measure(name, url, method, connections, headers));
    }
    rows.push(await measure('bare Koa+got proxy', bare.url, 'tools/call', connections));
  }

  const pad = (s: string | number, n: number) => String(s).padEnd(n);
  console.log(`\n${pad('target', 22)}${pad('method', 12)}${pad('c', 4)}${pad('req/s', 10)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}errors`);
  for (const r of rows) console.log(`${pad(r.target, 22)}${pad(r.method, 12)}${pad(r.connections, 4)}${pad(Math.round(r.rps), 10)}${pad(r.p50, 8)}${pad(r.p99, 8)}${r.errors}`);

  const rps = (target: string, method: string, c: number) => rows.find((r) => r.target === target && r.method === method && r.connections === c)!.rps;
  console.log('\nratios (req/s):');
  const lines: string[] = [];
  for (const c of [1, 32]) {
    lines.push(`tools/call c=${c} ours/direct-upstream ${(rps(OURS, 'tools/call', c) / rps('direct upstream', 'GET /ping', c)).toFixed(2)}`);
    lines.push(`tools/list c=${c} ours/reference ${(rps(OURS, 'tools/list', c) / rps('reference (SDK v1)', 'tools/list', c)).toFixed(2)}`);
    lines.push(`tools/call c=${c} ours/sdk-v2 ${(rps(OURS, 'tools/call', c) / rps('SDK v2 handler', 'tools/call', c)).toFixed(2)}`);
    lines.push(`tools/call c=${c} ours/bare-proxy ${(rps(OURS, 'tools/call', c) / rps('bare Koa+got proxy', 'tools/call', c)).toFixed(2)}`);
    lines.push(`tools/call c=${c} ours-file/bare-proxy ${(rps(OURS_FILE, 'tools/call', c) / rps('bare Koa+got proxy', 'tools/call', c)).toFixed(2)}`);
  }
  lines.push(`tools/call c=1 ours/reference ${(rps(OURS, 'tools/call', 1) / rps('reference (SDK v1)', 'tools/call', 1)).toFixed(2)}`);
  lines.push(`tools/call c=32 ours/reference ${(rps(OURS, 'tools/call', 32) / rps('reference (SDK v1)', 'tools/call', 32)).toFixed(2)}`);
  console.log(lines.join('\n'));
}

runBench(main);
