// The embedded adapter: one @seald-io/nedb Datastore per collection, in memory or in <dir>/<collection>.db.
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import nedb from '@seald-io/nedb';
import { lockDataDir } from './dir-lock.ts';
import { closeDataFile } from './nedb-files.ts';
import { checkCollectionName, checkFilter, checkUpdate, isOperatorObject, newId, upsertSeed } from './dialect.ts';
import {
  type Collection,
  type Doc,
  DuplicateKeyError,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
  type UpdateResult,
} from './port.ts';

// The package's typings declare an ES default export, but at run time the CommonJS module itself is the class.
const Datastore = nedb as unknown as typeof nedb.default;
type Datastore = InstanceType<typeof Datastore>;

// nedb's own document functions (lib/model.js, absent from its typings): we apply update operators with
// the very code nedb uses, so that upserts and the "modified" count can be computed before writing.
const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
  modify(doc: object, update: object): Doc;
  match(doc: object, query: object): boolean;
  deepCopy<T>(doc: T): T;
  checkObject(doc: unknown): void;
  getDotValue(doc: object, path: string): unknown;
  areThingsEqual(a: unknown, b: unknown): boolean;
};

type NedbQuery = Record<string, unknown>;

/**
 * The datastore's own documents for a query, found through its indexes: not copies, so read them only.
 * (nedb's internal step before matching; we use no TTL indexes, so it has nothing to expire.)
 */
const candidatesOf = (db: Datastore, query: NedbQuery) => (db as unknown as NedbInternals)._getRawCandidates(query);

/** The steps of nedb's own update that we take ourselves (package pinned: lib/datastore.js of 4.1.2). */
interface NedbInternals {
  _getRawCandidates(query: NedbQuery): Doc[];
  _updateIndexes(oldDoc: Doc, newDoc: Doc): void;
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  /** By name: the sorted fields joined by commas. */
  indexes: Record<string, unknown>;
  persistence: { persistNewStateAsync(docs: Doc[]): Promise<void> };
}

export interface EmbeddedStoreOptions {
  /**
   * Folder for the data files (created with mode 0700); in memory when absent. One process at a time: a
   * second open of the folder, in this process or another, throws DataDirLockedError (see dir-lock.ts).
   */
  dir?: string;
  /** How often data files are rewritten without their superseded lines. Default 10 minutes, at least 1 s. */
  compactionIntervalMs?: number;
  /** Called when a periodic compaction fails (the next one retries). Default: a process warning. */
  onCompactionError?: (error: unknown, collection: string) => void;
}

const DEFAULT_COMPACTION_INTERVAL_MS = 10 * 60_000;

