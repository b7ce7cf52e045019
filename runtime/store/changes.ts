// Changes to what the lookup caches keep (a key, a server, a server's tools, an account), announced through the
// store so that every instance may keep a lookup for longer than KEY_CACHE_MS and still see another instance's
// change within it. The writer announces a change before it writes it (`announce`: one insert); every instance
// reads the recent announcements once a second in the background (`poll`) and drops what they name.
//
// A cache keeps an entry past KEY_CACHE_MS only while this instance has applied every announcement older than
// KEY_CACHE_MS (`current`: the polls work) and no announcement of its key is recent (the change it announced may
// not be written yet: the writer writes it within its store deadline, or stopped and never does; an entry read
// meanwhile is kept for KEY_CACHE_MS only). So a change is seen everywhere within KEY_CACHE_MS whether the polls
// work or not, and a writer that stops between its announcement and its write leaves nothing stale behind.
import { randomUUID } from 'node:crypto';
import type { StoreClock } from './clock.ts';
import type { Collection, Doc, IndexSpec, Store } from './port.ts';

export const CHANGES_COLLECTION = 'cache_changes';

interface ChangeDoc extends Doc {
  /** The cache whose entry changed (its name in `follow`) and the entry's key. */
  cache: string;
  key: string;
  /** When it was announced (store time). */
  at: Date;
}

/**
 * How long an announcement is read again and counts as recent: longer than the write it announces may take
 * (a few attempts, each within the store's deadline: `recentMs`, at least this) and than a poll's gap that does
 * not drop everything.
 */
const RECENT_MS = 60_000;
/** The writes after an announcement: a few, each retried up to 4 times within the store's deadline. */
const WRITES_PER_ANNOUNCEMENT = 10;
/** Announcements are deleted this long after they were made (longer than `recentMs` can be). */
const KEPT_MS = 30 * 60_000;

/** The announcements' index: the polls' query, and their expiry where the server has TTL indexes (else `sweep`). */
export const CHANGES_INDEXES: IndexSpec[] = [{ collection: CHANGES_COLLECTION, fields: ['at'], expireAfterSeconds: KEPT_MS / 1000 }];

/** What a cache does with an announcement of one of its keys, or with a gap in what it has been told. */
export interface ChangeFollower {
  delete(key: string): void;
  clear(): void;
}

/** How often the service reads the feed (runtime/service.ts): a change is seen about this soon. */
const POLL_MS = 1000;

export class ChangeFeed {
  /** How often every process reads the announcements (`poll`): what a writer waiting to be heard allows for. */
  readonly pollMs = POLL_MS;
  private readonly changes: Collection<ChangeDoc>;
  private readonly clock: StoreClock;
  private readonly followers = new Map<string, ChangeFollower[]>();
  /** Announcements read or made in the last `recentMs`, by id: what they named (`cache\0key`) and when. */
  private readonly seen = new Map<string, { entry: string; at: number }>();
  /** The newest announcement of each `cache\0key` among `seen` (store time). */
  private readonly announced = new Map<string, number>();
  /** When the last successful poll started (host time): every announcement written before it is applied here. */
  private appliedSince = -Infinity;
  /**
   * When the feed was made (host time): what its followers hold was read since, so a first poll soon after is no
   * gap (the announcements it reads cover every change not yet written when they read it).
   */
  private readonly madeAt = Date.now();
  private polling = false;

  private readonly recentMs: number;

  /** `deadlineMs`: how long one store operation may take (MONGODB_DEADLINE_MS), which bounds a change's writes. */
  constructor(store: Store, deadlineMs = 0) {
    this.changes = store.collection<ChangeDoc>(CHANGES_COLLECTION);
    this.clock = store.clock;
    this.recentMs = Math.max(RECENT_MS, WRITES_PER_ANNOUNCEMENT * deadlineMs);
  }

  /** Has `follower` told of every announcement of the cache `name`. */
  follow(name: string, follower: ChangeFollower): void {
    this.followers.set(name, [...(this.followers.get(name) ?? []), follower]);
  }

  /** Tells every instance that the entry `key` of the cache `name` is about to change; before the change is written. */
  async announce(name: string, key: string): Promise<void> {
    const doc: ChangeDoc = { _id: randomUUID(), cache: name, key, at: this.clock.date() };
    await this.changes.insertOne(doc);
    this.apply(doc);
  }

  /** Whether every announcement older than `ms` has been applied here. */
  current(ms: number): boolean {
    return Date.now() - this.appliedSince < ms;
  }

  /** Whether the entry was announced in the last `recentMs` (its change may not be written yet). */
  recent(name: string, key: string): boolean {
    const at = this.announced.get(`${name}\0${key}`);
    return at !== undefined && at > this.clock.now() - this.recentMs;
  }

  /** Reads the announcements of the last `recentMs` and applies those not seen yet (once a second, in the background). */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const started = Date.now();
      const since = this.clock.now() - this.recentMs;
      const docs = await this.changes.find({ at: { $gte: new Date(since) } });
      // Announcements older than what this read covers may have been missed: drop everything.
      if (started - Math.max(this.appliedSince, this.madeAt) > this.recentMs / 2) for (const list of this.followers.values()) for (const f of list) f.clear();
      for (const doc of docs) if (!this.seen.has(doc._id)) this.apply(doc);
      for (const [id, s] of this.seen) {
        if (s.at >= since) continue;
        this.seen.delete(id);
        if (this.announced.get(s.entry) === s.at) this.announced.delete(s.entry);
      }
      this.appliedSince = started;
    } finally {
      this.polling = false;
    }
  }

  /** Deletes announcements nobody reads any more (where the server has no TTL indexes). */
  sweep(): Promise<number> {
    return this.changes.deleteMany({ at: { $lt: new Date(this.clock.now() - KEPT_MS) } });
  }

  private apply(doc: ChangeDoc): void {
    const entry = `${doc.cache}\0${doc.key}`;
    const at = doc.at.getTime();
    this.seen.set(doc._id, { entry, at });
    if ((this.announced.get(entry) ?? -Infinity) < at) this.announced.set(entry, at);
    for (const f of this.followers.get(doc.cache) ?? []) f.delete(doc.key);
  }
}
