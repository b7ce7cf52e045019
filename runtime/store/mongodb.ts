// The MongoDB adapter: deliberately thin over the official driver (the port speaks MongoDB's dialect). What it
// adds: the shared dialect checks, string _ids for upserts, DuplicateKeyError, the port's result shapes, the
// connection settings of mongo-options.ts, a deadline on every operation (a store down or too slow fails it
// with StoreUnavailableError, as does every error that says the store cannot be reached), and what keeps
// FerretDB (the test runs' MongoDB-wire peer) to the behaviour of MongoDB or to a clear refusal: upserts
// seeded from the filter explicitly, $pull of a list as $pullAll, the violated unique index found when the
// server does not name it.
import {
  type Collection as DriverCollection,
  type Db,
  type Document,
  type IndexDescription,
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  type WriteConcernSettings,
} from 'mongodb';
import {
  checkCollectionName,
  checkFilter,
  checkUpdate,
  isOperatorObject,
  isPlainObject,
  newId,
  pathsOverlap,
  pinnedUpsertId,
  setPath,
  updatePaths,
  upsertEqualities,
  upsertSeed,
} from './dialect.ts';
import { StoreClock } from './clock.ts';
import { DEFAULT_MONGO_OPTIONS, type MongoOptions, writeConcernFor } from './mongo-options.ts';
import {
  type Collection,
  DialectError,
  type Doc,
  DuplicateKeyError,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type StoreEvents,
  type StoreStatus,
  StoreUnavailableError,
  type Update,
  type UpdateResult,
} from './port.ts';
import { WriteGate } from './write-gate.ts';

const DEFAULT_DB_NAME = 'tool_server';
const DUPLICATE_KEY = 11000;
const INTERNAL_ERROR = 1;
const NAMESPACE_NOT_FOUND = 26;
const INDEX_NOT_FOUND = 27;
const NOT_IMPLEMENTED = 238;
const MAX_TIME_MS_EXPIRED = 50;
const WRITE_CONCERN_FAILED = 64;
/** What a client refused because the store is down or slow is told to wait (Retry-After). */
const OUTAGE_RETRY_AFTER_SECONDS = 5;
/** The driver's own list of errors of a server stepping down, shutting down or not primary: a failover. */
const FAILOVER_CODES = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

type Server = 'mongodb' | 'ferretdb';

export interface MongoStoreOptions extends Partial<MongoOptions>, StoreEvents {
  /** Defaults to the database named in the URL path, else "tool_server". */
  dbName?: string;
  /** How far this host's clock may be from the server's before writes are refused (clock.ts). */
  maxClockOffsetMs?: number;
}

