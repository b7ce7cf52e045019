// The ledger and the credits it settles, on every store (embedded in memory and on disk; MongoDB when
// MONGODB_URL is set): charges from credit blocks on the owners' credit lines and group-committed records,
// settlement of what a stop left open (also by two instances at once), continuous roll-up (also two rollers at
// once), retention, and the invariant check, exact under live traffic. (Credit blocks themselves, with several
// processes and a kill: credit-blocks.test.ts.)
import { describe, expect, it } from 'vitest';
import { Credits } from '../runtime/billing/credits.ts';
import { type CallCharge, type CallOutcome, Ledger, type LedgerOptions, recordOf } from '../runtime/billing/ledger.ts';
import { slotOf } from '../runtime/billing/partitions.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import type { Collection, Doc, Store } from '../runtime/store/port.ts';
import { LEDGER_OPTIONS, takeBlock } from './support/ledger.ts';
import { storeTargets } from './support/stores.ts';

const HOUR = 3_600_000;
const OWNER = 'own_1';

const OPTIONS = LEDGER_OPTIONS;
/** A roll-up of every slot (one partition), outside the housekeeping's lease: what two rollers that overlap would do. */
const roll = (ledger: Ledger) => ledger.rollUp.run(0, { keep: async () => true, renewals: 0 });

let calls = 0;
function call(cost = 2, tool = 'tracker_get_issue'): CallCharge {
  return { id: `call_${++calls}`, cost, server_id: 'srv', key_id: 'key_1', tool };
}

