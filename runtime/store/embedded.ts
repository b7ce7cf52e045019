// The embedded adapter: one @seald-io/nedb Datastore per collection, in memory or in <dir>/<collection>.db.
//
// What is in memory is never ahead of the file: a write changes memory, appends to the file, and if the append
// fails (a full disk) gives its change back before it reports the failure. The store then takes no more writes
// (StoreUnavailableError, refused at once) until it has reopened every file from disk, which it tries by itself
// once the disk has room again; reads go on from memory meanwhile.
import { mkdir, stat, statfs } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import nedb from '@seald-io/nedb';
import { lockDataDir } from './dir-lock.ts';
import { OrderedKeys, type TreeOptions } from './ordered-keys.ts';
import { appendDocs, closeDataFile, repairDataFile } from './nedb-files.ts';
import { StoreClock } from './clock.ts';
import { checkCollectionName, checkFilter, checkUpdate, isOperatorObject, newId, upsertSeed } from './dialect.ts';
import {
  type Collection,
  type Doc,
  DuplicateKeyError,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Store,
  type StoreEvents,
  StoreUnavailableError,
  type Update,
  type UpdateResult,
} from './port.ts';
import { WriteGate } from './write-gate.ts';

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
  compareThings(a: unknown, b: unknown): number;
};

/** nedb's cursor, for its projection (the same keep/omit rules whichever way a find went). */
const NedbCursor = createRequire(import.meta.url)('@seald-io/nedb/lib/cursor.js') as new (
  db: Datastore,
  query: NedbQuery,
) => { projection(p: Record<string, 0 | 1>): unknown; _project(docs: Doc[]): Doc[] };

type NedbQuery = Record<string, unknown>;

/**
 * The steps of nedb's own insert, update and remove that we take ourselves, so that a failed append can give
 * back what it changed in memory (package pinned: lib/datastore.js of 4.1.2).
 */
interface NedbInternals {
  /** The datastore's own documents for a query, found through its indexes: not copies, so read them only. */
  _getRawCandidates(query: NedbQuery): Doc[];
  /** Adds documents to every index, or none of them (throws on a unique index violation, changing nothing). */
  _insertInCache(docs: Doc[]): void;
  _removeFromIndexes(doc: Doc): void;
  _addToIndexes(doc: Doc): void;
  /** Swaps a document in every index (throws, changing nothing, on a unique index violation). */
  _updateIndexes(oldDoc: Doc, newDoc: Doc): void;
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  /** By name: the sorted fields joined by commas. */
  indexes: Record<string, NedbIndex>;
}

const internals = (db: Datastore) => db as unknown as NedbInternals;
/** Data files are the owner's only (and their folder, 0700). */
const FILE_MODE = 0o600;

/** nedb's Index, whose tree orderIndexes replaces (lib/indexes.js of 4.1.2). */
interface NedbIndex {
  tree: OrderedKeys | Parameters<typeof OrderedKeys.of>[0];
  treeOptions: TreeOptions;
  insert(docs: Doc | Doc[]): void;
  reset(docs?: Doc | Doc[]): void;
}

/**
 * Puts OrderedKeys in place of the AVL tree of every index of `db`, including those nedb makes as it loads a
 * file, and in place of the tree an index starts again with when nedb resets it (every load does).
 */
function orderIndexes(db: Datastore): void {
  for (const index of Object.values(internals(db).indexes)) {
    if (index.tree instanceof OrderedKeys) continue;
    index.tree = OrderedKeys.of(index.tree, index.treeOptions);
    index.reset = (docs) => {
      index.tree = new OrderedKeys(index.treeOptions);
      if (docs) index.insert(docs);
    };
  }
}

export interface EmbeddedStoreOptions extends StoreEvents {
  /**
   * Folder for the data files (created with mode 0700); in memory when absent. One process at a time: a
   * second open of the folder, in this process or another, throws DataDirLockedError (see dir-lock.ts).
   */
  dir?: string;
  /** How often data files are rewritten without their superseded lines. Default 10 minutes, at least 1 s. */
  compactionIntervalMs?: number;
  /** Called when a periodic compaction fails (the next one retries). Default: a process warning. */
  onCompactionError?: (error: unknown, collection: string) => void;
  /** How often a store whose writes stopped looks whether it can reopen its files. Default 1 s. */
  recoveryIntervalMs?: number;
}

