// End users: the people an owner's own product serves, known to this service by the owner's id for each
// (`external_id`, unique per owner). An end user holds accounts of their own (connected through a connect link,
// runtime/accounts/connect-sessions.ts) and API keys that act as them; credits stay the owner's.
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { DuplicateKeyError } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import type { CreditLimit } from './restrictions.ts';

export interface EndUserDoc extends Doc {
  owner_id: string;
  /** The owner's own id for the person (unique per owner). */
  external_id: string;
  display_name: string | null;
  email: string | null;
  /** The credits the person's calls may spend a UTC day or month, whichever key makes them (absent: no limit). */
  credit_limit?: CreditLimit;
  created_at: Date;
}

export interface EndUserInput {
  external_id: string;
  display_name?: string | null;
  email?: string | null;
  credit_limit?: CreditLimit | null;
}

/** A page of an owner's end users, newest first; `next_cursor` continues it. */
export interface EndUserPage {
  items: EndUserDoc[];
  next_cursor: string | null;
}

export const MAX_EXTERNAL_ID = 200;

/** An end user with this external_id exists already. */
export class DuplicateEndUserError extends Error {
  constructor(readonly externalId: string) {
    super(`An end user with "external_id" ${JSON.stringify(externalId)} exists already: external ids are unique per owner`);
  }
}

export function publicEndUser(doc: EndUserDoc): Record<string, unknown> {
  return {
    id: doc._id,
    external_id: doc.external_id,
    display_name: doc.display_name,
    email: doc.email,
    credit_limit: doc.credit_limit ?? null,
    created_at: doc.created_at,
  };
}

/** Where a page stops: the newest-first position of its last item (creation time, then id). */
const cursorOf = (doc: EndUserDoc) => Buffer.from(`${doc.created_at.getTime()}:${doc._id}`).toString('base64url');
function positionOf(cursor: string): { at: number; id: string } | null {
  const m = /^(\d+):(eu_[A-Za-z0-9]+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? { at: Number(m[1]), id: m[2] } : null;
}
const newestFirst = (a: EndUserDoc, b: EndUserDoc) => b.created_at.getTime() - a.created_at.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0);

export class EndUsers {
  private readonly endUsers: Collection<EndUserDoc>;
  private readonly clock: StoreClock;

  constructor(store: Store) {
    this.endUsers = store.collection<EndUserDoc>('end_users');
    this.clock = store.clock;
  }

  async create(ownerId: string, input: EndUserInput): Promise<EndUserDoc> {
    const doc: EndUserDoc = {
      _id: randomId('eu_'),
      owner_id: ownerId,
      external_id: input.external_id,
      display_name: input.display_name ?? null,
      email: input.email ?? null,
      ...(input.credit_limit ? { credit_limit: input.credit_limit } : {}),
      // The store's time: the list's order (and its cursors) is the same whichever instance made each one.
      created_at: this.clock.date(),
    };
    try {
      await this.endUsers.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new DuplicateEndUserError(input.external_id);
      throw err;
    }
    return doc;
  }

  get(ownerId: string, id: string): Promise<EndUserDoc | null> {
    return this.endUsers.findOne({ _id: id, owner_id: ownerId });
  }

  /** Any owner's end user by id, read from the store each time: a deleted end user stops calling at once, on every instance. */
  byId(id: string): Promise<EndUserDoc | null> {
    return this.endUsers.findOne({ _id: id });
  }

  byExternalId(ownerId: string, externalId: string): Promise<EndUserDoc | null> {
    return this.endUsers.findOne({ owner_id: ownerId, external_id: externalId });
  }

  count(ownerId: string): Promise<number> {
    return this.endUsers.countDocuments({ owner_id: ownerId });
  }

  /**
   * A page of the owner's end users, newest first; `q` keeps those whose external id, name or e-mail contains
   * it (any case). An owner's end users are bounded by its quota, so the page is cut from all of them.
   */
  async list(ownerId: string, page: { q?: string; limit: number; cursor?: string }): Promise<EndUserPage | null> {
    const after = page.cursor === undefined ? undefined : positionOf(page.cursor);
    if (after === null) return null;
    const q = page.q?.toLowerCase();
    const all = (await this.endUsers.find({ owner_id: ownerId })).sort(newestFirst);
    const matching = all.filter(
      (u) =>
        (!q || [u.external_id, u.display_name, u.email].some((v) => v?.toLowerCase().includes(q))) &&
        (!after || u.created_at.getTime() < after.at || (u.created_at.getTime() === after.at && u._id < after.id)),
    );
    const items = matching.slice(0, page.limit);
    return { items, next_cursor: matching.length > page.limit ? cursorOf(items[items.length - 1]) : null };
  }

  /** Changes a person's name, address or limit (null: none); the end user as it is now, or null. */
  update(ownerId: string, id: string, change: Omit<Partial<EndUserInput>, 'external_id'>): Promise<EndUserDoc | null> {
    const set: Record<string, unknown> = {};
    const unset: Record<string, ''> = {};
    if (change.display_name !== undefined) set.display_name = change.display_name;
    if (change.email !== undefined) set.email = change.email;
    if (change.credit_limit === null) unset.credit_limit = '';
    else if (change.credit_limit !== undefined) set.credit_limit = change.credit_limit;
    return this.endUsers.findOneAndUpdate(
      { _id: id, owner_id: ownerId },
      Object.assign({}, Object.keys(set).length ? { $set: set } : undefined, Object.keys(unset).length ? { $unset: unset } : undefined),
    );
  }

  async delete(ownerId: string, id: string): Promise<boolean> {
    return (await this.endUsers.deleteOne({ _id: id, owner_id: ownerId })) > 0;
  }
}