export async function openMongoStore(url: string, options: MongoStoreOptions = {}): Promise<Store> {
  const settings = Object.assign({}, DEFAULT_MONGO_OPTIONS, options);
  const deadline = settings.deadlineMs;
  const client = new MongoClient(url, {
    // An undefined field is left out, as on the embedded store (the driver would store null).
    ignoreUndefined: true,
    // Set here, not left to the URL: a write acknowledged by a majority, journaled, survives a failover; one
    // that a majority does not acknowledge within the deadline fails. (w may be a tag set's name, which the
    // driver's type leaves out.)
    writeConcern: Object.assign({}, writeConcernFor(url, settings.allowWeakWrites), { wtimeoutMS: deadline }) as WriteConcernSettings,
    // Every read from the primary: what a write just acknowledged is what the next read sees (a charge, a
    // revocation), whatever the URL says.
    readPreference: 'primary',
    maxPoolSize: settings.poolSize,
    // Each stage of an operation waits at most the deadline (the driver's timeoutMS, which would bound them
    // all, is a no-op from driver 7.8 on); the adapter's own deadline bounds their sum (MongoCollection.run).
    serverSelectionTimeoutMS: deadline,
    waitQueueTimeoutMS: deadline,
    connectTimeoutMS: deadline,
    socketTimeoutMS: settings.socketTimeoutMs,
    retryReads: true,
    retryWrites: true,
  });
  await client.connect();
  const db = client.db(options.dbName ?? dbNameFromUrl(url) ?? DEFAULT_DB_NAME);
  let server: Server;
  // The server's own time (the primary's, where writes go): the clock every instance reads.
  const clock = new StoreClock(async () => (await db.admin().command({ hello: 1 })).localTime as Date, options.maxClockOffsetMs);
  try {
    server = await serverOf(db);
    await clock.measure();
  } catch (error) {
    await client.close();
    throw error;
  }
  const shared: Shared = {
    server,
    deadlineMs: deadline,
    gate: new WriteGate(),
    outages: new OutageWatch(options),
    indexFieldsByName: new Map(),
    ttlIndexes: server === 'mongodb',
  };
  /** The ping under way for status(): one at a time, whoever asks. */
  let probe: Promise<StoreStatus> | undefined;

  return {
    kind: 'mongodb',
    mongo: { client, dbName: db.databaseName, server },
    clock,
    collection<T extends Doc>(name: string): Collection<T> {
      checkCollectionName(name);
      return new MongoCollection(name, db.collection<Doc>(name), shared) as unknown as Collection<T>;
    },
    async ensureIndexes(specs: IndexSpec[]) {
      const byCollection = new Map<string, IndexSpec[]>();
      for (const spec of specs) {
        checkCollectionName(spec.collection);
        byCollection.set(spec.collection, [...(byCollection.get(spec.collection) ?? []), spec]);
      }
      await Promise.all([...byCollection].map(([name, list]) => ensureCollectionIndexes(db.collection(name), list, shared)));
    },
    async status(withinMs: number): Promise<StoreStatus> {
      const refused = shared.gate.status();
      if (!refused.ok) return refused;
      probe ??= withDeadline(db.command({ ping: 1 }), shared)
        .then((): StoreStatus => ({ ok: true }))
        .catch((error: unknown) => ({ ok: false, reason: (error as Error).message, retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS }))
        .finally(() => (probe = undefined));
      const late: StoreStatus = { ok: false, reason: `the store did not answer a ping within ${withinMs} ms`, retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS };
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([probe, new Promise<StoreStatus>((resolve) => (timer = setTimeout(() => resolve(late), withinMs)))]).finally(() =>
        clearTimeout(timer),
      );
    },
    refuseWrites: (source, reason, retryAfterSeconds) => shared.gate.refuse(source, reason, retryAfterSeconds),
    allowWrites: (source) => shared.gate.allow(source),
    close: () => client.close(),
  };
}

interface Shared {
  server: Server;
  /** No operation takes longer (mongo-options.ts); also the server-side maxTimeMS of reads. */
  deadlineMs: number;
  gate: WriteGate;
  outages: OutageWatch;
  /** "<collection>/<index name>" -> fields, to name the fields when an error lacks keyPattern. */
  indexFieldsByName: Map<string, string[]>;
  /** False on servers without TTL indexes (FerretDB): a plain index is built instead. */
  ttlIndexes: boolean;
}

/** FerretDB answers buildInfo with a ferretdbVersion of its own. */
async function serverOf(db: Db): Promise<Server> {
  const info = await db.admin().command({ buildInfo: 1 });
  return 'ferretdbVersion' in info ? 'ferretdb' : 'mongodb';
}

/**
 * Builds only what is missing: one listIndexes, then an index is created, or its TTL changed, only when it
 * differs from the spec (N instances starting together do not each rebuild every index); a retired one that
 * exists is dropped.
 */