const DEFAULT_COMPACTION_INTERVAL_MS = 10 * 60_000;
const DEFAULT_RECOVERY_INTERVAL_MS = 1000;
/** A reopen that failed is tried again after twice as long, up to this. */
const MAX_RECOVERY_BACKOFF_MS = 30_000;
/** Reopening rewrites each file (nedb compacts at load): it waits for room for the largest one and this much more. */
const REOPEN_MARGIN_BYTES = 256 * 1024;
/** What a client refused while the disk refuses writes is told to wait (Retry-After). */
const DISK_RETRY_AFTER_SECONDS = 10;
/** The WriteGate source of the store's own refusal. */
const DISK = 'embedded store';

export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<Store> {
  const { dir } = options;
  if (dir !== undefined) await mkdir(dir, { recursive: true, mode: 0o700 });
  const unlock = dir === undefined ? undefined : await lockDataDir(dir);
  const collections = new Map<string, EmbeddedCollection>();
  const gate = new WriteGate();
  let closed = false;

  const fileOf = (name: string) => (dir === undefined ? undefined : path.join(dir, `${name}.db`));
  const recovery = dir === undefined ? undefined : new Recovery(dir, gate, collections, options);
  const collection = (name: string): EmbeddedCollection => {
    if (closed) throw new Error('the store is closed');
    checkCollectionName(name);
    let found = collections.get(name);
    if (!found) {
      found = new EmbeddedCollection(name, fileOf(name), {
        isClosed: () => closed,
        gate,
        failed: (error) => recovery!.stopWrites(name, error),
      });
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
            // Not while the disk refuses writes: the reopen rewrites every file.
            if (gate.refusedBy(DISK)) return;
            for (const c of collections.values()) c.compact().catch((error: unknown) => onCompactionError(error, c.name));
          },
          Math.max(options.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS, 1_000),
        );
  compactionTimer?.unref(); // never keeps the process alive on its own
  // The store is this process: its time is the host's own (measured all the same, one code path with MongoDB).
  const clock = new StoreClock(async () => new Date());
  await clock.measure();

  return {
    kind: 'embedded',
    clock,
    collection: <T extends Doc>(name: string) => collection(name) as unknown as Collection<T>,
    async ensureIndexes(specs: IndexSpec[]) {
      for (const spec of specs) {
        if (spec.retired) await collection(spec.collection).dropIndex(spec.fields);
        else if (spec.embedded !== false) await collection(spec.collection).ensureIndex(spec);
        // A data folder from before an index became MongoDB's only still builds it at every load.
        else await collection(spec.collection).dropIndex(spec.fields);
      }
    },
    status: async () => gate.status(),
    refuseWrites: (source, reason, retryAfterSeconds) => gate.refuse(source, reason, retryAfterSeconds),
    allowWrites: (source) => gate.allow(source),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(compactionTimer);
      recovery?.stop();
      // A store whose disk refused writes has nothing to add to its files: they hold what memory holds.
      const compact = dir !== undefined && !gate.refusedBy(DISK);
      await Promise.all([...collections.values()].map((c) => c.drainAndCompact(compact)));
      if (dir !== undefined) await Promise.all([...collections.keys()].map((name) => closeDataFile(fileOf(name)!)));
      await unlock?.();
    },
  };
}

/**
 * After a failed append: writes stop (the gate), the log is told once, and the store looks every second
 * whether the disk has room to reopen its files; it then reloads every one of them from disk into new
 * datastores and takes writes again. A reopen that fails is tried again later, with the old datastores
 * (which hold what the files hold) still serving reads.
 */
class Recovery {
  private since = 0;
  private reason = '';
  private timer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private stopped = false;

  constructor(
    private readonly dir: string,
    private readonly gate: WriteGate,
    private readonly collections: ReadonlyMap<string, EmbeddedCollection>,
    private readonly options: EmbeddedStoreOptions,
  ) {}

