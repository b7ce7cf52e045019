// The MongoDB adapter: deliberately thin over the official driver (the port speaks MongoDB's dialect), so
// that little is left untested on machines without a MongoDB server. What it adds: the shared dialect
// checks, string _ids for upserts, DuplicateKeyError, and the port's result shapes.
import { type Collection as DriverCollection, type Document, MongoClient, MongoServerError } from 'mongodb';
import { checkCollectionName, checkFilter, checkUpdate, newId, pinnedUpsertId } from './dialect.ts';
import { type Collection, type Doc, DuplicateKeyError, type Filter, type FindOptions, type IndexSpec, type Store, type Update } from './port.ts';

const DEFAULT_DB_NAME = 'tool_server';
const DUPLICATE_KEY = 11000;

/** dbName defaults to the database named in the URL path, else "tool_server". */
export async function openMongoStore(url: string, dbName?: string): Promise<Store> {
  // ignoreUndefined: an undefined field is left out, as on the embedded store (the driver would store null).
  const client = new MongoClient(url, { ignoreUndefined: true });
  await client.connect();
  const db = client.db(dbName ?? dbNameFromUrl(url) ?? DEFAULT_DB_NAME);
  const indexFieldsByName = new Map<string, string[]>(); // to name the fields when an error lacks keyPattern

  return {
    kind: 'mongodb',
    mongo: { client, dbName: db.databaseName },
    collection<T extends Doc>(name: string): Collection<T> {
      checkCollectionName(name);
      return new MongoCollection(name, db.collection<Doc>(name), indexFieldsByName) as unknown as Collection<T>;
    },
    async ensureIndexes(specs: IndexSpec[]) {
      for (const { collection, fields, unique = false, sparse = false } of specs) {
        checkCollectionName(collection);
        const keys = Object.fromEntries(fields.map((field) => [field, 1 as const]));
        try {
          const name = await db.collection(collection).createIndex(keys, { unique, sparse });
          indexFieldsByName.set(`${collection}/${name}`, fields);
        } catch (error) {
          if (isDuplicateKey(error)) throw new DuplicateKeyError(collection, fields, { cause: error });
          throw error;
        }
      }
    },
    close: () => client.close(),
  };
}

class MongoCollection implements Collection<Doc> {
  constructor(
    private readonly name: string,
    private readonly driver: DriverCollection<Doc>,
    private readonly indexFieldsByName: Map<string, string[]>,
  ) {}

  async insertOne(doc: Doc): Promise<void> {
    await this.mapErrors(() => this.driver.insertOne(doc));
  }

  async insertMany(docs: Doc[]): Promise<void> {
    if (docs.length === 0) return; // the driver rejects an empty batch
    await this.mapErrors(() => this.driver.insertMany(docs));
  }

  async findOne(filter: Filter): Promise<Doc | null> {
    checkFilter(filter);
    return (await this.driver.findOne(filter)) as Doc | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    checkFilter(filter);
    return (await this.driver.find(filter, options).toArray()) as Doc[];
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkFilter(filter);
    return this.driver.countDocuments(filter);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}) {
    const upsert = options.upsert ?? false;
    const result = await this.mapErrors(() => this.driver.updateOne(filter, this.checked(filter, update, upsert), { upsert }));
    return { matched: result.matchedCount, modified: result.modifiedCount, upserted: result.upsertedCount > 0 };
  }

  async updateMany(filter: Filter, update: Update) {
    const result = await this.mapErrors(() => this.driver.updateMany(filter, this.checked(filter, update, false)));
    return { matched: result.matchedCount, modified: result.modifiedCount };
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {}) {
    const upsert = options.upsert ?? false;
    const returnDocument = options.returnDocument ?? 'after'; // the port's default; the driver's is 'before'
    return (await this.mapErrors(() => this.driver.findOneAndUpdate(filter, this.checked(filter, update, upsert), { upsert, returnDocument }))) as Doc | null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    checkFilter(filter);
    return (await this.driver.deleteOne(filter)).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    checkFilter(filter);
    return (await this.driver.deleteMany(filter)).deletedCount;
  }

  /** Checks filter and update; an upsert that pins no _id gets a generated string one (not an ObjectId). */
  private checked(filter: Filter, update: Update, upsert: boolean): Document {
    checkFilter(filter);
    checkUpdate(update);
    if (!upsert || pinnedUpsertId(filter, update) !== undefined) return update;
    return { ...update, $setOnInsert: { ...update.$setOnInsert, _id: newId() } };
  }

  private async mapErrors<R>(task: () => Promise<R>): Promise<R> {
    try {
      return await task();
    } catch (error) {
      throw toDuplicateKeyError(error, this.name, this.indexFieldsByName) ?? error;
    }
  }
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

/** E11000 from a single write (MongoServerError) or from insertMany (MongoBulkWriteError, a subclass). */
function isDuplicateKey(error: unknown): error is MongoServerError {
  return error instanceof MongoServerError && (error.code === DUPLICATE_KEY || firstWriteError(error)?.code === DUPLICATE_KEY);
}

function firstWriteError(error: MongoServerError): Record<string, unknown> | undefined {
  const writeErrors: unknown = (error as { writeErrors?: unknown }).writeErrors;
  const first: unknown = Array.isArray(writeErrors) ? writeErrors[0] : writeErrors;
  if (typeof first !== 'object' || first === null) return undefined;
  // The driver's WriteError wraps the server's raw error in `err`.
  const raw = (first as { err?: unknown }).err;
  return (typeof raw === 'object' && raw !== null ? raw : first) as Record<string, unknown>;
}

function dbNameFromUrl(url: string): string | undefined {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]+)/.exec(url)?.[1];
  return path ? decodeURIComponent(path) : undefined;
}
