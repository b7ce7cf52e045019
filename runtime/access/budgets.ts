// Budgets of restricted credentials (`credit_limit`): the credits a key or connected app spent in the current
// UTC day or month, one document per credential and period. Calls reserve their cost before the owner's balance
// is charged, by conditional increments of that document, so parallel calls never overshoot (summing the ledger
// would let every call of a burst see the same total); a refunded call gives its reservation back. Spending
// is counted from when a budget is set.
//
// Like the owner's credits (billing/credit-blocks.ts), a process reserves in blocks: one increment reserves what
// the calls waiting cost plus about a second of the credential's use here (at most 1/8 of what the budget has
// left; nothing more near the limit), calls take from it in memory, refunds go back into it, and what is left
// goes back with one decrement once the block is idle. A crash keeps the reservations it held (at most that
// eighth): the budget errs on the safe side until the period resets, as it does for a call a crash interrupts.
import { IDLE_MS, TICK_MS, UseRate } from '../billing/credit-blocks.ts';
import { KeyedGroupCommit } from '../billing/group-commit.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { DuplicateKeyError } from '../store/port.ts';
import { ToolError } from '../tool-error.ts';
import type { CreditLimit, Holder } from './restrictions.ts';

interface BudgetDoc extends Doc {
  /** _id: `<credential id>/<period>`, the period as d2026-01-31 or m2026-01. */
  key_id: string;
  spent: number;
  /** The end of the period (swept afterwards). */
  resets_at: Date;
}

