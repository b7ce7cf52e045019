// `npm run bench:commands`: which MongoDB commands one tools/call sends, by kind, per call. Starts the fake
// upstream and ours on MongoDB (MONGODB_URL, else the FerretDB peer), warms it up, makes COMMANDS_CALLS calls
// (default 200) one after the other, and prints each kind of command (name, collection, the fields it filters
// and sets) with how many per call were sent on the call's path (while answering) and in the background.
// COMMANDS_PAUSE_EVERY=<n> pauses 7 s after every n calls, longer than the lookup caches keep an entry
// (KEY_CACHE_MS), as the bench's turns do: what a call pays after a quiet moment. COMMANDS_METHOD=tools/list.
import { setTimeout as sleep } from 'node:timers/promises';
import { launch, mongoForBench, runBench } from './processes.ts';

const CALLS = Number(process.env.COMMANDS_CALLS || 200);
const PAUSE_EVERY = Number(process.env.COMMANDS_PAUSE_EVERY || 0);
const METHOD = process.env.COMMANDS_METHOD || 'tools/call';

type Kinds = Record<string, { onPath: number; background: number }>;

async function main(): Promise<void> {
  const mongodbUrl = mongoForBench();
  if (!mongodbUrl) throw new Error('no MongoDB-wire server: set MONGODB_URL (or install Go for the FerretDB peer)');
  const upstream = (await launch('upstream.ts')).url;
  const ours = await launch(
    'ours.ts',
    [upstream],
    { BENCH_STORE: 'mongodb', BENCH_MONGODB_URL: mongodbUrl, BENCH_MONGODB_DB: `commands_${process.pid}` },
    true,
  );
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    authorization: `Bearer ${ours.key}`,
  };
  const expected = METHOD === 'tools/list' ? 'demo_ping' : '"ok":true';
  const send = async (id: number) => {
    const params = METHOD === 'tools/call' ? { name: 'demo_ping', arguments: {} } : {};
    const answer = await (await fetch(ours.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: METHOD, params }) })).text();
    if (!answer.includes(expected) || answer.includes('"isError":true')) throw new Error(`unexpected answer: ${answer}`);
  };
  const kinds = async () => (await (await fetch(`${ours.commands}kinds`)).json()) as Kinds;
  for (let i = 0; i < 50; i++) await send(i);
  const before = await kinds();
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    if (PAUSE_EVERY && i % PAUSE_EVERY === 0) await sleep(7000);
    await send(i);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = await kinds();
  const total = { onPath: 0, background: 0 };
  console.log(`${METHOD}: ${CALLS} at concurrency 1 in ${seconds.toFixed(1)} s; MongoDB commands per call\n\non path  backgr.  command`);
  for (const [kind, n] of Object.entries(after)) {
    const was = before[kind] ?? { onPath: 0, background: 0 };
    const onPath = (n.onPath - was.onPath) / CALLS;
    const background = (n.background - was.background) / CALLS;
    total.onPath += onPath;
    total.background += background;
    if (onPath || background) console.log(`${onPath.toFixed(3).padStart(7)}  ${background.toFixed(3).padStart(7)}  ${kind}`);
  }
  console.log(`${total.onPath.toFixed(3).padStart(7)}  ${total.background.toFixed(3).padStart(7)}  all`);
}

runBench(main);
