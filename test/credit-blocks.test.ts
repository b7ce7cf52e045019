// Credit blocks (runtime/billing/credit-blocks.ts) and budget blocks (runtime/access/budgets.ts) on every store
// (embedded in memory and on disk; MongoDB when MONGODB_URL is set), with several processes: three Ledgers and
// Budgets on one store, each with its own blocks, as three instances have. One owner's calls through three
// processes with refunds (the credit document stays small, the balance exact, no range lost), an owner near zero
// and another process's idle block, a process killed while holding blocks, and budgets under blocks.
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { Budgets } from '../runtime/access/budgets.ts';
import { IDLE_MS } from '../runtime/billing/credit-blocks.ts';
import { Credits } from '../runtime/billing/credits.ts';
import { type CallCharge, Ledger, type LedgerOptions, recordOf } from '../runtime/billing/ledger.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import { CHANGES_INDEXES, ChangeFeed } from '../runtime/store/changes.ts';
import type { Collection, Doc, Store } from '../runtime/store/port.ts';
import { LEDGER_OPTIONS } from './support/ledger.ts';
import { storeTargets } from './support/stores.ts';

const OWNER = 'own_blocks';
const PROCESSES = ['a', 'b', 'c'];

let calls = 0;
const call = (cost: number): CallCharge => ({ id: `call_${++calls}`, cost, server_id: 'srv', key_id: 'key_1', tool: 'demo_ping' });

/** A call run to its end through one process's ledger: charged from its blocks, recorded, refunded when asked. Null: refused. */
async function paidCall(ledger: Ledger, refund: boolean, cost = 1): Promise<CallCharge | null> {
  const charge = await ledger.charge(OWNER, cost);
  if (!charge) return null;
  const c = { ...call(cost), ...charge };
  await ledger.finish(recordOf(c, OWNER, refund ? 'refunded' : 'ok', refund ? 'upstream_unavailable' : 'ok', refund ? 0 : cost, 1), refund);
  return c;
}

/** Every charged record of the owner, in the line's order: they must tile it from 0 to its end. */
async function tiles(ledger: Ledger): Promise<{ end: number; gaps: number }> {
  const records = (await ledger.calls.find({ owner_id: OWNER })).filter((c) => c.from !== undefined).sort((x, y) => x.from! - y.from!);
  let end = 0;
  let gaps = 0;
  for (const r of records) {
    if (r.from !== end) gaps++;
    end = r.from! + r.charged;
  }
  return { end, gaps };
}

