/**
 * The store port: a small document-store interface written in MongoDB's query and update dialect, so the
 * same repository code runs on the embedded adapter (@seald-io/nedb) and on MongoDB (official driver).
 *
 * The dialect is deliberately a subset; both adapters reject anything outside it with a DialectError, so
 * code that passes the tests on one adapter cannot quietly depend on a feature the other lacks.
 *
 * Filters
 *   { field: value }                      equality; on an array field it matches when any element equals value;
 *                                         an array value matches the whole array exactly
 *   { 'a.b': value }                      dotted paths into sub-documents
 *   { field: null }                       matches null AND missing fields (MongoDB semantics, on both adapters)
 *   { field: { $eq | $ne: v } }           $ne on an array field: no element equals v (also matches missing fields)
 *   { field: { $in | $nin: [..] } }       null in the list also matches missing fields
 *   { field: { $gt | $gte | $lt | $lte: v } }  numbers with numbers, strings with strings, dates with dates
 *   { field: { $exists: true | false } }
 *   { $or: [filters] }, { $and: [filters] }  (non-empty lists)
 *   Several operators on one field are ANDed: { balance: { $gte: 2, $lt: 10 } }.
 *
 * Updates (operator documents only; no whole-document replacement)
 *   $set, $unset, $inc, $min, $max            dotted paths allowed; $inc on a missing field sets it
 *   $push, $addToSet                          a value, or { $each: [values] }
 *   $pull                                     a value, or { $in: [values] }: elements equal to one of them;
 *                                             pulling from a missing field is a no-op. Also a condition or a
 *                                             sub-document filter ({ id: 'c1' }, { qty: { $lt: 2 } }) on MongoDB
 *                                             and the embedded store, but not on FerretDB (there the adapter
 *                                             refuses it with a DialectError): new code pulls exact values.
 *   $setOnInsert                              applied only when an upsert inserts
 *   One path may appear in only one operator (MongoDB rejects conflicts; so do we, on both adapters).
 *
 * Upserts build the new document like MongoDB: the equality conditions of the filter (top level, inside
 * $and, $eq) plus the update. `_id` is always a string: taken from the filter or $setOnInsert, otherwise
 * generated (a UUID) by the adapter, never an ObjectId.
 *
 * Atomicity: every single call is atomic on one document (updateOne/findOneAndUpdate test-and-set, e.g.
 * `findOneAndUpdate({ _id, balance: { $gte: 2 } }, { $inc: { balance: -2 } })` never overdraws).
 * updateMany/deleteMany/insertMany are not transactions: on an error some documents may already be written.
 *
 * Known differences kept on purpose (avoid relying on them):
 *   - unique indexes: on MongoDB a missing field and null collide; on the embedded store only two missing
 *     fields (or two nulls) collide; on FerretDB neither do. Use `sparse: true` or always set the field.
 *   - TTL indexes (IndexSpec.expireAfterSeconds) expire documents on MongoDB only: the embedded store and
 *     FerretDB build a plain index, so whatever expires is also deleted by a sweep of the code's own.
 *   - sub-document equality is key-order sensitive on MongoDB and not on the embedded store.
 *   - insertMany failing on a duplicate: MongoDB keeps the documents before the failing one, the embedded
 *     store keeps none.
 *   - find() with a projection returns partial documents although typed as T.
 */

import type { StoreClock } from './clock.ts';

export type Doc = { _id: string } & Record<string, unknown>;

export interface FieldOperators {
  $eq?: unknown;
  $ne?: unknown;
  $in?: unknown[];
  $nin?: unknown[];
  $gt?: unknown;
  $gte?: unknown;
  $lt?: unknown;
  $lte?: unknown;
  $exists?: boolean;
}

/** Field paths (possibly dotted) map to a value or to FieldOperators; $or/$and combine filters. */
export interface Filter {
  $or?: Filter[];
  $and?: Filter[];
  [path: string]: unknown;
}

type PathValues<V> = Record<string, V>;

export interface Update {
  $set?: PathValues<unknown>;
  $unset?: PathValues<'' | 1 | true>;
  $inc?: PathValues<number>;
  $min?: PathValues<number | string | Date>;
  $max?: PathValues<number | string | Date>;
  $push?: PathValues<unknown>;
  $addToSet?: PathValues<unknown>;
  $pull?: PathValues<unknown>;
  $setOnInsert?: PathValues<unknown>;
}

export interface FindOptions {
  sort?: Record<string, 1 | -1>;
  limit?: number;
  skip?: number;
  projection?: Record<string, 0 | 1>;
}

export interface UpdateResult {
  matched: number;
  modified: number;
}