  /** The error a failed append reports; the first one stops the store's writes. */
  stopWrites(collection: string, error: unknown): StoreUnavailableError {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = `the store's disk refuses writes (${code ? `${code}, ` : ''}${withoutPaths(error)})`;
    if (!this.gate.refusedBy(DISK)) {
      this.reason = reason;
      this.gate.refuse(DISK, reason, DISK_RETRY_AFTER_SECONDS);
      this.since = Date.now();
      this.attempts = 0;
      this.options.onUnavailable?.(`${reason} (appending to ${collection}.db failed)`, error);
      this.schedule(this.interval());
    }
    return new StoreUnavailableError(this.reason, DISK_RETRY_AFTER_SECONDS, false, { cause: error });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private interval(): number {
    return this.options.recoveryIntervalMs ?? DEFAULT_RECOVERY_INTERVAL_MS;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.attempt(), ms);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    if (!(await this.roomToReopen())) return this.schedule(this.interval());
    const fresh = new Map<EmbeddedCollection, Datastore>();
    try {
      for (const c of this.collections.values()) fresh.set(c, await c.loadAgain());
    } catch {
      this.attempts++;
      return this.schedule(Math.min(this.interval() * 2 ** this.attempts, MAX_RECOVERY_BACKOFF_MS));
    }
    if (this.stopped) return;
    for (const [c, db] of fresh) c.useDatastore(db);
    this.gate.allow(DISK);
    this.options.onAvailable?.(Date.now() - this.since);
  }

  /** Room on the disk for the largest data file once more (reopening rewrites each file), and some. */
  private async roomToReopen(): Promise<boolean> {
    try {
      const sizes = await Promise.all(
        [...this.collections.values()].map((c) =>
          stat(c.filename!).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      );
      const { bavail, bsize } = await statfs(this.dir);
      return bavail * bsize >= Math.max(0, ...sizes) + REOPEN_MARGIN_BYTES;
    } catch {
      return true; // cannot tell: the reopen itself will
    }
  }
}

/** An error's message without its code (said apart) nor any file's path. */
function withoutPaths(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // "ENOSPC: no space left on device, write" -> "no space left on device".
  return message
    .replace(/^[A-Z]+: /, '')
    .replace(/, \w+ '.*'$/, '')
    .replace(/, \w+$/, '');
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

interface CollectionContext {
  isClosed(): boolean;
  gate: WriteGate;
  /** Stops the store's writes after a failed append; returns the error to report. */
  failed(error: unknown): StoreUnavailableError;
}

class EmbeddedCollection implements Collection<Doc> {
  private db: Datastore;
  private loaded: Promise<void>;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly uniqueIndexes: UniqueIndex[] = [{ fields: ['_id'], sortedFields: ['_id'] }];
  /** The indexes ensured, built again in a datastore reloaded from the file. */
  private readonly ensured: IndexSpec[] = [];

  constructor(
    readonly name: string,
    /** The data file; undefined in memory. */
    readonly filename: string | undefined,
    private readonly context: CollectionContext,
  ) {
    this.db = this.newDatastore();
    this.loaded = this.load(this.db);
    this.loaded.catch(() => undefined); // reported by the first operation that awaits it
  }

  async insertOne(doc: Doc): Promise<void> {
    await this.exclusive(() => this.insert([doc]));
  }

  async insertMany(docs: Doc[]): Promise<void> {
    if (docs.length === 0) return;
    await this.exclusive(() => this.insert(docs));
  }

  async findOne(filter: Filter): Promise<Doc | null> {
    checkFilter(filter);
    return this.read(async (db) => (await db.findOneAsync(toNedbQuery(filter))) as unknown as Doc | null);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    checkFilter(filter);
    const query = toNedbQuery(filter);
    return this.read(async (db) => {
      const walk = indexWalk(db, filter, query, options);
      if (walk) return internals(db).executor.pushAsync(async () => walk());
      let cursor = db.findAsync(query, options.projection ?? {});
      if (options.sort) cursor = cursor.sort(options.sort);
      if (options.skip !== undefined) cursor = cursor.skip(options.skip);
      if (options.limit !== undefined) cursor = cursor.limit(options.limit);
      return (await cursor) as unknown as Doc[];
    });
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkFilter(filter);
    return this.read(async (db) => (await db.countAsync(toNedbQuery(filter))) as unknown as number);
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
      if (name in internals(this.db).indexes) await this.persisted(() => this.db.removeIndexAsync(name));
    });
  }