for (const target of storeTargets('credit_blocks')) {
  const ferret = target.name.startsWith('MongoDB');
  describe.runIf(target.enabled)(`credit blocks: ${target.name}`, () => {
    async function processes(grant: number, options: Partial<LedgerOptions> = {}) {
      const store = await target.open();
      await store.ensureIndexes(STORE_INDEXES);
      await new Credits(store).grant(OWNER, grant);
      const ledgers = PROCESSES.map((instance) => new Ledger(store, new Credits(store), { ...LEDGER_OPTIONS, ...options, instance }));
      return { store, ledgers, line: () => ledgers[0].credits.docs.findOne({ _id: OWNER }) };
    }

    // 10,000 calls on the embedded store; on FerretDB (which reads every record of a collection for each query on
    // the 2-core CI machine) 3,000: a few hundred blocks either way, which is what the document's size depends on.
    const CALLS = ferret ? 3000 : 10_000;
    it(`one owner, ${CALLS.toLocaleString('en-US')} calls through 3 processes, 20% refunded, one call running throughout: the credit document stays small, the balance exact, no range lost`, async () => {
      const t0 = performance.now();
      const GRANT = 1_000_000;
      const { store, ledgers, line } = await processes(GRANT);
      const size = async () => JSON.stringify(await line()).length;
      const before = await size();
      // What the line's writes cost: each process's exchanges (a take, a return, or both in one update).
      let lineWrites = 0;
      for (const ledger of ledgers) {
        const exchange = ledger.credits.exchange.bind(ledger.credits);
        ledger.credits.exchange = (...args) => (lineWrites++, exchange(...args));
      }
      // A call that runs the whole time (it held `settled` back, and the refunds of every other call piled up behind it).
      const long = { ...call(1), ...(await ledgers[0].charge(OWNER, 1))! };
      let started = 0;
      let kept = 0;
      let refunded = 0;
      const sizes: number[] = [];
      // 32 concurrent callers spread over the 3 processes.
      await Promise.all(
        Array.from({ length: 32 }, async (_, w) => {
          const ledger = ledgers[w % 3];
          while (started < CALLS) {
            const n = started++;
            const refund = n % 5 === 0;
            expect(await paidCall(ledger, refund)).not.toBeNull();
            if (refund) refunded++;
            else kept++;
            if (n % 100 === 0) sizes.push(await size());
          }
        }),
      );
      await ledgers[0].finish(recordOf(long, OWNER, 'ok', 'ok', 1, 1), false);
      kept++;
      const largest = Math.max(...sizes);
      await Promise.all(ledgers.map((l) => l.flush(true)));
      await ledgers[0].settlement.settleAll('everything');
      const after = await line();
      // Flat: the document holds the live blocks (a few per process), never anything per call or per refund.
      expect(largest).toBeLessThan(before + 1500);
      expect(after!.blocks ?? {}).toEqual({});
      expect(after!.refunds ?? []).toEqual([]);
      // Exact: what the calls kept, no more; every range recorded, the line tiled from 0 to its end.
      expect(after).toMatchObject({ balance: GRANT - kept, settled: after!.debited });
      expect(await tiles(ledgers[0])).toEqual({ end: after!.debited, gaps: 0 });
      const report = (await ledgers[1].check(OWNER))[0];
      expect(report).toMatchObject({ kept, open: 0, difference: 0, unaccounted: 0, ok: true });
      const usage = await ledgers[2].usage(OWNER, {});
      expect(usage.reduce((n, r) => n + r.calls, 0)).toBe(CALLS + 1);
      expect(usage.reduce((n, r) => n + r.refunds, 0)).toBe(refunded);
      console.log(
        `credit blocks (${target.name}): ${CALLS + 1} calls through 3 processes at c=32, ${refunded} refunded: credit document ${before} bytes before, ` +
          `at most ${largest} during, ${JSON.stringify(after).length} after; ${lineWrites} writes of the owner's line ` +
          `(${(lineWrites / (CALLS + 1)).toFixed(4)} per call); ${Math.round(performance.now() - t0)} ms`,
      );
      await store.close();
    }, 180_000);

    it("an owner near zero is not refused while another process's idle block holds its credits", async () => {
      const GRANT = 400;
      const { store, ledgers, line } = await processes(GRANT);
      const [a, b] = ledgers;
      // Process a's owner is busy for a moment: its blocks grow with its rate, then it goes quiet holding one.
      let keptByA = 0;
      for (let round = 0; round < 6; round++) {
        const done = await Promise.all(Array.from({ length: 20 }, () => paidCall(a, false)));
        keptByA += done.filter(Boolean).length;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const held = GRANT - keptByA - (await line())!.balance;
      expect(held).toBeGreaterThan(0);
      // Process b spends everything: every credit the owner has, including a's idle rest, one call at a time.
      let keptByB = 0;
      while (await paidCall(b, false)) keptByB++;
      expect(keptByA + keptByB).toBe(GRANT);
      await Promise.all(ledgers.map((l) => l.flush(true)));
      expect(await line()).toMatchObject({ balance: 0, blocks: {} });
      expect((await a.check(OWNER))[0]).toMatchObject({ kept: GRANT, open: 0, difference: 0, ok: true });
      await store.close();
    }, 60_000);

    it('an owner with plenty keeps a block through idle moments; when the balance runs out elsewhere, the announcement that its credits are wanted brings the block back', async () => {
      const store = await target.open();
      await store.ensureIndexes([...STORE_INDEXES, ...CHANGES_INDEXES]);
      const GRANT = 1_000_000;
      await new Credits(store).grant(OWNER, GRANT);
      // Two processes of the service: each its own change feed, read every pollMs as the service reads it.
      const feeds = PROCESSES.slice(0, 2).map(() => new ChangeFeed(store));
      // Their first read finds no earlier one to go on from: a gap, after which any owner's credits may be wanted.
      await Promise.all(feeds.map((feed) => feed.poll()));
      const polls = feeds.map((feed) => setInterval(() => feed.poll().catch(() => undefined), feed.pollMs));
      const [a, b] = feeds.map((feed, i) => new Ledger(store, new Credits(store), { ...LEDGER_OPTIONS, instance: PROCESSES[i]!, feed }));
      const line = () => a.credits.docs.findOne({ _id: OWNER });
      try {
        // a's owner is busy for a moment (its rate makes the next block roomy), then a goes quiet.
        let keptByA = 0;
        for (let round = 0; round < 6; round++) {
          keptByA += (await Promise.all(Array.from({ length: 20 }, () => paidCall(a, false)))).filter(Boolean).length;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const taken = Object.keys((await line())!.blocks ?? {});
        expect(taken.length).toBeGreaterThan(0);
        // Longer than an idle block of an owner near zero is kept (IDLE_MS and a tick): a roomy one stays.
        await new Promise((resolve) => setTimeout(resolve, 2 * IDLE_MS));
        expect(Object.keys((await line())!.blocks ?? {})).toEqual(taken);
        const held = GRANT - keptByA - (await line())!.balance;
        expect(held).toBeGreaterThan(0);
        // The balance outside a's block is spent elsewhere (an operator's debit takes all the line has).
        await new Credits(store).grant(OWNER, -GRANT);
        // b cannot fit a call: it announces that the owner's credits are wanted, a gives its idle block back, b is served.
        expect(await paidCall(b, false)).not.toBeNull();
        let keptByB = 1;
        while (await paidCall(b, false)) keptByB++;
        expect(keptByB).toBe(held);
        await Promise.all([a, b].map((l) => l.flush(true)));
        expect(await line()).toMatchObject({ balance: 0, blocks: {} });
        expect((await a.check(OWNER))[0]).toMatchObject({ kept: keptByA + keptByB, open: 0, difference: 0, ok: true });
      } finally {
        polls.forEach(clearInterval);
        await store.close();
      }
    }, 60_000);

    it("a steady owner's calls make no take of their own: each roomy block's successor is taken ahead, off the calls' paths, from the line as the last take left it", async () => {
      const store = await target.open();
      await store.ensureIndexes([...STORE_INDEXES, ...CHANGES_INDEXES]);
      await new Credits(store).grant(OWNER, 100_000_000);
      // Blocks of a 4-s lease, so that several succeed one another within the test (at its end, or when spent). A
      // successor is asked for with half the lease left: a busy machine's pause of the event loop shorter than that
      // (2 s here; a 2-s lease failed once in CI) leaves the calls' paths free of takes.
      const ledger = new Ledger(store, new Credits(store), { ...LEDGER_OPTIONS, instance: 'a', feed: new ChangeFeed(store), blockLeaseMs: 4000 });
      // Takes sent in a call's async context (the call made it, and waited for it) and elsewhere, and reads of the
      // line (none once the process knows it: it is the only one writing it).
      const inCall = new AsyncLocalStorage<true>();
      const takes = { inCall: 0, elsewhere: 0, lineReads: 0 };
      const exchange = ledger.credits.exchange.bind(ledger.credits);
      ledger.credits.exchange = (ownerId, line, take, returns) => {
        if (take) takes[inCall.getStore() ? 'inCall' : 'elsewhere']++;
        return exchange(ownerId, line, take, returns);
      };
      const readLine = ledger.credits.line.bind(ledger.credits);
      ledger.credits.line = (ownerId) => (takes.lineReads++, readLine(ownerId));
      const callFor = (ms: number, pauseEvery: number) =>
        inCall.run(true, async () => {
          let kept = 0;
          for (const until = performance.now() + ms; performance.now() < until;) {
            if ((await paidCall(ledger, false)) === null) throw new Error('a call was refused');
            if (++kept % pauseEvery === 0) await new Promise((resolve) => setTimeout(resolve, 20));
          }
          return kept;
        });
      // The owner's first calls take blocks themselves (no rate to size a roomy one by yet), until a roomy block's
      // successor was taken ahead.
      let kept = 0;
      for (const until = performance.now() + 30_000; takes.elsewhere === 0 && performance.now() < until;) kept += await callFor(200, 10);
      expect(takes.inCall).toBeGreaterThan(0);
      expect(takes.elsewhere).toBeGreaterThan(0);
      Object.assign(takes, { inCall: 0, elsewhere: 0, lineReads: 0 });
      // Steady calls for two leases, then a moment at several times the rate: blocks end by their lease and by
      // being spent.
      kept += await callFor(8000, 10);
      kept += await callFor(2000, Infinity);
      expect(takes).toMatchObject({ inCall: 0, lineReads: 0 });
      expect(takes.elsewhere).toBeGreaterThanOrEqual(3);
      await ledger.flush(true);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept, open: 0, difference: 0, ok: true });
      // Every block's rest was recorded: the records tile the line, successors and all.
      expect(await tiles(ledger)).toEqual({ end: (await ledger.credits.line(OWNER))!.debited, gaps: 0 });
      await store.close();
    }, 60_000);

    it('loses nothing when a process is killed holding blocks: settlement returns them after their lease, usage is the acknowledged calls', async () => {
      const GRANT = 100_000;
      const options = { maxCallMs: 0, blockLeaseMs: 300, settledMs: 0 };
      const store = await target.open();
      await store.ensureIndexes(STORE_INDEXES);
      await new Credits(store).grant(OWNER, GRANT);
      // The victim's store stops answering at the kill, as a process killed with -9 sends nothing more.
      let killed = false;
      const victimStore = deadAfterKill(store, () => killed);
      const victim = new Ledger(victimStore, new Credits(victimStore), { ...LEDGER_OPTIONS, ...options, instance: 'victim' });
      const survivor = new Ledger(store, new Credits(store), { ...LEDGER_OPTIONS, ...options, instance: 'survivor' });
      let acknowledged = 0;
      let keptAcknowledged = 0;
      const workers = Array.from({ length: 12 }, async (_, w) => {
        for (let i = 0; !killed; i++) {
          const refund = (i + w) % 5 === 0;
          if (await paidCall(victim, refund, 2)) {
            if (killed) return; // answered after the kill: never seen by a client
            acknowledged++;
            if (!refund) keptAcknowledged += 2;
          }
        }
      });
      await expect.poll(() => acknowledged, { timeout: 30_000 }).toBeGreaterThan(300);
      killed = true;
      const held = (await survivor.credits.docs.findOne({ _id: OWNER }))!;
      expect(Object.keys(held.blocks ?? {}).length).toBeGreaterThan(0);
      void workers; // they hang with the dead store, as calls in a killed process do
      // The survivor's housekeeping returns the victim's blocks once their lease (300 ms) and the longest call are over.
      await expect
        .poll(async () => (await survivor.housekeep(), Object.keys((await survivor.credits.docs.findOne({ _id: OWNER }))!.blocks ?? {}).length), {
          timeout: 30_000,
        })
        .toBe(0);
      await survivor.settlement.settleAll('stale');
      const report = (await survivor.check(OWNER))[0];
      expect(report).toMatchObject({ open: 0, difference: 0, unaccounted: 0, ok: true });
      // Usage: the acknowledged calls, each once (calls cut off by the kill are interrupted, refunded).
      const records = (await survivor.calls.find({ owner_id: OWNER })).filter((c) => c.count !== 0);
      const ok = records.filter((c) => c.outcome === 'ok');
      expect(ok.length).toBeGreaterThanOrEqual(keptAcknowledged / 2); // a call may be recorded with its answer lost in the kill
      expect(report.kept).toBe(ok.length * 2);
      expect(report.balance).toBe(GRANT - report.kept);
      expect(records.filter((c) => c.code === 'interrupted').every((c) => c.credits === 0)).toBe(true);
      expect(acknowledged).toBeLessThanOrEqual(records.length);
      await store.close();
    }, 120_000);

    it('budgets of keys and connected apps are exact under blocks: never over the limit, and what is spent is what calls kept', async () => {
      const store = await target.open();
      await store.ensureIndexes(STORE_INDEXES);
      const budgets = PROCESSES.map(() => new Budgets(store));
      const LIMIT = 300;
      const credentials = [
        { keyId: 'key_budget', holder: 'key' as const },
        { keyId: 'grant_budget', holder: 'app' as const },
      ];
      const limit = { credits: LIMIT, per: 'day' as const };
      const at = store.clock.date();
      const kept = new Map(credentials.map((c) => [c.keyId, 0]));
      const over: number[] = [];
      await Promise.all(
        credentials.flatMap(({ keyId, holder }) =>
          Array.from({ length: 12 }, async (_, w) => {
            const mine = budgets[w % 3];
            for (let i = 0; i < 60; i++) {
              const cost = 1 + ((i + w) % 3);
              if (await mine.reserve(keyId, limit, cost, at, holder, 'demo_ping')) continue;
              if ((i + w) % 5 === 0) await mine.release(keyId, limit, cost, at);
              else kept.set(keyId, kept.get(keyId)! + cost);
              if (kept.get(keyId)! > LIMIT) over.push(kept.get(keyId)!);
            }
          }),
        ),
      );
      expect(over).toEqual([]);
      // What the processes hold for calls to come goes back; then what is spent is exactly what the calls kept.
      await Promise.all(budgets.map((b) => b.giveBackIdle(true)));
      const spent = await budgets[0].spent(credentials.map((c) => ({ keyId: c.keyId, limit })));
      for (const { keyId, holder } of credentials) {
        expect(spent.get(keyId), keyId).toBe(kept.get(keyId));
        // The rest of the budget, to the credit: one at a time until refused, from any process.
        let more = 0;
        while (!(await budgets[more % 3].reserve(keyId, limit, 1, at, holder, 'demo_ping'))) more++;
        expect(kept.get(keyId)! + more).toBe(LIMIT);
      }
      await Promise.all(budgets.map((b) => b.giveBackIdle(true)));
      expect([...(await budgets[0].spent(credentials.map((c) => ({ keyId: c.keyId, limit })))).values()]).toEqual([LIMIT, LIMIT]);
      await store.close();
    }, 60_000);
  });
}

/** The store as a killed process sees it: from the kill on, nothing it asks is answered. */
function deadAfterKill(store: Store, killed: () => boolean): Store {
  const never = new Promise<never>(() => {});
  return Object.assign(Object.create(store) as Store, {
    collection: <T extends Doc>(name: string) => {
      const collection = store.collection<T>(name);
      return new Proxy(collection, {
        get: (target, prop, receiver) => {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => (killed() ? never : (value as (...a: unknown[]) => unknown).apply(target, args));
        },
      }) as Collection<T>;
    },
  });
}
