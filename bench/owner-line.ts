// `npm run bench:owner`: the single-owner ceiling on MongoDB (MONGODB_URL, else the FerretDB peer). OWNER_PROCESSES
// processes (default 3), each with a Ledger of its own on one database as instances have, share 32 callers of one
// owner for OWNER_SECONDS (default 10), flat out: each call is charged from the process's credit blocks and its
// record written (Ledger.charge, Ledger.finish), what a tools/call's billing does; 20% are refunded. The floor,
// in the same run: the same processes and callers writing the same records with no charge (one group-committed
// insert per call, which the service cannot do without). Two turns of each, each on a database of its own; prints
// calls/s of both, their ratio, and the writes of the owner's credit document per call.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Credits } from '../runtime/billing/credits.ts';
import { GroupCommit } from '../runtime/billing/group-commit.ts';
import { type CallCharge, type CallDoc, Ledger, recordOf } from '../runtime/billing/ledger.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import { ChangeFeed } from '../runtime/store/changes.ts';
import { openMongoStore } from '../runtime/store/mongodb.ts';
import type { Store } from '../runtime/store/port.ts';
import { LEDGER_OPTIONS } from '../test/support/ledger.ts';
import { children, launch, mongoForBench, runBench, shareOf } from './processes.ts';

const PROCESSES = Number(process.env.OWNER_PROCESSES || 3);
const SECONDS = Number(process.env.OWNER_SECONDS || 10);
const CALLERS = 32;
const OWNER = 'own_ceiling';
const GRANT = 1e12;

type Mode = 'ledger' | 'floor';
interface Outcome {
  calls: number;
  lineWrites: number;
}

/** One process: opens the store, says it is ready, runs its callers from SIGUSR2 for SECONDS, writes what it did to `out`. */
async function worker(mode: Mode, url: string, instance: string, callers: number, out: string): Promise<void> {
  const store = await openMongoStore(url);
  const credits = new Credits(store);
  let lineWrites = 0;
  const exchange = credits.exchange.bind(credits);
  credits.exchange = (...args) => (lineWrites++, exchange(...args));
  // The feed, read every second as the service reads it, is what lets a busy owner's blocks stay while idle.
  const feed = new ChangeFeed(store);
  setInterval(() => void feed.poll().catch(() => undefined), feed.pollMs).unref();
  const ledger = new Ledger(store, credits, { ...LEDGER_OPTIONS, instance, feed });
  const floor = new GroupCommit<CallDoc, void>((docs) => ledger.calls.insertMany(docs));
  let n = 0;
  const call = (): CallCharge => ({ id: `${instance}_${++n}`, cost: 1, server_id: 'srv', key_id: 'key', tool: 'demo_ping' });
  const one = async (): Promise<void> => {
    if (mode === 'floor') {
      // The same record, on a line of this process's own that nothing charges (its charge keys unique).
      return floor.add(recordOf({ ...call(), from: n, block: instance }, `${OWNER}_${instance}`, 'ok', 'ok', 1, 1));
    }
    const refund = n % 5 === 0;
    const charge = await ledger.charge(OWNER, 1);
    if (!charge) throw new Error('refused: the grant should cover every call');
    const c = { ...call(), ...charge };
    await ledger.finish(recordOf(c, OWNER, refund ? 'refunded' : 'ok', refund ? 'upstream_unavailable' : 'ok', refund ? 0 : 1, 1), refund);
  };
  const run = async (ms: number) => {
    const until = performance.now() + ms;
    let calls = 0;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (performance.now() < until) {
          await one();
          calls++;
        }
      }),
    );
    return calls;
  };
  await run(1000); // warm-up: blocks sized by the rate, JIT
  const go = new Promise((resolve) => process.once('SIGUSR2', resolve));
  console.log(JSON.stringify({ ready: instance }));
  await go;
  const writesBefore = lineWrites;
  const calls = await run(SECONDS * 1000);
  await writeFile(out, JSON.stringify({ calls, lineWrites: lineWrites - writesBefore } satisfies Outcome));
  await ledger.flush(true);
  await store.close();
}

/** PROCESSES workers of `mode` on a fresh database, started together: calls/s of all, line writes per call. */
async function measure(mode: Mode, url: string, turn: number): Promise<{ rps: number; linePerCall: number }> {
  const database = new URL(url);
  database.pathname = `/owner_${process.pid}_${turn}`;
  const dbUrl = database.href;
  const store: Store = await openMongoStore(dbUrl);
  await store.ensureIndexes(STORE_INDEXES);
  await new Credits(store).grant(OWNER, GRANT);
  await store.close();
  const outs = Array.from({ length: PROCESSES }, (_, i) => path.join(tmpdir(), `owner-line-${process.pid}-${turn}-${i}.json`));
  const first = children.length;
  await Promise.all(outs.map((out, i) => launch('owner-line.ts', ['--worker', mode, dbUrl, `p${i}`, String(shareOf(CALLERS, PROCESSES, i)), out])));
  const workers = children.slice(first);
  const exited = workers.map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of workers) child.kill('SIGUSR2');
  await Promise.all(exited);
  const outcomes = await Promise.all(outs.map(async (out) => JSON.parse(await readFile(out, 'utf8')) as Outcome));
  await Promise.all(outs.map((out) => rm(out, { force: true })));
  const calls = outcomes.reduce((sum, o) => sum + o.calls, 0);
  return { rps: calls / SECONDS, linePerCall: outcomes.reduce((sum, o) => sum + o.lineWrites, 0) / calls };
}

async function main(): Promise<void> {
  const url = mongoForBench();
  if (!url) throw new Error('no MongoDB-wire server: set MONGODB_URL (or install Go for the FerretDB peer)');
  // Two turns each, in the order floor, ledger, ledger, floor: a slower moment of the machine falls on both alike.
  const turns: Record<Mode, Array<{ rps: number; linePerCall: number }>> = { floor: [], ledger: [] };
  for (const [turn, mode] of (['floor', 'ledger', 'ledger', 'floor'] as const).entries()) turns[mode].push(await measure(mode, url, turn));
  const rps = (mode: Mode) => turns[mode].reduce((sum, t) => sum + t.rps, 0) / turns[mode].length;
  const linePerCall = turns.ledger.reduce((sum, t) => sum + t.linePerCall, 0) / turns.ledger.length;
  console.log(`\none owner, ${CALLERS} callers through ${PROCESSES} processes on MongoDB, 2 turns of ${SECONDS} s each:`);
  console.log(`  records only (the floor)     ${Math.round(rps('floor'))} calls/s`);
  console.log(`  charged from credit blocks   ${Math.round(rps('ledger'))} calls/s (owner line writes per call ${linePerCall.toFixed(4)})`);
  console.log(`single-owner ceiling ledger/records-only ${(rps('ledger') / rps('floor')).toFixed(2)}`);
}

const [flag, mode, url, instance, callers, out] = process.argv.slice(2);
if (flag === '--worker') await worker(mode as Mode, url!, instance!, Number(callers), out!);
else runBench(main);
