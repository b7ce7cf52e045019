// Rejected calls are free, so an owner could make them as fast as its keys allow and fill the call log with them.
// Each owner's rejections are logged one by one up to a number a minute (per process); past it, that minute's are
// counted, and recorded when the minute is over as one record per server, key and tool carrying their number
// (`count`), so that usage still counts every call.
import { timeOrderedId } from '../secrets.ts';
import type { StoreClock } from '../store/clock.ts';
import type { CallDoc } from './ledger.ts';

const MINUTE = 60_000;

export class RejectionLog {
  /** The minute counted (by the store's clock), and each owner's rejections logged in it. */
  private minute = -1;
  private readonly logged = new Map<string, number>();
  /** The records counting what was not logged, by owner, server, key and tool, per minute. */
  private readonly counted = new Map<string, CallDoc & { count: number; minute: number }>();

  constructor(
    readonly perMinute: number,
    private readonly clock: StoreClock,
  ) {}

  /** Whether this rejection is logged now; otherwise it is counted in its minute's record. */
  admit(doc: CallDoc): boolean {
    const minute = Math.floor(this.clock.now() / MINUTE);
    if (minute !== this.minute) {
      this.minute = minute;
      this.logged.clear();
    }
    const logged = this.logged.get(doc.owner_id) ?? 0;
    if (logged < this.perMinute) {
      this.logged.set(doc.owner_id, logged + 1);
      return true;
    }
    const id = `${minute}|${doc.owner_id}|${doc.server_id}|${doc.key_id}|${doc.tool}|${doc.via ?? ''}`;
    const record = this.counted.get(id);
    if (record) record.count++;
    else this.counted.set(id, Object.assign({}, doc, { _id: timeOrderedId('call_'), code: 'rejections_counted', latency_ms: null, count: 1, minute }));
    return false;
  }

  /** The counting records of minutes that are over (every one with `all`, at shutdown), each handed out once. */
  due(all = false): CallDoc[] {
    const now = Math.floor(this.clock.now() / MINUTE);
    const out: CallDoc[] = [];
    for (const [id, { minute, ...doc }] of this.counted) {
      if (!all && minute >= now) continue;
      this.counted.delete(id);
      const at = new Date(minute * MINUTE).toISOString().slice(11, 16);
      out.push(
        Object.assign(doc, {
          message:
            `${doc.count} more rejected call${doc.count === 1 ? '' : 's'} of ${doc.tool} in the minute from ${at} UTC, counted here and not logged one by one: ` +
            `at most ${this.perMinute} rejected calls a minute are logged per owner`,
        }),
      );
    }
    return out;
  }
}