async function ensureCollectionIndexes(driver: DriverCollection, specs: IndexSpec[], shared: Shared): Promise<void> {
  const existing = await driver
    .listIndexes()
    .toArray()
    .catch((error: unknown) => {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return [] as Document[];
      throw error;
    });
  for (const spec of specs) {
    const { fields, unique = false } = spec;
    const keys = Object.fromEntries(fields.map((field) => [field, 1 as const]));
    const found = existing.find((index) => JSON.stringify(index.key) === JSON.stringify(keys));
    // Retired, or the embedded store's only: dropped where an earlier version built it.
    if (spec.retired || spec.mongodb === false) {
      if (found) await dropIndex(driver, found.name as string);
      continue;
    }
    const ttl = shared.ttlIndexes ? spec.expireAfterSeconds : undefined;
    if (found && Boolean(found.unique) !== unique) {
      throw new Error(
        `index ${found.name} of collection ${driver.collectionName} is ${unique ? 'not ' : ''}unique, the service needs it ${unique ? '' : 'not '}unique: ` +
          'drop it (db.collection.dropIndex) and start again',
      );
    }
    if (found && found.expireAfterSeconds === ttl) {
      shared.indexFieldsByName.set(`${driver.collectionName}/${found.name}`, fields);
      continue;
    }
    if (found) {
      // Only the TTL differs (a plain index becoming a TTL index, or another expiry): rebuilt, which every
      // MongoDB version can do; a non-unique index, so nothing is at risk meanwhile. Another instance may
      // be doing the same.
      await dropIndex(driver, found.name as string);
    }
    const name = await createIndex(driver, spec, keys, ttl, shared);
    shared.indexFieldsByName.set(`${driver.collectionName}/${name}`, fields);
  }
}

/** Drops an index; gone already is fine (another instance starting at the same time). */
async function dropIndex(driver: DriverCollection, name: string): Promise<void> {
  await driver.dropIndex(name).catch((error: unknown) => {
    if (!(error instanceof MongoServerError && error.code === INDEX_NOT_FOUND)) throw error;
  });
}

async function createIndex(driver: DriverCollection, spec: IndexSpec, keys: Record<string, 1>, ttl: number | undefined, shared: Shared): Promise<string> {
  const options: Omit<IndexDescription, 'key'> = { unique: spec.unique ?? false, sparse: spec.sparse ?? false };
  try {
    return await driver.createIndex(keys, ttl === undefined ? options : Object.assign({}, options, { expireAfterSeconds: ttl }));
  } catch (error) {
    if (ttl !== undefined && error instanceof MongoServerError && error.code === NOT_IMPLEMENTED) {
      shared.ttlIndexes = false; // a server without TTL indexes that did not say so in buildInfo
      return createIndex(driver, spec, keys, undefined, shared);
    }
    if (isDuplicateKey(error)) {
      throw new DuplicateKeyError(driver.collectionName, spec.fields, { cause: error });
    }
    throw error;
  }
}

/** What was being written when a unique index refused it: the documents, and whether they were inserted. */
type Written = () => Promise<{ docs: Doc[]; inserting: boolean }>;

class MongoCollection implements Collection<Doc> {
  constructor(
    private readonly name: string,
    private readonly driver: DriverCollection<Doc>,
    private readonly shared: Shared,
  ) {}

  async insertOne(doc: Doc): Promise<void> {
    await this.write(
      () => this.driver.insertOne(doc),
      async () => ({ docs: [doc], inserting: true }),
    );
  }

  async insertMany(docs: Doc[]): Promise<void> {
    if (docs.length === 0) return; // the driver rejects an empty batch
    await this.write(
      () => this.driver.insertMany(docs),
      async (error) => ({ docs: [docs[failedIndex(error) ?? 0]!], inserting: true }),
    );
  }

