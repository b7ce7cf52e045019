// Dashboard sessions: a random id in an HttpOnly cookie, stored only as its SHA-256; an idle and an absolute
// expiry; revoked by logout, by a password change (all the others) and by "sign out everywhere".
// The CSRF token is derived from the session id, so it needs no storage and dies with the session.
import type { StoreClock } from '../store/clock.ts';
import { type Collection, type Doc, type Store, StoreUnavailableError } from '../store/port.ts';
import { randomToken, sha256 } from '../secrets.ts';

export const SESSION_COOKIE = 'ts_session';

export interface SessionDoc extends Doc {
  /** _id is the SHA-256 of the session id. */
  owner_id: string;
  created_at: Date;
  last_seen_at: Date;
  /** min(created + max age, last seen + idle time) */
  expires_at: Date;
}

export interface SessionLimits {
  idleMs: number;
  maxMs: number;
  /** Sessions of one owner at once: a new one beyond it ends the least recently used (a sign-in is never refused for it). */
  perOwner: number;
}

/** Sliding the idle expiry is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;

export const csrfTokenOf = (sessionId: string): string => sha256(`csrf\0${sessionId}`);

export class Sessions {
  private readonly sessions: Collection<SessionDoc>;
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly limits: SessionLimits,
  ) {
    this.sessions = store.collection<SessionDoc>('sessions');
    this.clock = store.clock;
  }

  /** A new session; the id is returned once, for the cookie. */
  async start(ownerId: string): Promise<{ id: string; doc: SessionDoc }> {
    const id = randomToken('', 32);
    const now = this.clock.date();
    const doc: SessionDoc = { _id: sha256(id), owner_id: ownerId, created_at: now, last_seen_at: now, expires_at: this.expiry(now, now) };
    await this.sessions.insertOne(doc);
    await this.endBeyondLimit(ownerId);
    return { id, doc };
  }

  /** The live session for a cookie value (its idle expiry slid forward), or null. */
  async resume(id: string): Promise<SessionDoc | null> {
    const doc = await this.sessions.findOne({ _id: sha256(id) });
    const now = this.clock.date();
    if (!doc) return null;
    if (doc.expires_at <= now) {
      await this.sessions.deleteOne({ _id: doc._id });
      return null;
    }
    if (now.getTime() - doc.last_seen_at.getTime() >= TOUCH_EVERY_MS) {
      const expires_at = this.expiry(doc.created_at, now);
      try {
        await this.sessions.updateOne({ _id: doc._id }, { $set: { last_seen_at: now, expires_at } });
      } catch (err) {
        // Pages stay readable while the store refuses writes: the idle expiry slides at a later request.
        if (err instanceof StoreUnavailableError) return doc;
        throw err;
      }
      return Object.assign({}, doc, { last_seen_at: now, expires_at });
    }
    return doc;
  }

  async end(id: string): Promise<void> {
    await this.sessions.deleteOne({ _id: sha256(id) });
  }

  /** Ends every session of the owner, but the one given (if any). */
  async endAll(ownerId: string, except?: string): Promise<number> {
    return this.sessions.deleteMany(except ? { owner_id: ownerId, _id: { $ne: sha256(except) } } : { owner_id: ownerId });
  }

  /** Deletes expired sessions (they are refused anyway; this keeps the collection small). */
  sweep(): Promise<number> {
    return this.sessions.deleteMany({ expires_at: { $lte: this.clock.date() } });
  }

  /** Ends the owner's least recently used sessions beyond its limit. */
  private async endBeyondLimit(ownerId: string): Promise<void> {
    const count = await this.sessions.countDocuments({ owner_id: ownerId });
    if (count <= this.limits.perOwner) return;
    const oldest = await this.sessions.find({ owner_id: ownerId }, { sort: { last_seen_at: 1, _id: 1 }, limit: count - this.limits.perOwner });
    await this.sessions.deleteMany({ _id: { $in: oldest.map((s) => s._id) } });
  }

  private expiry(created: Date, seen: Date): Date {
    return new Date(Math.min(created.getTime() + this.limits.maxMs, seen.getTime() + this.limits.idleMs));
  }
}
