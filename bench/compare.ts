// `npm run bench:compare -- <base> [<head>]`: what a change did to a tools/call, on a machine too busy for two
// runs of the bench to agree. Both revisions (git revisions, head defaulting to the working tree; or `tsx`, the
// working tree through tsx, for what the build gains: `npm run bench:compare -- tsx`) are built as
// `npm start` runs the service (runtime/build.ts) and run side by side on one upstream; calls go to one and
// then the other in short alternating chunks, so that a busy moment of the machine hits both alike. Prints,
// for each, the serving process's CPU time per call (/proc) and its rate, and head/base.
//
// COMPARE_STORE=memory (default) | file, COMPARE_ROUNDS (default 10) chunks of COMPARE_CALLS (default 2,000)
// each at COMPARE_CONNECTIONS (default 32), after BENCH_WARM_SECONDS (processes.ts) of calls to each side. A
// revision's files are extracted once into node_modules/.cache/compare/.
// COMPARE_SERVER=bare-proxy compares the bare proxy instead (a change of the bench's floor); COMPARE_SERVERS=<base's>,<head's>
// runs a server of its own on each side: `COMPARE_SERVERS=bare-proxy,ours npm run bench:compare -- HEAD HEAD` is ours
// against the bare proxy at one moment of the machine (the CPU line of the bench, flat out). COMPARE_METHOD=tools/list
// sends tools/list instead of tools/call; COMPARE_FAMILY=workspace serves the 13 Notion tools (BENCH_FAMILY in
// ours.ts), whose tools/call reads a page. COMPARE_EACH=1 prints every chunk's CPU per call too (what a median hides:
// the chunks that cost more than the others).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { buildService } from '../runtime/build.ts';
import { BENCH_PAGE, WARM_SECONDS, builtProgram, cpuMicros, launch, runBench, start } from './processes.ts';

const ROUNDS = Number(process.env.COMPARE_ROUNDS || 10);
const CALLS = Number(process.env.COMPARE_CALLS || 2000);
const CONNECTIONS = Number(process.env.COMPARE_CONNECTIONS || 32);
const SERVER = process.env.COMPARE_SERVER || 'ours';
/** The server file of the base's side and of the head's. */
const SERVERS = (process.env.COMPARE_SERVERS || `${SERVER},${SERVER}`).split(',').map((name) => `${name}.ts`);
const CACHE = path.resolve('node_modules/.cache/compare');
const METHOD = process.env.COMPARE_METHOD || 'tools/call';
const FAMILY = process.env.COMPARE_FAMILY;
const BODY = JSON.stringify(
  METHOD === 'tools/list'
    ? { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    : {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: FAMILY === 'workspace' ? { name: 'get_page', arguments: { page_id: BENCH_PAGE.id } } : { name: 'demo_ping', arguments: {} },
      },
);

/** A checkout of `revision` (or the working tree) with the server and the safety net built in it; its build folder. */
async function built(revision: string | undefined): Promise<{ label: string; dir: string }> {
  let root = process.cwd();
  let label = 'working tree';
  if (revision) {
    const sha = execFileSync('git', ['rev-parse', '--verify', `${revision}^{commit}`], { encoding: 'utf8' }).trim();
    root = path.join(CACHE, sha);
    label = `${revision} (${sha.slice(0, 7)})`;
    // Its files only (git archive), so that the repository's own list of worktrees is left alone.
    if (!existsSync(root)) {
      mkdirSync(root, { recursive: true });
      execFileSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'archive', sha, root]);
    }
  }
  const dir = path.join(CACHE, 'builds', revision ? path.basename(root) : 'working-tree');
  await buildService([...new Set(SERVERS.map((file) => `bench/${file}`)), 'test/support/loopback-only.ts'], dir, root);
  return { label, dir };
}

async function main(): Promise<void> {
  const [base, head] = process.argv.slice(2);
  if (!base) throw new Error('usage: npm run bench:compare -- <base revision> [<head revision>, default the working tree]');
  const upstream = (await launch('upstream.ts')).url;
  const env: Record<string, string> = { ...(process.env.COMPARE_STORE === 'file' && { BENCH_STORE: 'file' }), ...(FAMILY && { BENCH_FAMILY: FAMILY }) };
  const sides = [];
  for (const [i, revision] of [base, head].entries()) {
    const file = SERVERS[i]!;
    // `tsx`: the working tree through tsx, as the tests run it (what the build gains).
    if (revision === 'tsx') {
      sides.push({ label: `${file}, working tree through tsx`, server: await launch(file, [upstream], env), cpu: 0, calls: 0, rates: [] as number[] });
      continue;
    }
    const { label, dir } = await built(revision);
    sides.push({
      label: `${file}, ${label}`,
      server: await start(label, [...builtProgram(dir, file), upstream], env),
      cpu: 0,
      calls: 0,
      rates: [] as number[],
    });
  }
  /** Calls to `server`: so many (`amount`), or for so long (`duration`, seconds). */
  const send = (server: Record<string, string>, length: { amount: number } | { duration: number }) =>
    autocannon({
      url: server.url,
      connections: CONNECTIONS,
      ...length,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(server.key && { authorization: `Bearer ${server.key}` }),
      },
      body: BODY,
    });
  for (const side of sides) await send(side.server, { duration: WARM_SECONDS });
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 ? [...sides].reverse() : sides) {
      const before = await cpuMicros(side.server.pid);
      const started = performance.now();
      const result = await send(side.server, { amount: CALLS });
      const seconds = (performance.now() - started) / 1000;
      if (result.non2xx || result.errors || result.timeouts) throw new Error(`${side.label}: ${result.non2xx + result.errors + result.timeouts} failed calls`);
      const cpu = (await cpuMicros(side.server.pid)) - before;
      if (process.env.COMPARE_EACH) console.log(`round ${round} ${side.label}: ${(cpu / result['2xx']).toFixed(0)} CPU µs/call`);
      side.cpu += cpu;
      side.calls += result['2xx'];
      side.rates.push(result['2xx'] / seconds);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const [a, b] = sides.map((s) => ({ ...s, perCall: s.cpu / s.calls, rate: median(s.rates) }));
  console.log(
    `\n${[...new Set(SERVERS)].join(' against ')}${FAMILY ? ` (${FAMILY})` : ''} ${METHOD}, ${ROUNDS} x ${CALLS} calls each at c=${CONNECTIONS}, ${process.env.COMPARE_STORE || 'memory'} store`,
  );
  for (const s of [a, b])
    console.log(`${s.label.padEnd(40)} ${s.perCall.toFixed(0).padStart(6)} CPU µs/call ${s.rate.toFixed(0).padStart(6)} calls/s (median)`);
  console.log(`head/base: CPU per request ${(b.perCall / a.perCall).toFixed(3)}, calls/s ${(b.rate / a.rate).toFixed(3)}`);
}

runBench(main);