  async findOne(filter: Filter): Promise<Doc | null> {
    checkFilter(filter);
    return (await this.read(() => this.driver.findOne(filter, { maxTimeMS: this.shared.deadlineMs }))) as Doc | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    checkFilter(filter);
    return (await this.read(() => this.driver.find(filter, Object.assign({}, options, { maxTimeMS: this.shared.deadlineMs })).toArray())) as Doc[];
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkFilter(filter);
    return this.read(() => this.driver.countDocuments(filter, { maxTimeMS: this.shared.deadlineMs }));
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}) {
    const upsert = options.upsert ?? false;
    const sent = this.checked(filter, update, upsert);
    const result = await this.write(
      () => this.driver.updateOne(filter, sent, { upsert }),
      () => this.updated(filter, sent),
    );
    return { matched: result.matchedCount, modified: result.modifiedCount, upserted: result.upsertedCount > 0 };
  }

  async updateMany(filter: Filter, update: Update) {
    const sent = this.checked(filter, update, false);
    const result = await this.write(() => this.driver.updateMany(filter, sent));
    return { matched: result.matchedCount, modified: result.modifiedCount };
  }

  async bulkUpdate(updates: Array<{ filter: Filter; update: Update }>): Promise<UpdateResult> {
    if (updates.length === 0) return { matched: 0, modified: 0 };
    const operations = updates.map(({ filter, update }) => ({ updateOne: { filter, update: this.checked(filter, update, false) } }));
    const result = await this.write(() => this.driver.bulkWrite(operations, { ordered: false }));
    return { matched: result.matchedCount, modified: result.modifiedCount };
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {}) {
    const upsert = options.upsert ?? false;
    const returnDocument = options.returnDocument ?? 'after'; // the port's default; the driver's is 'before'
    const sent = this.checked(filter, update, upsert);
    return (await this.write(
      () => this.driver.findOneAndUpdate(filter, sent, { upsert, returnDocument }),
      () => this.updated(filter, sent),
    )) as Doc | null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    checkFilter(filter);
    return (await this.write(() => this.driver.deleteOne(filter))).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    checkFilter(filter);
    return (await this.write(() => this.driver.deleteMany(filter))).deletedCount;
  }

  /** Checks filter and update, and writes the update as every server understands it (see the file's top). */
  private checked(filter: Filter, update: Update, upsert: boolean): Document {
    checkFilter(filter);
    checkUpdate(update);
    const sent: Document = update.$pull ? this.withPulls(update) : { ...update };
    if (!upsert) return sent;
    // MongoDB seeds an upsert with the filter's equalities, FerretDB only with those at the top level: set
    // them on insert explicitly (those the update does not write itself), so both build the same document.
    const written = updatePaths(update);
    const seeded: Record<string, unknown> = {};
    for (const [path, value] of upsertEqualities(filter)) {
      if (path === '_id' || written.some((other) => pathsOverlap(path, other)) || Object.keys(seeded).some((other) => pathsOverlap(path, other))) continue;
      seeded[path] = value;
    }
    // An upsert that pins no _id gets a generated string one (not an ObjectId).
    if (pinnedUpsertId(filter, update) === undefined) seeded._id = newId();
    if (Object.keys(seeded).length > 0) sent.$setOnInsert = Object.assign({}, update.$setOnInsert, seeded);
    return sent;
  }

  /**
   * $pull of { $in: [values] } goes as $pullAll (the same on MongoDB; FerretDB implements only the latter). A
   * condition or sub-document filter, which FerretDB would silently ignore, is refused there.
   */
  private withPulls(update: Update): Document {
    const { $pull, ...others } = update;
    const pull: Record<string, unknown> = {};
    const pullAll: Record<string, unknown[]> = {};
    for (const [path, condition] of Object.entries($pull!)) {
      const values = isOperatorObject(condition) && Object.keys(condition).join() === '$in' ? (condition.$in as unknown[]) : undefined;
      if (values && values.every((value) => !isPlainObject(value) && !Array.isArray(value))) pullAll[path] = values;
      else if (this.shared.server === 'ferretdb' && isPlainObject(condition)) {
        throw new DialectError(
          `$pull with a condition or a sub-document filter (${path}) is not implemented by FerretDB, which would remove nothing; pull exact values`,
        );
      } else pull[path] = condition;
    }
    return Object.assign(
      {},
      others,
      Object.keys(pull).length > 0 ? { $pull: pull } : undefined,
      Object.keys(pullAll).length > 0 ? { $pullAll: pullAll } : undefined,
    );
  }

  /** The document an update or upsert that failed on a unique index was about to write (its $set applied). */
  private async updated(filter: Filter, sent: Document): Promise<{ docs: Doc[]; inserting: boolean }> {
    const current = await this.driver.findOne(filter);
    const doc = structuredClone(current ?? (Object.assign({}, upsertSeed(filter), sent.$setOnInsert as object) as Doc));
    for (const [path, value] of Object.entries((sent.$set ?? {}) as Record<string, unknown>)) setPath(doc, path, value);
    return { docs: [doc], inserting: current === null };
  }

  private read<R>(task: () => Promise<R>): Promise<R> {
    return withDeadline(task(), this.shared);
  }

  /** A write: refused while the service refuses writes (Store.refuseWrites), within the deadline, its unique-index errors named. */
  private async write<R>(task: () => Promise<R>, written?: (error: unknown) => ReturnType<Written>): Promise<R> {
    this.shared.gate.check();
    try {
      return await withDeadline(task(), this.shared);
    } catch (error) {
      const duplicate = toDuplicateKeyError(error, this.name, this.shared.indexFieldsByName);
      if (!duplicate) throw error;
      if (duplicate.fields.length === 0 && written) {
        const fields = await this.violatedIndex(await written(error)).catch(() => []);
        if (fields.length > 0) throw new DuplicateKeyError(this.name, fields, { cause: error });
      }
      throw duplicate;
    }
  }

  /**
   * For servers whose duplicate-key errors name no index (FerretDB): the unique index under which another
   * document already holds the written values. Asked after the fact, so a best effort ([] when unsure).
   */
  private async violatedIndex({ docs, inserting }: Awaited<ReturnType<Written>>): Promise<string[]> {
    const exists = async (filter: Filter) => (await this.driver.countDocuments(filter, { limit: 1, maxTimeMS: this.shared.deadlineMs })) > 0;
    const unique = (await this.driver.listIndexes().toArray()).filter((index) => index.unique).map((index) => Object.keys(index.key));
    for (const doc of docs) {
      if (inserting && (await exists({ _id: doc._id }))) return ['_id'];
      for (const fields of unique) {
        const values = fields.map((field) => field.split('.').reduce<unknown>((node, part) => (isPlainObject(node) ? node[part] : undefined), doc));
        if (values.some((value) => value === undefined)) continue;
        if (await exists(Object.assign(Object.fromEntries(fields.map((field, i) => [field, values[i]])), { _id: { $ne: doc._id } }))) return fields;
      }
    }
    return [];
  }
}

