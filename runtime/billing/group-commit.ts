// Group commit: items are written together, one write at a time: the first write takes what arrived in the
// same turn of the event loop, each next one what arrived while the previous was in flight. Under load a
// slow store gets bigger batches, not a longer queue; a lone item waits one turn. (Measured: starting the
// first write at once instead leaves one caller as fast and cuts tools/call at c=32 by a third.) When a write
// finds the store refusing or past its deadline, what arrived meanwhile fails with it, unwritten: it would
// wait as long again, and its callers are owed a quick answer (503). Each write runs in the async context of its
// batch's first item, not of whoever started the writing: work of the service (a credit block's rest) that joins
// the writing while a call's record is written is not that call's.
import { AsyncResource } from 'node:async_hooks';
import { StoreUnavailableError } from '../store/port.ts';

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private waiting: Waiting<T, R>[] = [];
  /** The async context of the first item waiting. */
  private waitingScope: AsyncResource | null = null;
  private draining: Promise<void> | null = null;

  /** `write` stores a batch and returns one result per item, in order (nothing when R is void); if it throws, every item of the batch fails. */
  constructor(
    private readonly write: (items: T[]) => Promise<R[] | void>,
    private readonly onIdle: () => void = () => {},
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.waiting.length === 0) this.waitingScope = new AsyncResource('group-commit');
      this.waiting.push({ item, resolve, reject });
      this.draining ??= new Promise<void>((turnEnded) => setImmediate(turnEnded)).then(() => this.drain());
    });
  }

  /** Resolves once everything added so far is written (or has failed). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      const scope = this.waitingScope!;
      this.waiting = [];
      this.waitingScope = null;
      try {
        const results = await scope.runInAsyncScope(() => this.write(batch.map((w) => w.item)));
        batch.forEach((w, i) => w.resolve(results?.[i] as R));
      } catch (err) {
        for (const w of batch) w.reject(err);
        if (err instanceof StoreUnavailableError && !err.transient) for (const w of this.waiting.splice(0)) w.reject(err);
      }
    }
    this.draining = null;
    this.onIdle();
  }
}

/** One GroupCommit per key (an owner, whose document the writes change), kept only while it has work. */
export class KeyedGroupCommit<T, R> {
  private readonly byKey = new Map<string, GroupCommit<T, R>>();

  constructor(private readonly write: (key: string, items: T[]) => Promise<R[] | void>) {}

  add(key: string, item: T): Promise<R> {
    let commit = this.byKey.get(key);
    if (!commit) {
      commit = new GroupCommit<T, R>(
        (items) => this.write(key, items),
        () => this.byKey.delete(key),
      );
      this.byKey.set(key, commit);
    }
    return commit.add(item);
  }

  /** Resolves once everything added so far, for every key, is written (or has failed). */
  async idle(): Promise<void> {
    await Promise.all([...this.byKey.values()].map((commit) => commit.idle()));
  }
}
