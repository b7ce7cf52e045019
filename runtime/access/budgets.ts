// Budgets of restricted credentials (`credit_limit`): the credits a key or connected app spent in the current
// UTC day or month, one document per credential and period. A call reserves its cost with ONE conditional
// increment before the owner's balance is charged, so parallel calls never overshoot (summing the ledger
// would let every call of a burst see the same total); a refunded call gives its reservation back. Spending
// is counted from when a budget is set; a crash between the reservation and the call's end keeps the
// reservation (the budget errs on the safe side).
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

const credits = (n: number) => `${n.toLocaleString('en-US')} credit${n === 1 ? '' : 's'}`;
const utc = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export class Budgets {
  private readonly budgets: Collection<BudgetDoc>;
  private readonly clock: StoreClock;

  constructor(store: Store) {
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
    if (cost <= limit.credits) {
      const fits = { _id, spent: { $lte: limit.credits - cost } };
      try {
        if (await this.budgets.findOneAndUpdate(fits, { $inc: { spent: cost }, $setOnInsert: { key_id: keyId, resets_at: resetsAt } }, { upsert: true }))
          return null;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        // The period's document exists (full, or just made by a concurrent call): the same test-and-increment on it.
        if (await this.budgets.findOneAndUpdate(fits, { $inc: { spent: cost } })) return null;
      }
    }
    const spent = (await this.budgets.findOne({ _id }))?.spent ?? 0;
    return new ToolError(
      'budget_exceeded',
      `${HOLDER_NAMES[holder]} budget is ${credits(limit.credits)} per ${limit.per} (UTC) and ${credits(spent)} ` +
        `${spent === 1 ? 'is' : 'are'} spent: ${tool} costs ${credits(cost)}. The budget resets at ${utc(resetsAt)}.`,
    );
  }

  /** Gives a refunded call's reservation back to the period it was made in. */
  async release(keyId: string, limit: CreditLimit | undefined, cost: number, at: Date): Promise<void> {
    if (!limit || cost === 0) return;
    const _id = `${keyId}/${budgetPeriod(limit.per, at).id}`;
    await this.budgets.updateOne({ _id, spent: { $gte: cost } }, { $inc: { spent: -cost } });
  }

  /** Credits spent in the current period by each credential with a budget (for the key lists). */
  async spent(limits: Array<{ keyId: string; limit: CreditLimit }>, now = this.clock.date()): Promise<Map<string, number>> {
    const ids = new Map(limits.map((l) => [`${l.keyId}/${budgetPeriod(l.limit.per, now).id}`, l.keyId]));
    const out = new Map(limits.map((l) => [l.keyId, 0]));
    if (!ids.size) return out;
    for (const doc of await this.budgets.find({ _id: { $in: [...ids.keys()] } })) out.set(ids.get(doc._id)!, doc.spent);
    return out;
  }

  /** Deletes the counters of periods that are over. */
  async sweep(now = this.clock.date()): Promise<number> {
    return this.budgets.deleteMany({ resets_at: { $lt: now } });
  }
}