  /** expireAfterSeconds is ignored: the code's own sweeps delete what expires (nedb's TTL would do it on reads). */
  async ensureIndex(spec: IndexSpec): Promise<void> {
    await this.exclusive(() => this.buildIndex(this.db, spec));
    if (!this.ensured.some((other) => isDeepStrictEqual(other.fields, spec.fields))) this.ensured.push(spec);
    const sortedFields = [...spec.fields].sort();
    if (spec.unique && !this.uniqueIndexes.some((index) => isDeepStrictEqual(index.sortedFields, sortedFields))) {
      this.uniqueIndexes.push({ fields: spec.fields, sortedFields });
    }
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

  /**
   * A new datastore loaded from the file (nedb rewrites the file as it loads), with the indexes ensured, once
   * every write queued here has ended. The writes of the store are stopped meanwhile (see Recovery).
   */
  async loadAgain(): Promise<Datastore> {
    await this.tail;
    await internals(this.db).executor.pushAsync(async () => undefined); // a compaction under way
    await closeDataFile(this.filename!);
    const db = this.newDatastore();
    await this.load(db);
    for (const spec of this.ensured) await this.buildIndex(db, spec);
    return db;
  }

  useDatastore(db: Datastore): void {
    this.db = db;
    this.loaded = Promise.resolve();
  }

  private newDatastore(): Datastore {
    return this.filename === undefined
      ? new Datastore({ inMemoryOnly: true })
      : new Datastore({ filename: this.filename, modes: { fileMode: FILE_MODE, dirMode: 0o700 } });
  }

  private async load(db: Datastore): Promise<void> {
    if (this.filename !== undefined) await repairDataFile(this.filename);
    await db.loadDatabaseAsync();
    orderIndexes(db);
  }

  private async buildIndex(db: Datastore, { fields, unique = false, sparse = false }: IndexSpec): Promise<void> {
    const name = [...fields].sort().join(',');
    const existed = name in internals(db).indexes;
    try {
      await db.ensureIndexAsync({ fieldName: fields, unique, sparse });
      orderIndexes(db);
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(this.name, fields, { cause: error });
      // Built in memory, not declared in the file: given back, like any write that failed.
      if (!existed) delete internals(db).indexes[name];
      throw this.context.failed(error);
    }
  }

  // Every write, and every read-modify-write, runs alone: a per-collection queue. nedb serialises its own
  // calls too, but our updates read the matching documents and then write them back, as two nedb calls.
  // Writes are refused, at once, while the store's writes are stopped (checked again when a write's turn comes).
  private exclusive<R>(task: () => Promise<R>): Promise<R> {
    if (this.context.isClosed()) return Promise.reject(new Error('the store is closed'));
    try {
      this.context.gate.check();
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.tail.then(async () => {
      await this.loaded;
      this.context.gate.check();
      return task();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async read<R>(task: (db: Datastore) => Promise<R>): Promise<R> {
    if (this.context.isClosed()) throw new Error('the store is closed');
    await this.loaded;
    return task(this.db);
  }

  /**
   * Appends `lines` to the file, after `apply` changed memory; if the append fails, `undo` gives the change
   * back before the failure is reported (and the store's writes stop). In nedb's queue, after any compaction.
   */
  private changed(apply: () => void, lines: object[], undo: () => void): Promise<void> {
    const db = internals(this.db);
    return db.executor.pushAsync(async () => {
      apply();
      try {
        if (this.filename !== undefined) await appendDocs(this.filename, lines, FILE_MODE);
      } catch (error) {
        undo();
        throw this.context.failed(error);
      }
    });
  }

  /** A write nedb makes itself (index declarations); a failed append stops the store's writes. */
  private async persisted(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      throw this.context.failed(error);
    }
  }

  /** Copies of the documents, checked as nedb checks them, in every index (or none), then in the file. */
  private async insert(docs: Doc[]): Promise<Doc[]> {
    const copies = docs.map((doc) => nedbModel.deepCopy(doc));
    for (const copy of copies) nedbModel.checkObject(copy);
    const db = internals(this.db);
    await this.catchDuplicates(docs, () =>
      this.changed(
        () => db._insertInCache(copies),
        copies,
        () => copies.forEach((copy) => db._removeFromIndexes(copy)),
      ),
    );
    return copies;
  }

  // Reads the stored documents in place and applies the operators to a copy (see applyOperators), which
  // then takes the stored document's place. (A find, and nedb's own update, would copy and check each
  // document twice more.)
  private update(filter: Filter, update: Update, mode: { multi: boolean; upsert: boolean; copy?: 'before' | 'after' }): Promise<UpdateOutcome> {
    checkFilter(filter);
    checkUpdate(update);
    return this.exclusive(async () => {
      const targets = this.matching(filter, mode.multi);

      if (targets.length === 0 && mode.upsert) {
        const seed = upsertSeed(filter);
        seed._id ??= update.$setOnInsert?._id ?? update.$set?._id ?? newId();
        const [inserted] = await this.insert([applyOperators(seed as Doc, update, true)]);
        return { matched: 0, modified: 0, upserted: true, before: null, after: nedbModel.deepCopy(inserted!) };
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
          const db = internals(this.db);
          await this.catchDuplicates([changed], () =>
            this.changed(
              () => db._updateIndexes(stored, changed), // throws, changing nothing, on a unique index violation
              [changed],
              () => db._updateIndexes(changed, stored),
            ),
          );
          modified += 1;
        }
        if (mode.copy === 'after' && after === null) after = nedbModel.deepCopy(changed);
      }
      return { matched: targets.length, modified, upserted: false, before, after };
    });
  }

  private remove(filter: Filter, multi: boolean): Promise<number> {
    checkFilter(filter);
    return this.exclusive(async () => {
      const removed = this.matching(filter, multi);
      if (removed.length === 0) return 0;
      const db = internals(this.db);
      await this.changed(
        () => removed.forEach((doc) => db._removeFromIndexes(doc)),
        removed.map((doc) => ({ $$deleted: true, _id: doc._id })),
        () => removed.forEach((doc) => db._addToIndexes(doc)),
      );
      return removed.length;
    });
  }

  /** The stored documents (not copies: read them only) that match, found through nedb's indexes; the first only unless `multi`. */
  private matching(filter: Filter, multi: boolean): Doc[] {
    const query = toNedbQuery(filter);
    const found: Doc[] = [];
    for (const doc of internals(this.db)._getRawCandidates(query)) {
      if (!nedbModel.match(doc, query)) continue;
      found.push(doc);
      if (!multi) break;
    }
    return found;
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
  const nedbUpdate: Record<string, Record<string, unknown>> = Object.assign({}, operators, { $set: Object.assign({}, operators.$set) });
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
      const dates = datesOnly(key, kept);
      if (dates) rewritten.push(dates);
    }
  }
  if (rewritten.length > 0) query.$and = rewritten;
  return query;
}

const BOUNDS = new Set(['$gt', '$gte', '$lt', '$lte']);
const IN_RANGE: Record<string, (value: number, bound: number) => boolean> = {
  $gt: (value, bound) => value > bound,
  $gte: (value, bound) => value >= bound,
  $lt: (value, bound) => value < bound,
  $lte: (value, bound) => value <= bound,
};

/**
 * MongoDB compares a Date with Dates only, so a range of Dates never matches null, a number, a string or an
 * object; nedb compares it with any object (null as 0: `{ next_at: { $lte: now } }` matched every null). The
 * range stays in the query (an index walks it); this condition keeps only the documents MongoDB would return.
 */
function datesOnly(path: string, operators: Record<string, unknown>): NedbQuery | undefined {
  const bounds = Object.entries(operators).filter(([op, operand]) => BOUNDS.has(op) && operand instanceof Date) as Array<[string, Date]>;
  if (bounds.length === 0) return undefined;
  const inRange = (value: unknown) => value instanceof Date && bounds.every(([op, bound]) => IN_RANGE[op]!(value.getTime(), bound.getTime()));
  return {
    $where(this: Doc) {
      const value = nedbModel.getDotValue(this, path);
      return Array.isArray(value) ? value.some(inRange) : inRange(value);
    },
  };
}

/**
 * A find sorted first on a field that has an index of its own and that the filter bounds (a range of it, as the
 * housekeeping's batches and the call log's pages ask): the index holds the range in that order, so the walk
 * stops at the limit, where nedb's cursor matches every candidate and sorts all the matches (measured: most of
 * a call's CPU on a ledger of 10k records). Documents that tie on the field at the limit are all taken, then
 * the few taken are sorted on the whole sort. Undefined when the find is not of that shape (nedb's cursor then).
 */
function indexWalk(db: Datastore, filter: Filter, query: NedbQuery, options: FindOptions): (() => Doc[]) | undefined {
  const sort = Object.entries(options.sort ?? {});
  const [field, direction] = sort[0] ?? [];
  const bounds = field === undefined ? undefined : query[field];
  const index = field === undefined ? undefined : internals(db).indexes[field];
  if (!index || !isOperatorObject(bounds) || !Object.keys(bounds).every((op) => BOUNDS.has(op))) return undefined;
  const wanted = (options.skip ?? 0) + (options.limit || Infinity); // limit 0: none, as in MongoDB
  // Every document the walk meets holds the field within the bounds when they are a closed range of one type
  // (nothing of another type sorts between two dates, numbers or strings): the rest of the filter is then all
  // there is to match (measured: a third of the roll-up's cost per record, its range and the dates' check).
  const rest = closedRange(filter[field!]) ? toNedbQuery(Object.fromEntries(Object.entries(filter).filter(([key]) => key !== field))) : query;
  const matches = Object.keys(rest).length === 0 ? () => true : (doc: Doc) => nedbModel.match(doc, rest);
  return () => {
    const taken: Doc[] = [];
    for (const doc of (index.tree as OrderedKeys).between(bounds, direction === -1 ? -1 : 1)) {
      if (taken.length >= wanted && nedbModel.compareThings(nedbModel.getDotValue(doc, field!), nedbModel.getDotValue(taken.at(-1)!, field!)) !== 0) break;
      if (matches(doc)) taken.push(doc);
    }
    if (sort.length > 1) {
      taken.sort((a, b) => {
        for (const [key, dir] of sort) {
          const order = dir * nedbModel.compareThings(nedbModel.getDotValue(a, key), nedbModel.getDotValue(b, key));
          if (order !== 0) return order;
        }
        return 0;
      });
    }
    const page = taken.slice(options.skip ?? 0, wanted);
    // Copies, as nedb's find hands out.
    return options.projection && Object.keys(options.projection).length > 0
      ? project(db, query, options.projection, page)
      : page.map((doc) => nedbModel.deepCopy(doc));
  };
}

/** A condition of only a lower and an upper bound, both dates, numbers or strings. */
function closedRange(condition: unknown): boolean {
  if (!isOperatorObject(condition)) return false;
  const ops = Object.keys(condition);
  const lower = ops.filter((op) => op === '$gt' || op === '$gte');
  const upper = ops.filter((op) => op === '$lt' || op === '$lte');
  if (ops.length !== 2 || lower.length !== 1 || upper.length !== 1) return false;
  const [low, high] = [condition[lower[0]!], condition[upper[0]!]];
  // NaN (an invalid date's time too) compares equal to every key: the walk would not hold the range.
  const kind = (v: unknown) => {
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : 'date';
    if (typeof v === 'number') return Number.isNaN(v) ? undefined : 'number';
    return typeof v === 'string' ? 'string' : undefined;
  };
  return kind(low) !== undefined && kind(low) === kind(high);
}

/** Copies of `docs` with nedb's projection rules. */
function project(db: Datastore, query: NedbQuery, projection: Record<string, 0 | 1>, docs: Doc[]): Doc[] {
  const { _id, ...fields } = projection;
  const picked = Object.keys(fields);
  // What the housekeeping's batches ask (a few top-level fields of each record): each value copied once, where
  // nedb's cursor copies the document to project it and the projection is copied again.
  if (picked.length > 0 && picked.every((field) => fields[field] === 1 && !field.includes('.'))) {
    return docs.map((doc) => {
      const copy: Doc = _id === 0 ? ({} as Doc) : { _id: doc._id };
      for (const field of picked) if (doc[field] !== undefined) copy[field] = nedbModel.deepCopy(doc[field]);
      return copy;
    });
  }
  const cursor = new NedbCursor(db, query);
  cursor.projection({ ...projection });
  return cursor._project(docs).map((doc) => nedbModel.deepCopy(doc));
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