export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<Store> {
  const { dir } = options;
  if (dir !== undefined) await mkdir(dir, { recursive: true, mode: 0o700 });
  const unlock = dir === undefined ? undefined : await lockDataDir(dir);
  const collections = new Map<string, EmbeddedCollection>();
  let closed = false;

  const collection = (name: string): EmbeddedCollection => {
    if (closed) throw new Error('the store is closed');
    checkCollectionName(name);
    let found = collections.get(name);
    if (!found) {
      const db =
        dir === undefined
          ? new Datastore({ inMemoryOnly: true })
          : new Datastore({ filename: path.join(dir, `${name}.db`), modes: { fileMode: 0o600, dirMode: 0o700 } });
      found = new EmbeddedCollection(name, db, () => closed);
      collections.set(name, found);
    }
    return found;
  };

  const onCompactionError =
    options.onCompactionError ?? ((error: unknown, name: string) => process.emitWarning(`compaction of collection ${name} failed: ${String(error)}`));
  const compactionTimer =
    dir === undefined
      ? undefined
      : setInterval(
          () => {
            for (const c of collections.values()) c.compact().catch((error: unknown) => onCompactionError(error, c.name));
          },
          Math.max(options.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS, 1_000),
        );
  compactionTimer?.unref(); // never keeps the process alive on its own

  return {
    kind: 'embedded',
    collection: <T extends Doc>(name: string) => collection(name) as unknown as Collection<T>,
    async ensureIndexes(specs: IndexSpec[]) {
      for (const spec of specs) {
        if (spec.embedded !== false) await collection(spec.collection).ensureIndex(spec);
        // A data folder from before an index became MongoDB's only still builds it at every load.
        else await collection(spec.collection).dropIndex(spec.fields);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(compactionTimer);
      await Promise.all([...collections.values()].map((c) => c.drainAndCompact(dir !== undefined)));
      if (dir !== undefined) await Promise.all([...collections.keys()].map((name) => closeDataFile(path.join(dir, `${name}.db`))));
      await unlock?.();
    },
  };
}

interface UniqueIndex {
  fields: string[]; // as the caller gave them
  sortedFields: string[]; // as nedb names a compound key
}

interface UpdateOutcome {
  matched: number;
  modified: number;
  upserted: boolean;
  before: Doc | null;
  after: Doc | null;
}

class EmbeddedCollection implements Collection<Doc> {
  private readonly loaded: Promise<void>;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly uniqueIndexes: UniqueIndex[] = [{ fields: ['_id'], sortedFields: ['_id'] }];

  constructor(
    readonly name: string,
    private readonly db: Datastore,
    private readonly isClosed: () => boolean,
  ) {
    this.loaded = db.loadDatabaseAsync();
    this.loaded.catch(() => undefined); // reported by the first operation that awaits it
  }

  async insertOne(doc: Doc): Promise<void> {
    await this.exclusive(() => this.catchDuplicates([doc], () => this.db.insertAsync(doc)));
  }

  async insertMany(docs: Doc[]): Promise<void> {
    if (docs.length === 0) return;
    await this.exclusive(() => this.catchDuplicates(docs, () => this.db.insertAsync(docs)));
  }

  async findOne(filter: Filter): Promise<Doc | null> {
    checkFilter(filter);
    return this.read(async () => (await this.db.findOneAsync(toNedbQuery(filter))) as unknown as Doc | null);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    checkFilter(filter);
    return this.read(async () => {
      let cursor = this.db.findAsync(toNedbQuery(filter), options.projection ?? {});
      if (options.sort) cursor = cursor.sort(options.sort);
      if (options.skip !== undefined) cursor = cursor.skip(options.skip);
      if (options.limit !== undefined) cursor = cursor.limit(options.limit);
      return (await cursor) as unknown as Doc[];
    });
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkFilter(filter);
    return this.read(async () => (await this.db.countAsync(toNedbQuery(filter))) as unknown as number);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}) {
    const { matched, modified, upserted } = await this.update(filter, update, { multi: false, upsert: options.upsert ?? false });
    return { matched, modified, upserted };
  }

  async updateMany(filter: Filter, update: Update) {
    const { matched, modified } = await this.update(filter, update, { multi: true, upsert: false });
    return { matched, modified };
  }

  async bulkUpdate(updates: Array<{ filter: Filter; update: Update }>): Promise<UpdateResult> {
    const totals = { matched: 0, modified: 0 };
    for (const { filter, update } of updates) {
      const { matched, modified } = await this.update(filter, update, { multi: false, upsert: false });
      totals.matched += matched;
      totals.modified += modified;
    }
    return totals;
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {}) {
    const before = options.returnDocument === 'before';
    const outcome = await this.update(filter, update, { multi: false, upsert: options.upsert ?? false, copy: before ? 'before' : 'after' });
    return before ? outcome.before : outcome.after;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return this.remove(filter, false);
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.remove(filter, true);
  }

  /** Drops the index on `fields` if the data file declares it. */
  async dropIndex(fields: string[]): Promise<void> {
    const name = [...fields].sort().join(','); // nedb's name for it
    await this.exclusive(async () => {
      if (name in (this.db as unknown as NedbInternals).indexes) await this.db.removeIndexAsync(name);
    });
  }

  /** expireAfterSeconds is ignored: the code's own sweeps delete what expires (nedb's TTL would do it on reads). */
  async ensureIndex(spec: IndexSpec): Promise<void> {
    const { fields, unique = false, sparse = false } = spec;
    await this.exclusive(async () => {
      try {
        await this.db.ensureIndexAsync({ fieldName: fields, unique, sparse });
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateKeyError(this.name, fields, { cause: error });
        throw error;
      }
      const sortedFields = [...fields].sort();
      if (unique && !this.uniqueIndexes.some((index) => isDeepStrictEqual(index.sortedFields, sortedFields))) {
        this.uniqueIndexes.push({ fields, sortedFields });
      }
    });
  }

  async compact(): Promise<void> {
    await this.loaded;
    await this.db.compactDatafileAsync();
  }

  /** Lets queued writes finish, then (file-backed) rewrites the file once more. */
  async drainAndCompact(fileBacked: boolean): Promise<void> {
    await this.tail;
    if (
      fileBacked &&
      (await this.loaded.then(
        () => true,
        () => false,
      ))
    )
      await this.db.compactDatafileAsync();
  }

  // Every write, and every read-modify-write, runs alone: a per-collection queue. nedb serialises its own
  // calls too, but our updates read the matching documents and then write them back, as two nedb calls.
  private exclusive<R>(task: () => Promise<R>): Promise<R> {
    if (this.isClosed()) return Promise.reject(new Error('the store is closed'));
    const run = this.tail.then(async () => {
      await this.loaded;
      return task();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async read<R>(task: () => Promise<R>): Promise<R> {
    if (this.isClosed()) throw new Error('the store is closed');
    await this.loaded;
    return task();
  }

  // Reads the stored documents in place and applies the operators to a copy (see applyOperators), which
  // then takes the stored document's place. (A find, and nedb's own update, would copy and check each
  // document twice more.)
  private update(filter: Filter, update: Update, mode: { multi: boolean; upsert: boolean; copy?: 'before' | 'after' }): Promise<UpdateOutcome> {
    checkFilter(filter);
    checkUpdate(update);
    return this.exclusive(async () => {
      const query = toNedbQuery(filter);
      const targets: Doc[] = [];
      for (const doc of candidatesOf(this.db, query)) {
        if (!nedbModel.match(doc, query)) continue;
        targets.push(doc);
        if (!mode.multi) break;
      }

      if (targets.length === 0 && mode.upsert) {
        const seed = upsertSeed(filter);
        seed._id ??= update.$setOnInsert?._id ?? update.$set?._id ?? newId();
        const doc = applyOperators(seed as Doc, update, true);
        const inserted = (await this.catchDuplicates([doc], () => this.db.insertAsync(doc))) as unknown as Doc;
        return { matched: 0, modified: 0, upserted: true, before: null, after: inserted };
      }

      // Stored documents (and `changed`, which may share parts with them) are never handed out: only
      // copies, and only the one the caller asked for.
      const before = mode.copy === 'before' && targets[0] ? nedbModel.deepCopy(targets[0]) : null;
      let modified = 0;
      let after: Doc | null = null;
      for (const stored of targets) {
        const changed = applyOperators(stored, update, false);
        // Unchanged documents are not written (MongoDB does not count them as modified).
        const unchanged = isDeepStrictEqual(changed, stored);
        if (!unchanged) {
          await this.catchDuplicates([changed], () => this.replace(stored, changed));
          modified += 1;
        }
        if (mode.copy === 'after' && after === null) after = nedbModel.deepCopy(changed);
      }
      return { matched: targets.length, modified, upserted: false, before, after };
    });
  }

  /** What nedb's update does once it has the new document: swap it into the indexes, append it to the file. */
  private replace(stored: Doc, changed: Doc): Promise<void> {
    const db = this.db as unknown as NedbInternals;
    return db.executor.pushAsync(async () => {
      db._updateIndexes(stored, changed); // throws, changing nothing, on a unique index violation
      await db.persistence.persistNewStateAsync([changed]);
    });
  }

  private remove(filter: Filter, multi: boolean): Promise<number> {
    checkFilter(filter);
    return this.exclusive(() => this.db.removeAsync(toNedbQuery(filter), { multi }));
  }

  private async catchDuplicates<R>(written: Doc[], task: () => Promise<R>): Promise<R> {
    try {
      return await task();
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(this.name, this.violatedIndexFields(error.key, written), { cause: error });
      throw error;
    }
  }

  /** nedb reports only the colliding key; find the unique index it belongs to. */
  private violatedIndexFields(key: unknown, written: Doc[]): string[] {
    const compoundKeyFields = isPlainKey(key) ? Object.keys(key).sort() : undefined;
    const index = this.uniqueIndexes.find(({ sortedFields }) => {
      if (sortedFields.length > 1) return isDeepStrictEqual(sortedFields, compoundKeyFields);
      return written.some((doc) => [nedbModel.getDotValue(doc, sortedFields[0]!)].flat().some((v) => nedbModel.areThingsEqual(v, key)));
    });
    return index?.fields ?? [];
  }
}

function isUniqueViolation(error: unknown): error is Error & { key: unknown } {
  return error instanceof Error && (error as { errorType?: unknown }).errorType === 'uniqueViolated';
}

function isPlainKey(key: unknown): key is Record<string, unknown> {
  return typeof key === 'object' && key !== null && !Array.isArray(key) && !(key instanceof Date);
}

/** Applies update operators to a copy of doc, with the MongoDB behaviours nedb lacks. */
function applyOperators(doc: Doc, update: Update, inserting: boolean): Doc {
  if (!inserting) {
    const quick = incAndPush(doc, update);
    if (quick) return quick;
  }
  const { $setOnInsert, $pull, ...operators } = update;
  const nedbUpdate: Record<string, Record<string, unknown>> = { ...operators, $set: { ...operators.$set } };
  if (inserting && $setOnInsert) Object.assign(nedbUpdate.$set!, $setOnInsert);
  if ($pull) {
    // MongoDB: pulling from a missing field does nothing; nedb would throw.
    const present = Object.entries($pull).filter(([field]) => nedbModel.getDotValue(doc, field) !== undefined);
    if (present.length > 0) nedbUpdate.$pull = Object.fromEntries(present);
  }
  return nedbModel.modify(doc, nedbUpdate);
}

/**
 * $inc, $push and $set of a boolean, number or string on top-level fields (a credit charge, a refund): the new
 * document shares what it does not change with the stored one, which is replaced, never changed in place.
 * nedb's modify would copy and check the whole document on every call. Anything else, or anything nedb would
 * refuse, is left to nedb (undefined), so its rules and error messages stay the only ones.
 */
function incAndPush(doc: Doc, update: Update): Doc | undefined {
  const { $inc, $push, $set, ...others } = update;
  if (Object.keys(others).length > 0) return undefined;
  const changed: Doc = { ...doc };
  const plainField = (field: string) => field !== '_id' && !field.includes('.') && !field.startsWith('$');
  for (const [field, value] of Object.entries($set ?? {})) {
    if (!plainField(field) || !['boolean', 'number', 'string'].includes(typeof value)) return undefined;
    changed[field] = value;
  }
  for (const [field, by] of Object.entries($inc ?? {})) {
    const current = changed[field];
    if (!plainField(field) || typeof by !== 'number' || (field in changed && typeof current !== 'number')) return undefined;
    changed[field] = ((current as number | undefined) ?? 0) + by;
  }
  for (const [field, value] of Object.entries($push ?? {})) {
    const list = changed[field];
    // The dialect allows one modifier, { $each: [...] } (checkUpdate).
    const elements = isOperatorObject(value) ? (value as { $each: unknown[] }).$each : [value];
    if (!plainField(field) || (field in changed && !Array.isArray(list))) return undefined;
    const added = elements.map((element) => nedbModel.deepCopy(element));
    nedbModel.checkObject(added);
    changed[field] = [...((list as unknown[] | undefined) ?? []), ...added];
  }
  return changed;
}

// ---- filters: MongoDB semantics that nedb's own query language lacks ----

/**
 * Rewrites a (checked) port filter into an nedb query. Conditions nedb already evaluates like MongoDB stay
 * as they are (so nedb can still use its indexes); the others become $not/$or forms under a top-level $and:
 *   - null equality also matches missing fields;
 *   - $ne/$nin on an array field mean "no element is equal" (nedb: "some element differs");
 *   - $exists: true holds for an empty array (nedb looks at the elements);
 *   - $eq, which nedb does not know.
 */
function toNedbQuery(filter: Filter): NedbQuery {
  const query: NedbQuery = {};
  const rewritten: NedbQuery[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$or') query.$or = (value as Filter[]).map(toNedbQuery);
    else if (key === '$and') rewritten.push(...(value as Filter[]).map(toNedbQuery));
    else if (!isOperatorObject(value)) {
      if (value === null) rewritten.push(nullOrMissing(key));
      else query[key] = value;
    } else {
      const kept: Record<string, unknown> = {};
      for (const [op, operand] of Object.entries(value)) {
        if (op === '$eq') rewritten.push(equals(key, operand));
        else if (op === '$ne') rewritten.push({ $not: equals(key, operand) });
        else if (op === '$in') rewritten.push(isIn(key, operand as unknown[]));
        else if (op === '$nin') rewritten.push({ $not: isIn(key, operand as unknown[]) });
        else if (op === '$exists' && operand === true) rewritten.push({ $not: { [key]: { $exists: false } } });
        else kept[op] = operand;
      }
      if (Object.keys(kept).length > 0) query[key] = kept;
    }
  }
  if (rewritten.length > 0) query.$and = rewritten;
  return query;
}

function nullOrMissing(path: string): NedbQuery {
  return { $or: [{ [path]: null }, { [path]: { $exists: false } }] };
}

function equals(path: string, value: unknown): NedbQuery {
  return value === null ? nullOrMissing(path) : { [path]: value };
}

function isIn(path: string, values: unknown[]): NedbQuery {
  const others = values.filter((value) => value !== null);
  if (others.length === values.length) return { [path]: { $in: values } };
  return { $or: [{ [path]: { $in: others } }, nullOrMissing(path)] };
}