/**
 * The operation's result, or StoreUnavailableError once `deadlineMs` has passed (the driver's operation goes
 * on unobserved: a write may still be applied) or when the driver says the store cannot be reached.
 */
async function withDeadline<R>(operation: Promise<R>, { deadlineMs, outages }: Pick<Shared, 'deadlineMs' | 'outages'>): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(`the store did not answer within ${deadlineMs} ms`, OUTAGE_RETRY_AFTER_SECONDS)), deadlineMs);
  });
  try {
    const result = await Promise.race([operation, expired]);
    outages.answered();
    return result;
  } catch (error) {
    const outage = outageOf(error, deadlineMs);
    if (!outage) throw error;
    outages.failed(outage);
    throw outage;
  } finally {
    clearTimeout(timer);
    operation.catch(() => undefined); // given up: its own failure is nobody's any more
  }
}

/** Tells the store's events once when operations start failing for an outage, and once when one is answered again. */
class OutageWatch {
  private since: number | undefined;

  constructor(private readonly events: StoreEvents) {}

  failed(outage: StoreUnavailableError): void {
    if (this.since !== undefined) return;
    this.since = Date.now();
    this.events.onUnavailable?.(outage.message, outage.cause ?? outage);
  }

  answered(): void {
    if (this.since === undefined) return;
    const unavailableForMs = Date.now() - this.since;
    this.since = undefined;
    this.events.onAvailable?.(unavailableForMs);
  }
}

