// The embedded adapter: one @seald-io/nedb Datastore per collection, in memory or in <dir>/<collection>.db.
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import nedb from '@seald-io/nedb';
import { checkCollectionName, checkFilter, checkUpdate, isOperatorObject, newId, upsertSeed } from './dialect.ts';
import { type Collection, type Doc, DuplicateKeyError, type Filter, type FindOptions, type IndexSpec, type Store, type Update } from './port.ts';

// The package's typings declare an ES default export, but at run time the CommonJS module itself is the class.
const Datastore = nedb as unknown as typeof nedb.default;
type Datastore = InstanceType<typeof Datastore>;

// nedb's own document functions (lib/model.js, absent from its typings): we apply update operators with
// the very code nedb uses, so that upserts and the "modified" count can be computed before writing.
const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
  modify(doc: object, update: object): Doc;
  getDotValue(doc: object, path: string): unknown;
  areThingsEqual(a: unknown, b: unknown): boolean;
};

type NedbQuery = Record<string, unknown>;

export interface EmbeddedStoreOptions {
  /** Folder for the data files (created with mode 0700); in memory when absent. */
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
  const collections = new Map<string, EmbeddedCollection>();
  let closed = false;

  const collection = (name: string): EmbeddedCollection => {
    if (closed) throw new Error('the store is closed');
    checkCollectionName(name);
    let found = collections.get(name);
    if (!found) {
      const db = dir === undefined
        ? new Datastore({ inMemoryOnly: true })
        : new Datastore({ filename: path.join(dir, `${name}.db`), modes: { fileMode: 0o600, dirMode: 0o700 } });
      found = new EmbeddedCollection(name, db, () => closed);
      collections.set(name, found);
    }
    return found;
  };

  const onCompactionError = options.onCompactionError
    ?? ((error: unknown, name: string) => process.emitWarning(`compaction of collection ${name} failed: ${String(error)}`));
  const compactionTimer = dir === undefined ? undefined : setInterval(() => {
    for (const c of collections.values()) c.compact().catch((error: unknown) => onCompactionError(error, c.name));
  }, Math.max(options.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS, 1_000));
  compactionTimer?.unref(); // never keeps the process alive on its own

  return {
    kind: 'embedded',
    collection: <T extends Doc>(name: string) => collection(name) as unknown as Collection<T>,
    async ensureIndexes(specs: IndexSpec[]) {
      for (const spec of specs) await collection(spec.collection).ensureIndex(spec);
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(compactionTimer);
      await Promise.all([...collections.values()].map((c) => c.drainAndCompact(dir !== undefined)));
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

  async findOneAndUpdate(filter: Filter, update: Update, options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {}) {
    const outcome = await this.update(filter, update, { multi: false, upsert: options.upsert ?? false });
    return options.returnDocument === 'before' ? outcome.before : outcome.after;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return this.remove(filter, false);
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.remove(filter, true);
  }

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
    if (fileBacked && (await this.loaded.then(() => true, () => false))) await this.db.compactDatafileAsync();
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

  private update(filter: Filter, update: Update, mode: { multi: boolean; upsert: boolean }): Promise<UpdateOutcome> {
    checkFilter(filter);
    checkUpdate(update);
    return this.exclusive(async () => {
      const query = toNedbQuery(filter);
      const targets = (mode.multi
        ? await this.db.findAsync(query)
        : [await this.db.findOneAsync(query)].filter((doc) => doc !== null)) as unknown as Doc[];

      if (targets.length === 0 && mode.upsert) {
        const seed = upsertSeed(filter);
        seed._id ??= update.$setOnInsert?._id ?? update.$set?._id ?? newId();
        const doc = applyOperators(seed as Doc, update, true);
        const inserted = (await this.catchDuplicates([doc], () => this.db.insertAsync(doc))) as unknown as Doc;
        return { matched: 0, modified: 0, upserted: true, before: null, after: inserted };
      }

      let modified = 0;
      let firstAfter: Doc | null = null;
      for (const before of targets) {
        const changed = applyOperators(before, update, false);
        let after = before; // unchanged documents are not written (MongoDB does not count them as modified)
        if (!isDeepStrictEqual(changed, before)) {
          const written = await this.catchDuplicates([changed], () =>
            this.db.updateAsync({ _id: before._id }, changed, { returnUpdatedDocs: true }));
          after = written.affectedDocuments as unknown as Doc; // nedb's own copy: shares nothing with `update`
          modified += 1;
        }
        firstAfter ??= after;
      }
      return { matched: targets.length, modified, upserted: false, before: targets[0] ?? null, after: firstAfter };
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