export interface Collection<T extends Doc> {
  /** Throws DuplicateKeyError on a unique-index violation (including a duplicate _id). */
  insertOne(doc: T): Promise<void>;
  insertMany(docs: T[]): Promise<void>;
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  countDocuments(filter: Filter): Promise<number>;
  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult & { upserted: boolean }>;
  updateMany(filter: Filter, update: Update): Promise<UpdateResult>;
  /**
   * Many single-document updates (each as updateOne, no upsert) sent together: one round trip on MongoDB (an
   * unordered bulk write). Not a transaction: after an error some may be applied. Returns the totals.
   */
  bulkUpdate(updates: Array<{ filter: Filter; update: Update }>): Promise<UpdateResult>;
  /**
   * Atomically updates the first matching document. Returns the document after the update by default
   * (unlike MongoDB's own default), or before it with `returnDocument: 'before'` (null when it was upserted);
   * null when nothing matched and nothing was upserted.
   */
  findOneAndUpdate(filter: Filter, update: Update, options?: { upsert?: boolean; returnDocument?: 'before' | 'after' }): Promise<T | null>;
  /** Returns the number of documents deleted. */
  deleteOne(filter: Filter): Promise<number>;
  deleteMany(filter: Filter): Promise<number>;
}

export interface IndexSpec {
  collection: string;
  /** Ascending fields (dotted paths allowed); more than one makes a compound index. */
  fields: string[];
  unique?: boolean;
  /** Documents that have none of the fields are left out of the index (so they never collide). */
  sparse?: boolean;
  /**
   * A TTL index (one Date field): MongoDB deletes a document this many seconds after the field's time (0: at
   * that time), within about a minute. Ignored where TTL indexes do not exist (embedded store, FerretDB).
   */
  expireAfterSeconds?: number;
  /**
   * false: built on MongoDB only. The embedded store holds every document in memory and scans them for a find
   * of several conditions; an index there would only cost every insert (a compound one about 25 µs a record).
   */
  embedded?: false;
  /**
   * false: built on the embedded store only (dropped on MongoDB), for a find whose MongoDB index is compound:
   * nedb walks only a single field's index in order (indexWalk in embedded.ts).
   */
  mongodb?: false;
  /** An index the service no longer uses: dropped wherever it exists (each index costs every write). */
  retired?: true;
}

/**
 * What a store tells the log, once each: that it cannot take writes (why; the embedded store after a failed
 * append, MongoDB at the first operation an outage fails) and that it takes them again.
 */
export interface StoreEvents {
  onUnavailable?: (reason: string, error: unknown) => void;
  onAvailable?: (unavailableForMs: number) => void;
}

/** What Store.status says: the store takes writes, or why it does not and when to ask again. */
export type StoreStatus = { ok: true } | { ok: false; reason: string; retryAfterSeconds: number };

export interface Store {
  readonly kind: 'embedded' | 'mongodb';
  /**
   * The driver's client, on the MongoDB adapter only (shared rate-limit counters live there too), and which
   * server answers: MongoDB itself, or FerretDB (the test runs' peer; see README for what it lacks).
   */
  readonly mongo?: { client: unknown; dbName: string; server: 'mongodb' | 'ferretdb' };
  /** The store's time, which every decision reads instead of the host's clock (clock.ts); measured at open. */
  readonly clock: StoreClock;
  /** Collection names: a letter, then letters, digits, '_' or '-'. */
  collection<T extends Doc>(name: string): Collection<T>;
  /**
   * Idempotent, and cheap when nothing changed (MongoDB: one listIndexes per collection, then only what is
   * missing is built, and what is retired dropped); throws DuplicateKeyError when existing documents violate
   * a new unique index.
   */
  ensureIndexes(specs: IndexSpec[]): Promise<void>;
  /**
   * Whether the store takes writes now, known within `withinMs`: the embedded store says what it knows (a
   * failed write stops it), MongoDB answers a ping (no answer in time: not ok).
   */
  status(withinMs: number): Promise<StoreStatus>;
  /**
   * Refuses every write with StoreUnavailableError(reason) until allowWrites(source) (reads go on): for what
   * the service itself finds unsafe. Several sources may refuse at once; the store also refuses on its own
   * (a full disk) and then allows again itself.
   */
  refuseWrites(source: string, reason: string, retryAfterSeconds: number): void;
  allowWrites(source: string): void;
  close(): Promise<void>;
}

/**
 * The store cannot take an operation now: it refuses writes (a full disk, see refuseWrites), or it did not
 * answer within its deadline, or it cannot be reached. Nothing of a refused write is kept; a write that timed
 * out or lost its connection may still be applied by the server. The service answers 503 with Retry-After.
 */
export class StoreUnavailableError extends Error {
  override readonly name: string = 'StoreUnavailableError';
  constructor(
    message: string,
    /** When asking again may succeed (Retry-After). */
    readonly retryAfterSeconds: number,
    /** Repeating the operation at once may succeed (a connection lost, a failover under way), unlike a refusal or a deadline. */
    readonly transient = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
  constructor(
    readonly collection: string,
    /** Fields of the violated unique index; empty when the adapter could not tell which index. */
    readonly fields: string[],
    options?: { cause?: unknown },
  ) {
    super(`duplicate key in collection "${collection}" on unique index (${fields.join(', ') || 'unknown'})`, options);
  }
}

/** A filter or update outside the supported dialect (see the top of this file). */
export class DialectError extends Error {
  override readonly name = 'DialectError';
}