/** StoreUnavailableError for a driver error that says the store is down, too slow or failing over; undefined for any other. */
function outageOf(error: unknown, deadlineMs: number): StoreUnavailableError | undefined {
  if (error instanceof StoreUnavailableError) return error;
  if (!(error instanceof MongoError)) return undefined;
  // The driver's own words (addresses, server names) stay in the cause, for the log: clients read the message.
  const outage = (what: string, transient = false) => new StoreUnavailableError(what, OUTAGE_RETRY_AFTER_SECONDS, transient, { cause: error });
  if (error instanceof MongoServerSelectionError) return outage(`no usable store server within ${deadlineMs} ms`);
  if (error instanceof MongoNetworkTimeoutError) return outage('the store did not answer in time');
  if (error instanceof MongoNetworkError) return outage('the connection to the store was lost', true);
  // A bulk write reports the driver's own failure (a connection refused) wrapped, with no write error of its own.
  if (error instanceof MongoBulkWriteError && error.code === undefined && [error.writeErrors].flat().length === 0) {
    return outage('the store could not be reached');
  }
  if (error.name === 'WaitQueueTimeoutError') return outage(`no connection to the store was free within ${deadlineMs} ms`);
  if (error.code === MAX_TIME_MS_EXPIRED) return outage(`the store did not finish within ${deadlineMs} ms`);
  const concern = (error as { errInfo?: { wtimeout?: boolean } }).errInfo?.wtimeout || error.code === WRITE_CONCERN_FAILED;
  if (concern) return outage(`a majority of the store did not acknowledge the write within ${deadlineMs} ms`);
  if (error.hasErrorLabel('RetryableWriteError') || (typeof error.code === 'number' && FAILOVER_CODES.has(error.code))) {
    return outage('the store is failing over', true);
  }
  return undefined;
}

/**
 * A DuplicateKeyError for a driver error carrying E11000, naming the index fields from the error's
 * keyPattern, else from the index name in its message; undefined for any other error.
 */
export function toDuplicateKeyError(
  error: unknown,
  collection: string,
  indexFieldsByName: ReadonlyMap<string, string[]> = new Map(),
): DuplicateKeyError | undefined {
  if (!isDuplicateKey(error)) return undefined;
  const details = firstWriteError(error) ?? error;
  const keyPattern = (details.keyPattern ?? error.keyPattern) as Record<string, unknown> | undefined;
  const indexName = /index: (\S+) dup key/.exec(String(details.errmsg ?? error.message))?.[1];
  const fields = keyPattern
    ? Object.keys(keyPattern)
    : (indexName && indexFieldsByName.get(`${collection}/${indexName}`)) || (indexName === '_id_' ? ['_id'] : []);
  return new DuplicateKeyError(collection, fields, { cause: error });
}

/**
 * E11000 from a single write (MongoServerError) or from a bulk write (MongoBulkWriteError, a subclass); or,
 * from FerretDB, the internal error of SQLite's unique index that an update or an index build gets instead.
 */
function isDuplicateKey(error: unknown): error is MongoServerError {
  if (!(error instanceof MongoServerError)) return false;
  const first = firstWriteError(error);
  const says = (code: unknown, message: unknown) => code === DUPLICATE_KEY || (code === INTERNAL_ERROR && /UNIQUE constraint failed/.test(String(message)));
  return says(error.code, error.message) || (first !== undefined && says(first.code, first.errmsg));
}

function firstWriteError(error: MongoServerError): Record<string, unknown> | undefined {
  const writeErrors: unknown = (error as { writeErrors?: unknown }).writeErrors;
  const first: unknown = Array.isArray(writeErrors) ? writeErrors[0] : writeErrors;
  if (typeof first !== 'object' || first === null) return undefined;
  // The driver's WriteError wraps the server's raw error in `err`.
  const raw = (first as { err?: unknown }).err;
  return (typeof raw === 'object' && raw !== null ? raw : first) as Record<string, unknown>;
}

/** Which document of an insertMany failed. */
function failedIndex(error: unknown): number | undefined {
  if (!(error instanceof MongoBulkWriteError)) return undefined;
  const first = (Array.isArray(error.writeErrors) ? error.writeErrors[0] : error.writeErrors) as { index?: unknown } | undefined;
  return typeof first?.index === 'number' ? first.index : undefined;
}

function dbNameFromUrl(url: string): string | undefined {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]+)/.exec(url)?.[1];
  return path ? decodeURIComponent(path) : undefined;
}
