// The ledger's housekeeping shared out by partition (runtime/billing/partitions.ts) between three instances (three
// Ledgers on one store, each with its own name, leases and timers' work): 200 owners with 50 keys each, two
// partitions. Every record is rolled once (aggregates and totals), the ledger check holds for every owner, each
// partition's lease is renewed while a run lasts longer than the lease, and no partition is ever run by two
// instances at once. On the embedded store in memory at full size; on MongoDB (FerretDB under CI) with 20 owners
// of 5 keys: FerretDB on SQLite reads every document of a collection for each query (at 20,000 records one query
// took 5 to 8 s on the 2-core test machine), so the full size would take an hour there; a MongoDB server with its
// indexes takes it as it is (MONGODB_URL).
import { describe, expect, it } from 'vitest';
import { Credits } from '../runtime/billing/credits.ts';
import { type CallDoc, type HousekeepingRun, Ledger, type LedgerOptions, recordOf } from '../runtime/billing/ledger.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import { LEDGER_OPTIONS, takeBlock } from './support/ledger.ts';
import { storeTargets } from './support/stores.ts';

for (const target of storeTargets('ledger_partitions').filter((t) => t.name !== 'embedded, on disk')) {
  const ferret = target.name.startsWith('MongoDB');
  const [OWNERS, KEYS] = ferret ? [20, 5] : [200, 50];
  describe.runIf(target.enabled)(`ledger housekeeping in partitions, on three instances: ${target.name}`, () => {
    it(`rolls ${OWNERS} owners × ${KEYS} keys once, with two partitions and three instances: leases renewed, never two runs of a partition at once`, async () => {
      const store = await target.open();
      await store.ensureIndexes(STORE_INDEXES);
      const credits = new Credits(store);
      const runs: HousekeepingRun[] = [];
      const options: LedgerOptions = {
        ...LEDGER_OPTIONS,
        partitions: 2,
        // Shorter than a run here: without renewals another instance would take a partition in the middle of one.
        leaseMs: 300,
        settledMs: 0,
        onHousekeeping: (run) => runs.push(run),
      };
      const instances = ['a', 'b', 'c'].map((instance) => new Ledger(store, credits, { ...options, instance }));

      // Each owner's 50 keys made a kept call of 1 credit and a rejected one in the last two hours: 100 records per
      // owner, the charges one range of its credit line each.
      const records: CallDoc[] = [];
      for (let o = 0; o < OWNERS; o++) {
        const owner = `own_p${o}`;
        await credits.grant(owner, 100);
        const block = (await takeBlock(store, owner, KEYS))!;
        for (let k = 0; k < KEYS; k++) {
          const at = new Date(store.clock.now() - ((o * KEYS + k) % 120) * 60_000 - 1000);
          const call = {
            id: `call_p${o}_${k}`,
            cost: 1,
            server_id: `srv_${o}`,
            key_id: `key_${o}_${k}`,
            tool: 'demo_ping',
            from: block.from + k,
            block: block.id,
          };
          records.push({ ...recordOf(call, owner, 'ok', 'ok', 1, 5), at });
          records.push({ ...recordOf({ ...call, id: `${call.id}_r`, from: undefined }, owner, 'rejected', 'invalid_arguments', 0, 1), at });
        }
      }
      for (let i = 0; i < records.length; i += 2000) await instances[0].calls.insertMany(records.slice(i, i + 2000));

      // The instances' housekeeping, as their minute timers would run it, until every record is rolled.
      const newest = Math.max(...records.map((r) => r.at.getTime()));
      const rolled = async () => (await store.collection('ledger_state').findOne({ _id: 'rollup-slots' })) as Record<string, unknown> | null;
      const done = async () => {
        const marks = await rolled();
        return marks !== null && Object.entries(marks).every(([k, v]) => k === '_id' || (v as Date).getTime() > newest);
      };
      for (let round = 0; round < 20 && !(await done()); round++) await Promise.all(instances.map((l) => l.housekeep()));
      expect(await done()).toBe(true);

      // Every record rolled once: into its hourly aggregate and into its owner's totals.
      const usage = await instances[1].rolled.find({});
      expect(usage.reduce((n, r) => n + r.calls, 0)).toBe(OWNERS * KEYS * 2);
      expect(usage.reduce((n, r) => n + r.credits, 0)).toBe(OWNERS * KEYS);
      const totals = await instances[2].rollUp.totals.find({});
      expect(totals).toHaveLength(OWNERS);
      for (const t of totals) expect(t).toMatchObject({ calls: KEYS * 2, credits: KEYS, errors: KEYS, debited: KEYS });
      // The ledger check holds for every owner, with nothing unaccounted: settlement passed every range.
      const reports = await instances[2].check();
      expect(reports).toHaveLength(OWNERS);
      expect(reports.filter((r) => !r.ok || r.unaccounted !== 0 || r.kept !== KEYS || r.open !== 0)).toEqual([]);

      // Both partitions ran; a run that outlasted its lease kept it by renewing it; no partition ran twice at once.
      expect(new Set(runs.map((r) => r.partition))).toEqual(new Set([0, 1]));
      for (const partition of [0, 1]) {
        const mine = runs.filter((r) => r.partition === partition).sort((x, y) => x.startedAt - y.startedAt);
        for (let i = 1; i < mine.length; i++) expect(mine[i].startedAt, `partition ${partition}`).toBeGreaterThanOrEqual(mine[i - 1].endedAt);
      }
      expect(Math.max(...runs.map((r) => r.renewals))).toBeGreaterThan(0);
      const longest = runs.reduce((a, b) => (b.endedAt - b.startedAt > a.endedAt - a.startedAt ? b : a));
      console.log(
        `ledger partitions: ${OWNERS} owners × ${KEYS} keys, ${records.length} records, 2 partitions, 3 instances; ${runs.length} runs ` +
          `(by ${[...new Set(runs.map((r) => r.instance))].join(', ')}), longest ${longest.endedAt - longest.startedAt} ms with ${longest.renewals} renewals of a 300 ms lease`,
      );
      await store.close();
    }, 300_000);
  });
}