for (const target of storeTargets('ledger')) {
  describe.runIf(target.enabled)(`ledger: ${target.name}`, () => {
    async function setup(balance = 100, options: Partial<LedgerOptions> = {}, open: { slowReads?: boolean } = {}) {
      const store = await target.open(open);
      await store.ensureIndexes(STORE_INDEXES);
      const credits = new Credits(store);
      await credits.grant(OWNER, balance);
      const ledger = new Ledger(store, credits, { ...OPTIONS, ...options });
      return { store, credits, ledger };
    }

    /** The record of a charged call that ended `hoursAgo` (written as it was then: records are stamped when written). */
    async function pastCall(ledger: Ledger, hoursAgo: number, outcome: CallOutcome = 'ok', cost = 2) {
      const c = { ...call(cost), ...(await ledger.charge(OWNER, cost))! };
      const refund = outcome === 'refunded';
      await ledger.calls.insertOne({ ...recordOf(c, OWNER, outcome, 'ok', refund ? 0 : cost, 5), at: new Date(Date.now() - hoursAgo * HOUR) });
      ledger.blocks.release(OWNER, { from: c.from, block: c.block }, cost, refund);
    }

    /** A charged call, run to its end: charge, record, refund when asked. */
    async function paidCall(ledger: Ledger, outcome: CallOutcome = 'ok', cost = 2) {
      const c = call(cost);
      const charge = await ledger.charge(OWNER, cost);
      if (charge === null) return null;
      Object.assign(c, charge);
      const refund = outcome === 'refunded';
      await ledger.finish(recordOf(c, OWNER, outcome, outcome === 'ok' ? 'ok' : 'upstream_unavailable', refund ? 0 : cost, 5), refund);
      return c;
    }

    it('writes the records of concurrent calls together, each call awaiting its own', async () => {
      const { ledger, store } = await setup();
      const records = Array.from({ length: 50 }, () => recordOf(call(), OWNER, 'rejected', 'invalid_arguments', 0, 5));
      await Promise.all(records.map((r) => ledger.record(r)));
      expect((await ledger.latest(OWNER, 100)).length).toBe(50);
      await store.close();
    });

    it('gives each charge its own range of the credit line; a batch the balance does not cover takes what fits, in order', async () => {
      const { credits, ledger, store } = await setup(20);
      const ranges = (charges: Array<{ from: number } | null>) => charges.map((c) => c?.from ?? null);
      const all = await Promise.all(Array.from({ length: 4 }, () => ledger.charge(OWNER, 3)));
      expect(ranges(all)).toEqual([0, 3, 6, 9]);
      // 8 credits left: four more charges of 3 are too many together; the first two fit. (Near zero a block is
      // exactly what the calls waiting cost: nothing is held back.)
      const some = await Promise.all(Array.from({ length: 4 }, () => ledger.charge(OWNER, 3)));
      expect(ranges(some)).toEqual([12, 15, null, null]);
      // 2 left: a charge of 1 after one of 3 still goes through.
      expect(ranges(await Promise.all([ledger.charge(OWNER, 3), ledger.charge(OWNER, 1)]))).toEqual([null, 18]);
      expect(await credits.balance(OWNER)).toBe(1);
      // Nothing recorded yet: every credit taken is open.
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 0, open: 19, difference: 0, ok: true });
      await store.close();
    });

    it('returns a block once, whoever returns it (its process, or settlement after the lease) and however often', async () => {
      const { credits, ledger, store } = await setup(10, { maxCallMs: 0 });
      const block = (await takeBlock(store, OWNER, 4, 0))!;
      const back = [{ id: block.id, credits: 4 }];
      const returns = await Promise.all([
        credits.exchange(OWNER, { debited: 0, balance: 0 }, null, back),
        credits.exchange(OWNER, { debited: 0, balance: 0 }, null, back),
        ledger.settlement.settleAll('stale'),
      ]);
      expect(returns.slice(0, 2).filter((r) => r !== null).length + (returns[2] as number)).toBe(1);
      expect(await credits.balance(OWNER)).toBe(10);
      expect((await credits.docs.findOne({ _id: OWNER }))!.blocks ?? {}).toEqual({});
      await store.close();
    });

    it('settles what a stop left open: recorded outcomes kept, refunds of its block given back, unrecorded ranges refunded and recorded', async () => {
      const { credits, ledger, store } = await setup(100);
      // The block of a process that stopped: "done" finished normally; "pending" was recorded as refunded, its
      // block not returned; "lost" has no record.
      const block = (await takeBlock(store, OWNER, 8))!;
      const [done, pending, lost, later] = [0, 2, 4, 6].map((from) => ({ ...call(), from, block: block.id }));
      expect(await credits.balance(OWNER)).toBe(92);
      await ledger.record(recordOf(done, OWNER, 'ok', 'ok', 2, 10));
      await ledger.record(recordOf(pending, OWNER, 'refunded', 'upstream_unavailable', 0, 10));
      await ledger.record(recordOf(later, OWNER, 'ok', 'ok', 2, 10));
      expect((await ledger.check(OWNER))[0]).toMatchObject({ open: 4, kept: 4, difference: 0 });

      expect(await ledger.settleAfterStop()).toBe(1);
      expect(await credits.balance(OWNER)).toBe(96);
      const records = await ledger.latest(OWNER, 10);
      expect(records.find((c) => c.from === lost.from)).toMatchObject({ outcome: 'refunded', code: 'interrupted', credits: 0, charged: 2 });
      expect((await ledger.check(OWNER))[0]).toMatchObject({ granted: 100, balance: 96, kept: 4, open: 0, difference: 0, ok: true });
      expect(await credits.docs.findOne({ _id: OWNER })).toMatchObject({ settled: 8, debited: 8, unsettled: false });
      expect((await credits.docs.findOne({ _id: OWNER }))!.blocks ?? {}).toEqual({});
      // Settling again changes nothing.
      expect(await ledger.settleAfterStop()).toBe(0);
      expect(await credits.balance(OWNER)).toBe(96);
      expect(await ledger.latest(OWNER, 10)).toHaveLength(4);
      await store.close();
    });

    it('leaves ranges younger than any call can last to the instance running them', async () => {
      const { ledger, store } = await setup(10, { maxCallMs: 60_000 });
      await takeBlock(store, OWNER, 2, 0);
      expect(await ledger.settlement.settleAll('stale')).toBe(0);
      expect(await ledger.settlement.settleAll('stale')).toBe(0);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ open: 2, difference: 0 });
      await store.close();
    });

    it('settles a stale range once when two instances settle at the same time', async () => {
      const { store, credits } = await setup(50, { maxCallMs: 0 });
      const a = new Ledger(store, credits, { ...OPTIONS, maxCallMs: 0, instance: 'a' });
      const b = new Ledger(store, new Credits(store), { ...OPTIONS, maxCallMs: 0, instance: 'b' });
      // A stopped process's block of 15 credits whose lease is over, with five charges of 3 and no record.
      await takeBlock(store, OWNER, 15, 0);
      await paidCall(a);
      await a.flush(true);
      const refunds = await Promise.all([a.settlement.settleAll('stale'), b.settlement.settleAll('stale'), a.settlement.settleAll('stale')]);
      expect(refunds.reduce((s, n) => s + n, 0)).toBe(1); // one interrupted range: the five unrecorded charges
      expect(await credits.balance(OWNER)).toBe(48);
      expect((await a.check(OWNER))[0]).toMatchObject({ kept: 2, open: 0, difference: 0 });
      const interrupted = (await a.latest(OWNER, 10)).filter((c) => c.code === 'interrupted');
      expect(interrupted).toHaveLength(1);
      expect(interrupted[0]).toMatchObject({ charged: 15, credits: 0, from: 0 });
      await store.close();
    });

    it('rolls records into hourly aggregates with the same totals, never twice, keeping them for the call log until retention', async () => {
      const { ledger, store } = await setup(1000, { retentionMs: 24 * HOUR });
      for (const [hoursAgo, n] of [
        [50, 4],
        [48, 6],
        [1, 3],
      ]) {
        for (let i = 0; i < n; i++) await pastCall(ledger, hoursAgo, i % 3 === 0 ? 'refunded' : 'ok');
      }
      await ledger.record(recordOf(call(), OWNER, 'rejected', 'invalid_arguments', 0, 1));
      await ledger.flush(true); // the blocks given back: their records can be settled
      const totals = async () =>
        (await ledger.usage(OWNER, {})).reduce((t, r) => ({ calls: t.calls + r.calls, credits: t.credits + r.credits, refunds: t.refunds + r.refunds }), {
          calls: 0,
          credits: 0,
          refunds: 0,
        });
      const before = await totals();
      expect(before).toEqual({ calls: 14, credits: 16, refunds: 5 });

      await ledger.settlement.settleAll('stale');
      expect(await roll(ledger)).toBe(13); // all but the one made just now
      expect(await totals()).toEqual(before);
      // Records past retention (the 10 of 48-50 hours ago) are gone; the aggregates hold them.
      expect((await ledger.latest(OWNER, 100)).length).toBe(4);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 16, open: 0, difference: 0 });
      expect(await roll(ledger)).toBe(0);
      expect(await totals()).toEqual(before);
      await store.close();
    });

    it('a roll-up stopped between its aggregates and its watermark counts nothing twice when it runs again', async () => {
      const { ledger, store } = await setup(1000);
      for (let i = 0; i < 6; i++) await pastCall(ledger, 3 - i / 10);
      await roll(ledger);
      const before = await ledger.usage(OWNER, {});
      // The stop: the watermark is put back, as if the run died after moving the aggregates.
      await store.collection('ledger_state').updateOne({ _id: 'rollup-slots' }, { $set: { [`s${slotOf(OWNER)}`]: new Date(0) } });
      expect(await ledger.usage(OWNER, {})).toEqual(before);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 12, difference: 0 });
      await roll(ledger);
      expect(await ledger.usage(OWNER, {})).toEqual(before);
      await store.close();
    });

    it("an owner's first totals hold every record the watermark passes, when another roller's aggregates are ahead", async () => {
      const { store, credits, ledger } = await setup(1000);
      for (const hoursAgo of [3, 2]) await pastCall(ledger, hoursAgo);
      await ledger.flush(true);
      // Roller A (batch up to 2.5 h ago) moved the aggregates and wrote the owner's first totals; B started with
      // A's aggregates ahead of the watermark and A's totals not written yet: as if A had not written them nor
      // moved the watermark.
      const a = new Ledger(store, credits, { ...OPTIONS, settledMs: 2.5 * HOUR });
      await roll(a);
      const totalsOfA = (await ledger.rollUp.totals.findOne({ _id: OWNER }))!;
      await ledger.rollUp.totals.deleteOne({ _id: OWNER });
      await store.collection('ledger_state').updateOne({ _id: 'rollup-slots' }, { $set: { [`s${slotOf(OWNER)}`]: new Date(0) } });
      await roll(ledger);
      // A's totals come late: the insert is a duplicate (A stops), or, had B passed the owner, they would stand
      // behind the watermark and the record of 2 hours ago would be in neither.
      await ledger.rollUp.totals.insertOne(totalsOfA).catch(() => undefined);
      await roll(ledger);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 4, open: 0, difference: 0, ok: true });
      await store.close();
    });

    it('loses no record and counts none twice when rollers and settlers of two instances run during traffic', async () => {
      // Records are rolled once 1 s old (10 s in the service, 60 s on MongoDB): the margin for the other instance's
      // writes on a busy machine; the rolls still run while records are being written.
      const options = { ...OPTIONS, settledMs: 1000 };
      const { store, credits } = await setup(100_000, options);
      const a = new Ledger(store, credits, { ...options, instance: 'a' });
      const b = new Ledger(store, new Credits(store), { ...options, instance: 'b' });
      let running = true;
      let kept = 0;
      const writers = Array.from({ length: 6 }, async (_, w) => {
        const ledger = w % 2 ? a : b;
        for (let i = 0; running; i++) {
          const outcome = i % 5 === 0 ? 'refunded' : 'ok';
          if (await paidCall(ledger, outcome, 1 + (i % 3))) kept += outcome === 'ok' ? 1 + (i % 3) : 0;
        }
      });
      let rolledDuringTraffic = 0;
      const housekeepers = Array.from({ length: 4 }, async (_, h) => {
        const ledger = h % 2 ? a : b;
        while (rolledDuringTraffic < 100) {
          await new Promise((resolve) => setImmediate(resolve)); // each run is its own job: the writers get their turns
          const [rolled] = await Promise.all([roll(ledger), ledger.settlement.settleAll('stale')]);
          rolledDuringTraffic += rolled;
        }
      });
      await Promise.all(housekeepers);
      running = false;
      await Promise.all(writers);
      await Promise.all([a.flush(true), b.flush(true)]); // the blocks given back
      // Everything rolled in the end: the aggregates alone hold every record.
      const stoppedAt = new Date();
      await expect.poll(async () => (await Promise.all([roll(a), roll(b)]), (await a.rollUp.watermark(OWNER)) > stoppedAt), { timeout: 10_000 }).toBe(true);
      const report = (await a.check(OWNER))[0];
      expect(report).toMatchObject({ kept, open: 0, difference: 0, ok: true });
      const usage = await b.usage(OWNER, {});
      expect(usage.reduce((s, r) => s + r.credits, 0)).toBe(kept);
      expect(await credits.balance(OWNER)).toBe(100_000 - kept);
      await store.close();
    });

    it('a roll-up while this process is still writing records stays behind them (a slow store loses none)', async () => {
      const { store, credits } = await setup(100);
      // The store takes the records only when the test says (a write in flight on a slow store); everything else passes through.
      let releaseRecords!: () => void;
      const held = new Promise<void>((resolve) => (releaseRecords = resolve));
      const slow: Store = Object.assign(Object.create(store) as Store, {
        collection: <T extends Doc>(name: string) => {
          const collection = store.collection<T>(name);
          if (name !== 'calls') return collection;
          return Object.assign(Object.create(collection) as Collection<T>, {
            insertMany: async (docs: T[]) => (await held, collection.insertMany(docs)),
          });
        },
      });
      const ledger = new Ledger(slow, credits, { ...OPTIONS, settledMs: 0 });
      const written = paidCall(ledger, 'refunded');
      await expect.poll(() => ledger.writingSince()).not.toBeNull();
      await expect.poll(() => Date.now()).toBeGreaterThan(ledger.writingSince()!.getTime()); // the record's stamp is in the past
      await roll(ledger);
      releaseRecords();
      await written;
      await ledger.flush(true);
      await roll(ledger);
      expect(await ledger.usage(OWNER, {})).toMatchObject([{ calls: 1, refunds: 1, credits: 0 }]);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 0, open: 0, difference: 0, ok: true });
      await store.close();
    });

    it('the check is exact under live traffic: 8 writers, 40 checks, no false break', async () => {
      // Each check reads every record of the owner: on FerretDB under a busy machine one took over the 3-s
      // deadline, which is the production guard, not what this test is about.
      const { store, ledger } = await setup(1_000_000, { settledMs: 0 }, { slowReads: true });
      let running = true;
      // Paced by the checks (16 calls more for each): what is tested is the check under traffic, not the writers'
      // speed, and FerretDB's queries read every record, so writers paced by the clock outgrow the checks on a busy
      // machine (each slower check leaves more records to the next: a CI run did not finish its 40 in 60 s).
      let allowed = 0;
      let started = 0;
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; running;) {
          if (started >= allowed) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          started++;
          await paidCall(ledger, (i + w) % 4 === 0 ? 'refunded' : 'ok', 1 + (i % 2));
          i++;
        }
      });
      const reports = [];
      for (let i = 0; i < 40; i++) {
        allowed += 16;
        // A check comes in as its own request, while the writers' calls go on.
        await new Promise((resolve) => setTimeout(resolve, 10));
        reports.push((await ledger.check(OWNER))[0]);
        if (i % 10 === 5) await roll(ledger);
      }
      running = false;
      await Promise.all(writers);
      expect(reports.filter((r) => !r.ok)).toEqual([]);
      expect(new Set(reports.map((r) => r.kept)).size).toBeGreaterThan(10); // the checks ran during the traffic
      await store.close();
    }, 60_000); // FerretDB reads every record for each query: the 40 checks take about 6 s there on an idle 2-core machine

    it('reports a real break', async () => {
      const { store, credits, ledger } = await setup(100);
      await paidCall(ledger);
      await credits.docs.updateOne({ _id: OWNER }, { $inc: { balance: 5 } }); // credits from nowhere
      expect((await ledger.check(OWNER))[0]).toMatchObject({ difference: -5, ok: false });
      await store.close();
    });

    it('reports a kept call that the aggregates lost, once its range is settled', async () => {
      const { store, ledger } = await setup(100, { settledMs: 0 });
      await paidCall(ledger, 'ok', 2);
      await paidCall(ledger, 'ok', 2);
      await ledger.flush(true);
      await ledger.settleAfterStop();
      // Rolled once the clock has passed both records' millisecond.
      await expect.poll(async () => (await roll(ledger), (await ledger.rolled.find({})).reduce((n, r) => n + r.calls, 0))).toBe(2);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 4, open: 0, difference: 0, unaccounted: 0, ok: true });
      // As a record passed over by the roll-up would be: its credits count as open, not kept; the balance agrees.
      const lost = { $inc: { calls: -1, credits: -2, debited: -2 } };
      await ledger.rolled.updateOne({ owner_id: OWNER }, lost);
      await ledger.rollUp.totals.updateOne({ _id: OWNER }, lost);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 2, open: 2, difference: 0, unaccounted: 2, ok: false });
      await store.close();
    });

    it('upgrades credits documents of the version with open charges in the document', async () => {
      const { store, credits, ledger } = await setup(0);
      const at = new Date();
      const open = [
        { id: 'old_kept', cost: 2, at, server_id: 'srv', key_id: 'k', tool: 't' },
        { id: 'old_lost', cost: 3, at, server_id: 'srv', key_id: 'k', tool: 't' },
      ];
      await store.collection('credits').insertOne({ _id: 'own_old', balance: 5, granted: 10, open });
      await ledger.record({ ...recordOf({ id: 'old_kept', cost: 2, server_id: 'srv', key_id: 'k', tool: 't' }, 'own_old', 'ok', 'ok', 2, 1), charged: 2 });
      await ledger.settleAfterStop();
      expect(await credits.docs.findOne({ _id: 'own_old' })).toMatchObject({ balance: 8, granted: 10, debited: 0, settled: 0 });
      expect((await ledger.latest('own_old', 5)).find((c) => c._id === 'old_lost')).toMatchObject({ code: 'interrupted', outcome: 'refunded' });
      expect((await ledger.check('own_old'))[0]).toMatchObject({ kept: 2, open: 0, difference: 0 });
      // And it charges on the credit line from there.
      expect(await ledger.charge('own_old', 2)).toMatchObject({ from: 0 });
      await store.close();
    });

    it('runs the housekeeping once more when asked during a run, after it, and rolls what was written meanwhile', async () => {
      const runs: Array<{ startedAt: number; endedAt: number }> = [];
      const { store, ledger } = await setup(10_000, { settledMs: 0, onHousekeeping: (run) => runs.push(run) });
      await Promise.all(Array.from({ length: 20 }, () => paidCall(ledger, 'ok', 1)));
      const first = ledger.housekeep();
      // Written while the first run may already be past its target: only a run after it is sure to roll them.
      const meanwhile = Promise.all(Array.from({ length: 20 }, () => paidCall(ledger, 'ok', 1)));
      const again = ledger.housekeep();
      expect(ledger.housekeep()).toBe(again); // asked twice meanwhile: one more run, not two
      expect(again).not.toBe(first);
      // flush() waits for that run too, not only for the one under way.
      await Promise.all([meanwhile, ledger.flush()]);
      expect(runs).toHaveLength(2);
      expect(runs[1].startedAt).toBeGreaterThanOrEqual(runs[0].endedAt);
      await again;
      expect((await ledger.usage(OWNER, {})).reduce((t, r) => t + r.calls, 0)).toBe(40);
      await store.close();
    });

    it.runIf(target.name.startsWith('embedded'))('keeps at most maxRecords records (plus the last seconds), rolling older ones up', async () => {
      const { store, ledger } = await setup(10_000, { maxRecords: 100, settledMs: 0 });
      for (let i = 0; i < 400; i += 50) await Promise.all(Array.from({ length: 50 }, () => paidCall(ledger, 'ok', 1)));
      await expect.poll(async () => (await ledger.latest(OWNER, 1000)).length, { timeout: 10_000 }).toBeLessThanOrEqual(125);
      await ledger.flush();
      const usage = await ledger.usage(OWNER, {});
      expect(usage.reduce((t, r) => t + r.calls, 0)).toBe(400);
      expect((await ledger.check(OWNER))[0]).toMatchObject({ kept: 400, difference: 0 });
      await store.close();
    });
  });
}
