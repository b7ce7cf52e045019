// The ledger and the credits it settles, on the embedded store (in memory and on disk): group-committed
// charges and records, reconciliation of charges a crash left open, and roll-up past retention without double counting.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type OpenCharge, Credits } from '../runtime/billing/credits.ts';
import { Ledger, recordOf } from '../runtime/billing/ledger.ts';
import { openEmbeddedStore } from '../runtime/store/embedded.ts';
import type { Store } from '../runtime/store/port.ts';

const HOUR = 3_600_000;
const charge = (id: string, at = new Date(), cost = 2): OpenCharge => ({ id, cost, at, server_id: 'srv', key_id: 'key_1', tool: 'tracker_get_issue' });

describe.each([
  ['in memory', () => openEmbeddedStore()],
  ['on disk', async () => openEmbeddedStore({ dir: await mkdtemp(path.join(tmpdir(), 'ledger-')) })],
])('ledger %s', (_name, open: () => Promise<Store>) => {
  async function setup(balance = 100) {
    const store = await open();
    const credits = new Credits(store);
    await credits.grant('own_1', balance);
    return { store, credits, ledger: new Ledger(store, credits) };
  }

  it('writes the records of concurrent calls together, each call awaiting its own', async () => {
    const { ledger, store } = await setup();
    const records = Array.from({ length: 50 }, (_, i) => recordOf(charge(`call_${i}`), 'own_1', 'ok', 'ok', 2, 5));
    await Promise.all(records.map((r) => ledger.record(r)));
    expect((await ledger.latest('own_1', 100)).length).toBe(50);
    await store.close();
  });

  it('charges that arrive while one is written share the next update if the balance covers them all, else each is tried alone', async () => {
    const { credits, ledger, store } = await setup(20);
    const all = await Promise.all(Array.from({ length: 4 }, (_, i) => credits.charge('own_1', charge(`all_${i}`, new Date(), 3))));
    expect(all).toEqual([true, true, true, true]);
    // 8 credits left: four more charges of 3 are too many together; the first two, alone, fit.
    const some = await Promise.all(Array.from({ length: 4 }, (_, i) => credits.charge('own_1', charge(`some_${i}`, new Date(), 3))));
    expect(some).toEqual([true, true, false, false]);
    expect(await credits.balance('own_1')).toBe(2);
    const open = (await credits.all('own_1'))[0]!.open!.map((c) => c.id);
    expect(open).toEqual(['all_0', 'all_1', 'all_2', 'all_3', 'some_0', 'some_1']);
    expect((await ledger.check('own_1'))[0]).toMatchObject({ open: 18, difference: 0 });
    await store.close();
  });

  it('settles what a crash left open: recorded outcomes kept, unrecorded calls refunded and recorded', async () => {
    const { credits, ledger, store } = await setup(100);
    for (const id of ['done', 'refund-pending', 'lost']) expect(await credits.charge('own_1', charge(id))).toBe(true);
    expect(await credits.balance('own_1')).toBe(94);
    // "done" finished normally; "refund-pending" was recorded as refunded but died before its refund; "lost" has no record.
    await ledger.settle(recordOf(charge('done'), 'own_1', 'ok', 'ok', 2, 10), false);
    await ledger.record(recordOf(charge('refund-pending'), 'own_1', 'refunded', 'upstream_unavailable', 0, 10));
    expect((await ledger.check('own_1'))[0]).toMatchObject({ open: 4, kept: 2, difference: 0 });

    expect(await ledger.reconcile()).toBe(2);
    expect(await credits.balance('own_1')).toBe(98);
    const calls = await ledger.latest('own_1', 10);
    expect(calls.find((c) => c._id === 'lost')).toMatchObject({ outcome: 'refunded', code: 'interrupted', credits: 0, charged: 2 });
    expect((await ledger.check('own_1'))[0]).toMatchObject({ granted: 100, balance: 98, kept: 2, open: 0, difference: 0, ok: true });
    // Reconciling again changes nothing.
    expect(await ledger.reconcile()).toBe(0);
    expect(await credits.balance('own_1')).toBe(98);
    await store.close();
  });

  it('leaves charges younger than the cut-off to the instance that runs them', async () => {
    const { credits, ledger, store } = await setup(10);
    await credits.charge('own_1', charge('running', new Date()));
    expect(await ledger.reconcile(new Date(Date.now() - 60_000))).toBe(0);
    expect((await ledger.check('own_1'))[0]).toMatchObject({ open: 2, difference: 0 });
    await store.close();
  });

  it('rolls records before a cut-off into hourly aggregates, with the same totals and never twice', async () => {
    const { ledger, store } = await setup();
    const now = Date.now();
    const at = (hoursAgo: number) => new Date(now - hoursAgo * HOUR);
    const old = (i: number, hoursAgo: number) => ({
      ...recordOf(charge(`old_${hoursAgo}_${i}`), 'own_1', i % 3 === 0 ? 'refunded' : 'ok', 'ok', i % 3 === 0 ? 0 : 2, 5),
      at: at(hoursAgo),
    });
    await Promise.all(
      [...Array.from({ length: 6 }, (_, i) => old(i, 48)), ...Array.from({ length: 4 }, (_, i) => old(i, 50)), old(0, 1)].map((r) => ledger.record(r)),
    );
    const totals = async () =>
      (await ledger.usage('own_1', {})).reduce((t, r) => ({ calls: t.calls + r.calls, credits: t.credits + r.credits, refunds: t.refunds + r.refunds }), {
        calls: 0,
        credits: 0,
        refunds: 0,
      });
    const before = await totals();

    expect(await ledger.rollUp(at(24))).toBe(10);
    expect(await totals()).toEqual(before);
    expect((await ledger.latest('own_1', 100)).length).toBe(1);
    expect((await ledger.check('own_1'))[0].kept).toBe(before.credits);
    expect(await ledger.rollUp(at(24))).toBe(0);
    expect(await totals()).toEqual(before);

    // A crash after an aggregate moved forward but before its records were deleted: they are not counted
    // again, by usage, by the invariant check or by the next roll-up.
    const late = { ...old(9, 48), at: new Date(at(48).getTime() - 1) };
    await store.collection('calls').insertOne(late);
    expect(await totals()).toEqual(before);
    expect(await ledger.rollUp(at(24))).toBe(1);
    expect(await totals()).toEqual(before);

    // A later roll-up of the same hour adds only what came after.
    await ledger.record({ ...old(10, 48), at: new Date(at(24).getTime() - 1000) });
    await ledger.rollUp(at(2));
    expect((await totals()).calls).toBe(before.calls + 1);
    await store.close();
  });

  it('keeps at most maxRecords records, rolling the older ones up in the background', async () => {
    const store = await open();
    const credits = new Credits(store);
    const ledger = new Ledger(store, credits, { maxRecords: 100 });
    const records = Array.from({ length: 400 }, (_, i) => ({
      ...recordOf(charge(`c_${i}`), 'own_1', 'ok', 'ok', 1, 1),
      at: new Date(Date.now() - 2 * HOUR + i * 1000),
    }));
    for (let i = 0; i < records.length; i += 50) await Promise.all(records.slice(i, i + 50).map((r) => ledger.record(r)));
    await expect.poll(async () => (await ledger.latest('own_1', 1000)).length).toBeLessThanOrEqual(125);
    const usage = await ledger.usage('own_1', {});
    expect(usage.reduce((t, r) => t + r.calls, 0)).toBe(400);
    await store.close();
  });
});