/** The UTC period containing `at` and when the next one starts. */
export function budgetPeriod(per: CreditLimit['per'], at: Date): { id: string; resetsAt: Date } {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  if (per === 'month') return { id: `m${at.toISOString().slice(0, 7)}`, resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
  return { id: `d${at.toISOString().slice(0, 10)}`, resetsAt: new Date(Date.UTC(y, m, at.getUTCDate() + 1)) };
}

/** Whose budget a call meets: its credential's (a key or a connected app), or the end user's it acts as. */
export type BudgetHolder = Holder | 'end_user';
const HOLDER_NAMES: Record<BudgetHolder, string> = { key: "This key's", app: "This connected app's", end_user: "This end user's" };

/** What this process has reserved of one budget period and not handed to a call yet. */
interface Reserved {
  held: number;
  lastUsed: number;
  use: UseRate;
  /** A reservation write is under way: not given back meanwhile. */
  reserving: boolean;
}

const credits = (n: number) => `${n.toLocaleString('en-US')} credit${n === 1 ? '' : 's'}`;
const utc = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export class Budgets {
  private readonly budgets: Collection<BudgetDoc>;
  private readonly clock: StoreClock;
  /** By budget document id: what this process holds reserved. */
  private readonly reserved = new Map<string, Reserved>();
  /** One reservation write per budget document at a time in this process; the calls waiting share it. */
  private readonly reservations = new KeyedGroupCommit<{ keyId: string; limit: CreditLimit; cost: number; resetsAt: Date }, boolean>((_id, calls) =>
    this.reserveBlock(_id, calls),
  );
  private timer: NodeJS.Timeout | null = null;

  constructor(
    store: Store,
    private readonly onBackgroundError?: (err: unknown) => void,
  ) {
    this.budgets = store.collection<BudgetDoc>('key_budgets');
    this.clock = store.clock;
  }

  /**
   * Reserves `cost` of the credential's budget for a call starting at `at`: null when it fits (or there is no
   * budget), else the refusal naming the limit and when it resets (nothing reserved).
   */
  async reserve(keyId: string, limit: CreditLimit | undefined, cost: number, at: Date, holder: BudgetHolder, tool: string): Promise<ToolError | null> {
    if (!limit || cost === 0) return null;
    const { id, resetsAt } = budgetPeriod(limit.per, at);
    const _id = `${keyId}/${id}`;
    const mine = this.reserved.get(_id);
    if (mine && mine.held >= cost) {
      mine.held -= cost;
      mine.lastUsed = this.clock.now();
      mine.use.used(cost);
      return null;
    }
    if (cost <= limit.credits && (await this.reservations.add(_id, { keyId, limit, cost, resetsAt }))) return null;
    const spent = await this.spentOf(_id);
    return new ToolError(
      'budget_exceeded',
      `${HOLDER_NAMES[holder]} budget is ${credits(limit.credits)} per ${limit.per} (UTC) and ${credits(spent)} ` +
        `${spent === 1 ? 'is' : 'are'} spent: ${tool} costs ${credits(cost)}. The budget resets at ${utc(resetsAt)}.`,
    );
  }

  /**
   * One conditional increment for the calls waiting on this budget period: what they cost (those that fit, in
   * order of arrival) plus the headroom kept here for the next ones. Says for each call whether it is reserved.
   */
  private async reserveBlock(_id: string, calls: Array<{ keyId: string; limit: CreditLimit; cost: number; resetsAt: Date }>): Promise<boolean[]> {
    const { keyId, limit, resetsAt } = calls[0];
    const now = this.clock.now();
    const mine = this.reserved.get(_id) ?? { held: 0, lastUsed: now, use: new UseRate(), reserving: true };
    mine.use.taking(now);
    mine.lastUsed = now;
    mine.reserving = true;
    // What is held here pays for part of it: taken out while the write is under way (refunds meanwhile add to it).
    const carried = mine.held;
    mine.held = 0;
    this.keep(_id, mine);
    try {
      for (let attempt = 0; attempt < 4; attempt++) {
        let left = limit.credits - (await this.spentOf(_id)) + carried;
        const fits = calls.map((c) => c.cost <= left && ((left -= c.cost), true));
        const need = calls.reduce((sum, c, i) => sum + (fits[i] ? c.cost : 0), 0);
        const headroom = need === 0 ? 0 : mine.use.headroom(left, Math.max(...calls.map((c) => c.cost)));
        const want = need + headroom - carried;
        if (want <= 0 || (await this.increment(_id, keyId, limit.credits, want, resetsAt))) {
          mine.held += want > 0 ? headroom : carried - need;
          mine.use.used(need);
          return fits;
        }
        // Other processes reserved meanwhile: read again.
      }
      mine.held += carried;
      return calls.map(() => false);
    } catch (err) {
      mine.held += carried;
      throw err;
    } finally {
      mine.reserving = false;
    }
  }

  /** spent += amount if it stays within the limit (the period's document made by the first). */
  private async increment(_id: string, keyId: string, limit: number, amount: number, resetsAt: Date): Promise<boolean> {
    const fits = { _id, spent: { $lte: limit - amount } };
    try {
      return (
        (await this.budgets.findOneAndUpdate(fits, { $inc: { spent: amount }, $setOnInsert: { key_id: keyId, resets_at: resetsAt } }, { upsert: true })) !==
        null
      );
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // The period's document exists (full, or just made by a concurrent call): the same test-and-increment on it.
      return (await this.budgets.findOneAndUpdate(fits, { $inc: { spent: amount } })) !== null;
    }
  }

  private keep(_id: string, mine: Reserved): void {
    this.reserved.set(_id, mine);
    this.timer ??= setInterval(() => void this.giveBackIdle(), TICK_MS).unref();
  }

  /** Gives a refunded call's reservation back to the period it was made in: into what this process holds, if it still holds that period. */
  async release(keyId: string, limit: CreditLimit | undefined, cost: number, at: Date): Promise<void> {
    if (!limit || cost === 0) return;
    const _id = `${keyId}/${budgetPeriod(limit.per, at).id}`;
    const mine = this.reserved.get(_id);
    if (mine) mine.held += cost;
    else await this.giveBack(_id, cost);
  }

  private async giveBack(_id: string, amount: number): Promise<void> {
    await this.budgets.updateOne({ _id, spent: { $gte: amount } }, { $inc: { spent: -amount } });
  }

  /** What this process holds of budgets idle for IDLE_MS (all of it with `all`, at shutdown) goes back, one write each. */
  async giveBackIdle(all = false): Promise<void> {
    const now = this.clock.now();
    for (const [_id, mine] of this.reserved) {
      if (mine.reserving || (!all && now - mine.lastUsed < IDLE_MS)) continue;
      this.reserved.delete(_id);
      if (mine.held > 0) await this.giveBack(_id, mine.held).catch((err: unknown) => this.onBackgroundError?.(err));
    }
    if (this.reserved.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Spent in a period: what the store says, less what this process holds reserved for calls to come. */
  private async spentOf(_id: string): Promise<number> {
    return ((await this.budgets.findOne({ _id }))?.spent ?? 0) - (this.reserved.get(_id)?.held ?? 0);
  }

  /** Credits spent in the current period by each credential with a budget (for the key lists). */
  async spent(limits: Array<{ keyId: string; limit: CreditLimit }>, now = this.clock.date()): Promise<Map<string, number>> {
    const ids = new Map(limits.map((l) => [`${l.keyId}/${budgetPeriod(l.limit.per, now).id}`, l.keyId]));
    const out = new Map(limits.map((l) => [l.keyId, 0]));
    if (!ids.size) return out;
    for (const doc of await this.budgets.find({ _id: { $in: [...ids.keys()] } }))
      out.set(ids.get(doc._id)!, doc.spent - (this.reserved.get(doc._id)?.held ?? 0));
    return out;
  }

  /** Deletes the counters of periods that are over. */
  async sweep(now = this.clock.date()): Promise<number> {
    return this.budgets.deleteMany({ resets_at: { $lt: now } });
  }
}
