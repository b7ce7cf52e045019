// One contract suite for the store port, run against every adapter available: the embedded store (in
// memory and file-backed) always, MongoDB when MONGODB_URL is set (a fresh database per test, dropped after;
// FerretDB in the test runs, see test/support/mongo.ts).
import { appendFile, cp, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Collection, DialectError, type Doc, DuplicateKeyError, type Filter, type Store } from '../runtime/store/port.ts';
import { openStore } from '../runtime/store/open-store.ts';
import { LOCK_FILE } from '../runtime/store/dir-lock.ts';
import { openEmbeddedStore } from '../runtime/store/embedded.ts';
import { lineOf } from '../runtime/store/nedb-files.ts';
import { openMongoStore, toDuplicateKeyError } from '../runtime/store/mongodb.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';

const tempDirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'store-contract-'));
  tempDirs.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  await dropTestDatabases();
});

const targets: { name: string; enabled: boolean; open: () => Promise<Store> }[] = [
  { name: 'embedded, in memory', enabled: true, open: () => openEmbeddedStore() },
  { name: 'embedded, file-backed', enabled: true, open: async () => openEmbeddedStore({ dir: await tempDir() }) },
  {
    name: 'mongodb (MONGODB_URL)',
    enabled: Boolean(MONGODB_URL),
    open: () => openMongoStore(mongoTestUrl('store_contract').url),
  },
];

for (const target of targets) {
  describe.runIf(target.enabled)(`store contract: ${target.name}`, () => storeContract(target.open));
}

interface Person extends Doc {
  name: string;
  age?: number;
  tags?: string[];
  address?: { city: string; zip?: string };
  note?: string | null;
  born?: Date;
}

const people: Person[] = [
  { _id: 'a', name: 'Ann', age: 30, tags: ['admin', 'dev'], address: { city: 'Oslo', zip: '0150' }, note: null, born: new Date('1994-01-01T00:00:00Z') },
  { _id: 'b', name: 'Bob', age: 25, tags: ['dev'], address: { city: 'Bergen' }, born: new Date('1999-06-01T00:00:00Z') },
  { _id: 'c', name: 'Cid', age: 40, tags: [], address: { city: 'Oslo' }, note: 'x' },
  { _id: 'd', name: 'Dee', age: 35 },
];

function storeContract(open: () => Promise<Store>): void {
  let store: Store;
  beforeEach(async () => {
    store = await open();
  });
  afterEach(async () => {
    await store?.close(); // undefined when opening failed (e.g. MongoDB unreachable)
  });

  const ids = async (collection: Collection<Doc>, filter: Filter) => (await collection.find(filter)).map((doc) => doc._id).sort();

  describe('documents', () => {
    it('returns inserted documents as plain copies, with nothing added', async () => {
      const things = store.collection<Doc>('things');
      const input = { _id: 't1', name: 'one', nested: { list: [1, 'two', { three: true }] }, empty: null };
      await things.insertOne(input);
      input.nested.list.push(4); // changing the caller's object afterwards must not reach the store

      const found = await things.findOne({ _id: 't1' });
      expect(found).toEqual({ _id: 't1', name: 'one', nested: { list: [1, 'two', { three: true }] }, empty: null });
      expect(Object.keys(found!).sort()).toEqual(['_id', 'empty', 'name', 'nested']);
      expect(Object.getPrototypeOf(found)).toBe(Object.prototype);

      (found!.nested as { list: unknown[] }).list.length = 0;
      expect(await things.findOne({ _id: 't1' })).toMatchObject({ nested: { list: [1, 'two', { three: true }] } });
      expect(await things.findOne({ _id: 'missing' })).toBeNull();
    });

    it('round-trips Dates as Date objects, through updates and projections, and compares them', async () => {
      const events = store.collection<Doc>('events');
      const at = new Date('2024-05-06T07:08:09.123Z');
      await events.insertOne({ _id: 'e1', at, nested: { seen: [at, new Date(0)] } });
      await events.insertOne({ _id: 'e2', at: new Date('2025-01-01T00:00:00Z') });

      const found = await events.findOne({ _id: 'e1' });
      expect(found!.at).toBeInstanceOf(Date);
      expect((found!.at as Date).toISOString()).toBe(at.toISOString());
      expect((found!.nested as { seen: Date[] }).seen[1]).toEqual(new Date(0));

      expect(await ids(events, { at: new Date(at.getTime()) })).toEqual(['e1']);
      expect(await ids(events, { at: { $gt: new Date('2024-12-31T00:00:00Z') } })).toEqual(['e2']);

      const later = new Date('2026-02-03T04:05:06Z');
      const updated = await events.findOneAndUpdate({ _id: 'e1' }, { $set: { at: later } });
      expect(updated!.at).toEqual(later);
      const [projected] = await events.find({ _id: 'e1' }, { projection: { at: 1 } });
      expect(projected).toEqual({ _id: 'e1', at: later });
    });

    it('a range of Dates matches Dates only: not null, missing, numbers, strings or objects (with an index or without)', async () => {
      const events = store.collection<Doc>('events');
      const at = (day: number) => new Date(Date.UTC(2026, 0, day));
      await events.insertMany([
        { _id: 'date', at: at(2) },
        { _id: 'null', at: null },
        { _id: 'missing' },
        { _id: 'zero', at: 0 },
        { _id: 'text', at: '2026-01-02' },
        { _id: 'object', at: { day: 2 } },
        { _id: 'later', at: at(3) },
      ]);
      const ranges = async () => [
        await ids(events, { at: { $lte: at(10) } }),
        await ids(events, { at: { $gte: at(1), $lt: at(10) } }),
        await ids(events, { at: { $gt: new Date(-8.64e15) } }),
        (await events.find({ at: { $lt: at(10) } }, { sort: { at: 1 }, limit: 10 })).map((d) => d._id).sort(),
      ];
      const dates = ['date', 'later'];
      expect(await ranges()).toEqual([dates, dates, dates, dates]);
      await store.ensureIndexes([{ collection: 'events', fields: ['at'] }]);
      expect(await ranges()).toEqual([dates, dates, dates, dates]);
    });

    it('counts and deletes, reporting how many were deleted', async () => {
      const things = store.collection<Doc>('things');
      await things.insertMany([1, 2, 3, 4, 5].map((n) => ({ _id: `t${n}`, n, even: n % 2 === 0 })));
      await things.insertMany([]);
      expect(await things.countDocuments({})).toBe(5);
      expect(await things.countDocuments({ even: true })).toBe(2);

      expect(await things.deleteOne({ even: false })).toBe(1);
      expect(await things.deleteOne({ _id: 'none' })).toBe(0);
      expect(await things.deleteMany({ even: true })).toBe(2);
      expect(await things.deleteMany({ even: true })).toBe(0);
      expect(await things.countDocuments({})).toBe(2);
      expect(await things.deleteMany({})).toBe(2);
      expect(await things.countDocuments({})).toBe(0);
    });
  });

  describe('filters', () => {
    let persons: Collection<Person>;
    beforeEach(async () => {
      persons = store.collection<Person>('people');
      await persons.insertMany(people);
    });
    const match = (filter: Filter) => ids(persons, filter);

    it('equality, dotted paths, sub-documents and array elements', async () => {
      expect(await match({})).toEqual(['a', 'b', 'c', 'd']);
      expect(await match({ name: 'Ann' })).toEqual(['a']);
      expect(await match({ name: { $eq: 'Dee' } })).toEqual(['d']);
      expect(await match({ 'address.city': 'Oslo' })).toEqual(['a', 'c']);
      expect(await match({ address: { city: 'Bergen' } })).toEqual(['b']);
      expect(await match({ tags: 'dev' })).toEqual(['a', 'b']);
      expect(await match({ tags: ['dev'] })).toEqual(['b']);
      expect(await match({ name: 'Ann', age: 31 })).toEqual([]);
    });

    it('null equality also matches missing fields', async () => {
      expect(await match({ note: null })).toEqual(['a', 'b', 'd']);
      expect(await match({ note: { $eq: null } })).toEqual(['a', 'b', 'd']);
      expect(await match({ note: { $ne: null } })).toEqual(['c']);
      expect(await match({ note: { $in: [null] } })).toEqual(['a', 'b', 'd']);
      expect(await match({ note: { $in: [null, 'x'] } })).toEqual(['a', 'b', 'c', 'd']);
      expect(await match({ note: { $nin: [null] } })).toEqual(['c']);
    });

    it('$in, $nin and $ne, on scalar and array fields', async () => {
      expect(await match({ age: { $in: [25, 40] } })).toEqual(['b', 'c']);
      expect(await match({ age: { $in: [] } })).toEqual([]);
      expect(await match({ tags: { $in: ['admin', 'nobody'] } })).toEqual(['a']);
      expect(await match({ age: { $nin: [25, 40] } })).toEqual(['a', 'd']);
      expect(await match({ tags: { $nin: ['dev'] } })).toEqual(['c', 'd']);
      expect(await match({ name: { $ne: 'Ann' } })).toEqual(['b', 'c', 'd']);
      expect(await match({ tags: { $ne: 'dev' } })).toEqual(['c', 'd']);
      expect(await match({ 'address.zip': { $ne: '0150' } })).toEqual(['b', 'c', 'd']);
    });

    it('$gt, $gte, $lt, $lte on numbers, strings and dates, and several operators on one field', async () => {
      expect(await match({ age: { $gt: 30 } })).toEqual(['c', 'd']);
      expect(await match({ age: { $gte: 30 } })).toEqual(['a', 'c', 'd']);
      expect(await match({ age: { $lt: 30 } })).toEqual(['b']);
      expect(await match({ age: { $lte: 30 } })).toEqual(['a', 'b']);
      expect(await match({ age: { $gt: 26, $lt: 36 } })).toEqual(['a', 'd']);
      expect(await match({ age: { $gte: 30, $ne: 35 } })).toEqual(['a', 'c']);
      expect(await match({ name: { $gte: 'B', $lt: 'D' } })).toEqual(['b', 'c']);
      expect(await match({ born: { $lt: new Date('1995-01-01T00:00:00Z') } })).toEqual(['a']);
      expect(await match({ born: { $gte: new Date('1995-01-01T00:00:00Z') } })).toEqual(['b']);
    });

    it('$exists, including null values and empty arrays', async () => {
      expect(await match({ note: { $exists: true } })).toEqual(['a', 'c']);
      expect(await match({ note: { $exists: false } })).toEqual(['b', 'd']);
      expect(await match({ tags: { $exists: true } })).toEqual(['a', 'b', 'c']);
      expect(await match({ tags: { $exists: false } })).toEqual(['d']);
      expect(await match({ 'address.zip': { $exists: true } })).toEqual(['a']);
    });

    it('$or and $and, nested and next to field conditions', async () => {
      expect(await match({ $or: [{ age: 25 }, { 'address.city': 'Oslo' }] })).toEqual(['a', 'b', 'c']);
      expect(await match({ $and: [{ age: { $gte: 30 } }, { $or: [{ tags: 'admin' }, { note: 'x' }] }] })).toEqual(['a', 'c']);
      expect(await match({ 'address.city': 'Oslo', $or: [{ age: 30 }, { age: 35 }] })).toEqual(['a']);
      expect(await match({ $and: [{ note: null }, { tags: { $ne: 'admin' } }] })).toEqual(['b', 'd']);
      expect(await persons.countDocuments({ $or: [{ note: { $exists: true } }, { age: { $lt: 30 } }] })).toBe(3);
    });

    it('sort, skip, limit and projection', async () => {
      const names = async (options: Parameters<Collection<Person>['find']>[1]) => (await persons.find({}, options)).map((p) => p.name);
      expect(await names({ sort: { age: 1 } })).toEqual(['Bob', 'Ann', 'Dee', 'Cid']);
      expect(await names({ sort: { age: -1 } })).toEqual(['Cid', 'Dee', 'Ann', 'Bob']);
      expect(await names({ sort: { 'address.city': 1, age: -1 } })).toEqual(['Dee', 'Bob', 'Cid', 'Ann']);
      expect(await names({ sort: { age: 1 }, skip: 1, limit: 2 })).toEqual(['Ann', 'Dee']);
      expect(await names({ sort: { name: -1 }, limit: 1 })).toEqual(['Dee']);

      expect(await persons.find({ _id: 'a' }, { projection: { name: 1, age: 1 } })).toEqual([{ _id: 'a', name: 'Ann', age: 30 }]);
      expect(await persons.find({ _id: 'a' }, { projection: { _id: 0, name: 1 } })).toEqual([{ name: 'Ann' }]);
      expect(await persons.find({ _id: 'b' }, { projection: { tags: 0, address: 0, born: 0 } })).toEqual([{ _id: 'b', name: 'Bob', age: 25 }]);
    });

    it('a range of an indexed field sorted on it: limits, skips, both directions, ties at the limit, projection', async () => {
      // The shape the ledger's batches and pages take (the embedded store walks the index in order for it).
      const events = store.collection<Doc & { at: Date; n: number; kind: string }>('events');
      await store.ensureIndexes([{ collection: 'events', fields: ['at'] }]);
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
      // Inserted out of order; seconds 3 and 5 are shared by two events each.
      const seconds = [5, 1, 3, 9, 3, 7, 5, 2];
      await events.insertMany(seconds.map((s, i) => ({ _id: `e${i}`, at: at(s), n: i, kind: i % 2 ? 'odd' : 'even' })));
      const found = async (filter: Filter, options: Parameters<typeof events.find>[1]) => (await events.find(filter, options)).map((e) => e.n);

      const from2to7 = { at: { $gte: at(2), $lt: at(7) } };
      expect(await found(from2to7, { sort: { at: 1, _id: 1 } })).toEqual([7, 2, 4, 0, 6]);
      expect(await found(from2to7, { sort: { at: 1, _id: 1 }, limit: 2 })).toEqual([7, 2]);
      // The limit falls inside a tie (second 3): the whole sort decides which of the tied ones come first.
      expect(await found(from2to7, { sort: { at: 1, _id: -1 }, limit: 2 })).toEqual([7, 4]);
      expect(await found(from2to7, { sort: { at: -1, _id: 1 }, limit: 3 })).toEqual([0, 6, 2]);
      expect(await found(from2to7, { sort: { at: 1, _id: 1 }, skip: 2, limit: 2 })).toEqual([4, 0]);
      expect(await found({ ...from2to7, kind: 'odd' }, { sort: { at: 1 } })).toEqual([7]);
      expect(await found({ at: { $gt: at(5) } }, { sort: { at: -1 } })).toEqual([3, 5]);
      expect(await found({ at: { $lte: at(1) } }, { sort: { at: 1 }, limit: 0 })).toEqual([1]);
      expect(await events.find({ at: { $lt: at(2) } }, { sort: { at: 1 }, projection: { n: 1 } })).toEqual([{ _id: 'e1', n: 1 }]);
      expect(await events.find({ at: { $gt: at(8) } }, { sort: { at: 1 }, projection: { _id: 0, at: 1 } })).toEqual([{ at: at(9) }]);
      expect(await events.find({ at: { $gt: at(8) } }, { sort: { at: 1 }, projection: { kind: 0, at: 0 } })).toEqual([{ _id: 'e3', n: 3 }]);
      // What a projection hands out is a copy: changing it changes nothing stored.
      await events.updateOne({ _id: 'e3' }, { $set: { tags: ['a'] } });
      const [picked] = await events.find({ at: { $gt: at(8) } }, { sort: { at: 1 }, projection: { tags: 1, missing: 1 } });
      expect(picked).toEqual({ _id: 'e3', tags: ['a'] });
      (picked!.tags as string[]).push('b');
      expect((await events.findOne({ _id: 'e3' }))?.tags).toEqual(['a']);
    });

    it('every range of an indexed field sorted on it, in both directions and with limits, is the matching documents in order', async () => {
      // Bounds below, above, around and inside the keys; one side or two; ties. (The embedded store walks its index
      // tree for these, stopping at the limit: a walk that left the tree early or late would show here.)
      const marks = store.collection<Doc & { n: number }>('marks');
      await store.ensureIndexes([{ collection: 'marks', fields: ['n'] }]);
      const values = Array.from({ length: 60 }, (_, i) => (i * 37) % 41); // 0..40 scrambled, 19 of them twice
      await marks.insertMany(values.map((n, i) => ({ _id: `m${String(i).padStart(2, '0')}`, n })));
      const bounds: Array<Record<string, number>> = [
        { $gte: 10, $lt: 20 },
        { $gt: 10, $lte: 20 },
        { $gte: -5 },
        { $gt: 40 },
        { $gte: 40 },
        { $lt: 0 },
        { $lte: 0 },
        { $lt: 100 },
        { $gt: 50 },
        { $lt: -1 },
        { $gte: 15, $lte: 15 },
        { $gt: 15, $lt: 16 },
        { $gte: 30, $lt: 10 },
      ];
      const inside = (n: number, b: Record<string, number>) =>
        (b.$gt === undefined || n > b.$gt) &&
        (b.$gte === undefined || n >= b.$gte) &&
        (b.$lt === undefined || n < b.$lt) &&
        (b.$lte === undefined || n <= b.$lte);
      for (const b of bounds) {
        for (const direction of [1, -1] as const) {
          const expected = values
            .map((n, i) => ({ n, id: `m${String(i).padStart(2, '0')}` }))
            .filter(({ n }) => inside(n, b))
            .sort((x, y) => direction * (x.n - y.n) || x.id.localeCompare(y.id))
            .map(({ id }) => id);
          for (const limit of [undefined, 1, 7]) {
            const found = await marks.find({ n: b }, { sort: { n: direction, _id: 1 }, ...(limit ? { limit } : {}) });
            expect(
              found.map((m) => m._id),
              `${JSON.stringify(b)} ${direction} ${limit}`,
            ).toEqual(expected.slice(0, limit));
          }
        }
      }
    });

    it('a closed range of an indexed field among values of every type, with conditions on other fields, is what matches', async () => {
      // Only values of the bounds' type sort between them; the other fields' conditions still hold (the embedded
      // store matches only those on what its walk of the range meets).
      const mixed = store.collection<Doc & { v?: unknown; tag?: string | null }>('mixed');
      await store.ensureIndexes([{ collection: 'mixed', fields: ['v'] }]);
      const day = (d: number) => new Date(Date.UTC(2026, 0, d));
      const values: unknown[] = [3, 'c', day(3), 7, 'g', day(7), null, true, { k: 5 }, 5, 'e', day(5), 5, 'e', day(5), { k: 6 }, 1.5, 'a', day(1)];
      const tags = [undefined, 'a', 'b', null];
      const docs = values.map((v, i) =>
        Object.assign({ _id: `x${String(i).padStart(2, '0')}` }, v === undefined ? {} : { v }, tags[i % 4] === undefined ? {} : { tag: tags[i % 4] }),
      );
      await mixed.insertMany([...docs, { _id: 'x99', tag: 'a' }]);
      const ranges: Array<[Record<string, unknown>, (v: unknown) => boolean]> = [
        [{ $gte: 3, $lt: 7 }, (v) => typeof v === 'number' && v >= 3 && v < 7],
        [{ $gt: 3, $lte: 7 }, (v) => typeof v === 'number' && v > 3 && v <= 7],
        [{ $gte: 'b', $lte: 'e' }, (v) => typeof v === 'string' && v >= 'b' && v <= 'e'],
        [{ $gt: day(3), $lt: day(8) }, (v) => v instanceof Date && v > day(3) && v < day(8)],
        // Open on one side: values of every type sort beyond the bound, only those of its type are in the range.
        [{ $gt: 4 }, (v) => typeof v === 'number' && v > 4],
        [{ $lt: 'd' }, (v) => typeof v === 'string' && v < 'd'],
      ];
      const tagged: Array<[Filter, (tag: unknown) => boolean]> = [
        [{}, () => true],
        [{ tag: 'a' }, (tag) => tag === 'a'],
        [{ tag: { $in: ['b', null] } }, (tag) => tag === 'b' || tag === null || tag === undefined],
        [{ tag: { $ne: 'a' } }, (tag) => tag !== 'a'],
      ];
      for (const [range, inside] of ranges) {
        for (const [other, holds] of tagged) {
          for (const direction of [1, -1] as const) {
            const value = (d: Doc) => (d as { v?: unknown }).v as number | string | Date;
            const expected = docs
              .filter((d) => inside(value(d)) && holds((d as { tag?: unknown }).tag))
              .sort((x, y) => {
                const [a, b] = [value(x), value(y)];
                return direction * (a < b ? -1 : a > b ? 1 : 0) || x._id.localeCompare(y._id);
              })
              .map((d) => d._id);
            for (const limit of [undefined, 2]) {
              const found = await mixed.find(Object.assign({ v: range }, other), { sort: { v: direction, _id: 1 }, ...(limit ? { limit } : {}) });
              expect(
                found.map((d) => d._id),
                `${JSON.stringify(range)} ${JSON.stringify(other)} ${direction} ${limit}`,
              ).toEqual(expected.slice(0, limit));
            }
          }
        }
      }
      // An array is in the range by an element.
      await mixed.insertOne({ _id: 'y', v: [1, 6, 'z'], tag: 'b' });
      expect((await mixed.find({ v: { $gt: 5, $lt: 7 }, tag: 'b' }, { sort: { v: 1 } })).map((d) => d._id)).toEqual(['y']);
      expect(await mixed.find({ v: { $gt: 5, $lt: 7 }, tag: 'a' }, { sort: { v: 1 } })).toEqual([]);
    });

    it('rejects what is outside the dialect, on every adapter', async () => {
      await expect(persons.find({ name: { $regex: '^A' } })).rejects.toBeInstanceOf(DialectError);
      await expect(persons.find({ name: /^A/ })).rejects.toBeInstanceOf(DialectError);
      await expect(persons.find({ $where: 'true' })).rejects.toBeInstanceOf(DialectError);
      await expect(persons.countDocuments({ $or: [] })).rejects.toBeInstanceOf(DialectError);
      await expect(persons.findOne({ age: { $gt: 1, plain: 2 } })).rejects.toBeInstanceOf(DialectError);
      await expect(persons.deleteMany({ age: { $in: 25 } })).rejects.toBeInstanceOf(DialectError);
      expect(() => store.collection('../escape')).toThrow(DialectError);
      expect(await persons.countDocuments({})).toBe(4);
    });
  });

  describe('updates', () => {
    let docs: Collection<Doc>;
    beforeEach(async () => {
      docs = store.collection<Doc>('docs');
      await docs.insertOne({
        _id: 'x',
        name: 'x',
        n: 5,
        tags: ['a', 'b'],
        items: [
          { sku: 'p', qty: 1 },
          { sku: 'q', qty: 5 },
        ],
        note: 'n',
      });
      await docs.insertOne({ _id: 'y', name: 'y', n: 1 });
    });
    const get = async (id = 'x') => (await docs.findOne({ _id: id }))!;

    it('$set (creating nested paths) and $unset', async () => {
      expect(await docs.updateOne({ _id: 'x' }, { $set: { name: 'x2', 'profile.plan': 'pro' }, $unset: { note: '' } })).toEqual({
        matched: 1,
        modified: 1,
        upserted: false,
      });
      const doc = await get();
      expect(doc).toMatchObject({ name: 'x2', profile: { plan: 'pro' } });
      expect('note' in doc).toBe(false);
      await docs.updateOne({ _id: 'x' }, { $unset: { 'profile.plan': 1 } });
      expect((await get()).profile).toEqual({});
    });

    it('reports modified 0 when nothing changes, and matched 0 when nothing matches', async () => {
      expect(await docs.updateOne({ _id: 'x' }, { $set: { name: 'x' } })).toEqual({ matched: 1, modified: 0, upserted: false });
      expect(await docs.updateOne({ _id: 'none' }, { $set: { name: 'z' } })).toEqual({ matched: 0, modified: 0, upserted: false });
      expect(await docs.updateMany({ n: { $gte: 1 } }, { $set: { name: 'x' } })).toEqual({ matched: 2, modified: 1 });
      expect(await docs.countDocuments({ name: 'x' })).toBe(2);
    });

    it('$inc on existing and missing fields, $min and $max on numbers and dates', async () => {
      await docs.updateOne({ _id: 'x' }, { $inc: { n: -2, hits: 3 } });
      expect(await get()).toMatchObject({ n: 3, hits: 3 });

      expect(await docs.updateOne({ _id: 'x' }, { $max: { n: 10 }, $min: { low: 7 } })).toMatchObject({ modified: 1 });
      expect(await get()).toMatchObject({ n: 10, low: 7 });
      expect(await docs.updateOne({ _id: 'x' }, { $max: { n: 4 }, $min: { low: 9 } })).toMatchObject({ modified: 0 });
      await docs.updateOne({ _id: 'x' }, { $min: { low: 2 } });
      expect((await get()).low).toBe(2);

      const early = new Date('2020-01-01T00:00:00Z');
      const late = new Date('2021-01-01T00:00:00Z');
      await docs.updateOne({ _id: 'x' }, { $min: { first: late }, $max: { last: early } });
      await docs.updateOne({ _id: 'x' }, { $min: { first: early }, $max: { last: late } });
      expect(await get()).toMatchObject({ first: early, last: late });
    });

    it('$push, $addToSet and $pull', async () => {
      await docs.updateOne({ _id: 'x' }, { $push: { tags: 'c', fresh: 1 } });
      await docs.updateOne({ _id: 'x' }, { $push: { tags: { $each: ['d', 'a'] } } });
      expect(await get()).toMatchObject({ tags: ['a', 'b', 'c', 'd', 'a'], fresh: [1] });

      expect(await docs.updateOne({ _id: 'x' }, { $addToSet: { tags: 'b' } })).toMatchObject({ matched: 1, modified: 0 });
      await docs.updateOne({ _id: 'x' }, { $addToSet: { tags: { $each: ['b', 'e'] }, other: 'o' } });
      expect(await get()).toMatchObject({ tags: ['a', 'b', 'c', 'd', 'a', 'e'], other: ['o'] });

      await docs.updateOne({ _id: 'x' }, { $pull: { tags: 'a' } });
      expect((await get()).tags).toEqual(['b', 'c', 'd', 'e']);
      expect(await docs.updateOne({ _id: 'x' }, { $pull: { tags: { $in: ['b', 'e', 'none'] }, fresh: 1 } })).toMatchObject({ modified: 1 });
      expect(await get()).toMatchObject({ tags: ['c', 'd'], fresh: [] });
      expect(await docs.updateMany({}, { $pull: { tags: { $in: ['c'] } } })).toEqual({ matched: 2, modified: 1 });
      expect((await get()).tags).toEqual(['d']);

      expect(await docs.updateOne({ _id: 'y' }, { $pull: { tags: 'a' } })).toEqual({ matched: 1, modified: 0, upserted: false });
    });

    it('$pull with a condition or a sub-document filter: applied, or refused where the server lacks it (FerretDB)', async () => {
      const pulls = [{ $pull: { items: { qty: { $lt: 2 } } } }, { $pull: { items: { sku: 'q' } } }];
      if (store.mongo?.server === 'ferretdb') {
        // FerretDB would remove nothing and report success; the adapter says so instead.
        for (const update of pulls) await expect(docs.updateOne({ _id: 'x' }, update)).rejects.toThrow(DialectError);
        await expect(docs.updateOne({ _id: 'x' }, pulls[0]!)).rejects.toThrow(/\$pull with a condition .*items.* not implemented by FerretDB/);
        expect((await get()).items).toHaveLength(2);
        return;
      }
      await docs.updateOne({ _id: 'x' }, pulls[0]!);
      expect((await get()).items).toEqual([{ sku: 'q', qty: 5 }]);
      await docs.updateOne({ _id: 'x' }, pulls[1]!);
      expect((await get()).items).toEqual([]);
    });

    it('a conditional update on a dotted path through an array of sub-documents (open charges of the ledger)', async () => {
      await docs.insertOne({
        _id: 'w',
        name: 'w',
        balance: 10,
        open: [
          { id: 'c1', cost: 1 },
          { id: 'c2', cost: 2 },
        ],
      });
      const close = (id: string, refund: number) => docs.updateOne({ _id: 'w', 'open.id': id }, { $pull: { open: { id } }, $inc: { balance: refund } });
      if (store.mongo?.server === 'ferretdb') {
        // A pull by sub-document filter, which FerretDB lacks (see the test above): refused, nothing changed.
        await expect(close('c2', 2)).rejects.toBeInstanceOf(DialectError);
        expect(await docs.findOne({ _id: 'w' })).toMatchObject({ balance: 10, open: [{ id: 'c1' }, { id: 'c2' }] });
        expect(await docs.countDocuments({ 'open.id': 'c2' })).toBe(1);
        return;
      }
      expect(await close('c2', 2)).toMatchObject({ matched: 1, modified: 1 });
      expect(await close('c2', 2)).toMatchObject({ matched: 0, modified: 0 });
      expect(await docs.findOne({ _id: 'w' })).toMatchObject({ balance: 12, open: [{ id: 'c1', cost: 1 }] });
      await docs.updateOne(
        { _id: 'w' },
        {
          $push: {
            open: {
              $each: [
                { id: 'c3', cost: 3 },
                { id: 'c4', cost: 4 },
              ],
            },
          },
        },
      );
      await docs.updateOne({ _id: 'w' }, { $pull: { open: { id: { $in: ['c1', 'c4', 'c9'] } } } });
      expect((await docs.findOne({ _id: 'w' }))!.open).toEqual([{ id: 'c3', cost: 3 }]);
    });

    it('updateMany updates every match; updateOne only one', async () => {
      await docs.insertOne({ _id: 'z', name: 'z', n: 1 });
      expect(await docs.updateOne({ n: 1 }, { $inc: { n: 10 } })).toEqual({ matched: 1, modified: 1, upserted: false });
      expect(await docs.countDocuments({ n: 11 })).toBe(1);
      expect(await docs.updateMany({ n: { $gte: 5 } }, { $set: { big: true } })).toEqual({ matched: 2, modified: 2 });
      expect(await docs.updateMany({}, { $set: { big: true } })).toEqual({ matched: 3, modified: 1 });
      expect(await docs.countDocuments({ big: true })).toBe(3);
      expect(await docs.updateMany({ n: 1000 }, { $set: { big: false } })).toEqual({ matched: 0, modified: 0 });
    });

    it('findOneAndUpdate returns the document after by default, or before', async () => {
      expect(await docs.findOneAndUpdate({ _id: 'x' }, { $inc: { n: 1 } })).toMatchObject({ _id: 'x', n: 6 });
      expect(await docs.findOneAndUpdate({ _id: 'x' }, { $inc: { n: 1 } }, { returnDocument: 'after' })).toMatchObject({ n: 7 });
      expect(await docs.findOneAndUpdate({ _id: 'x' }, { $inc: { n: 1 } }, { returnDocument: 'before' })).toMatchObject({ n: 7 });
      expect((await get()).n).toBe(8);
      expect(await docs.findOneAndUpdate({ _id: 'x', n: { $lt: 0 } }, { $inc: { n: 1 } })).toBeNull();
      expect((await get()).n).toBe(8);
    });

    it("hands out copies: changing a returned document, or the update's own values, changes nothing stored", async () => {
      const pushed = { id: 'p1', tags: ['a'] };
      const after = (await docs.findOneAndUpdate({ _id: 'x' }, { $push: { list: pushed }, $set: { n: 1 } }))!;
      const before = (await docs.findOneAndUpdate({ _id: 'x' }, { $set: { n: 2 } }, { returnDocument: 'before' }))!;
      pushed.tags.push('b');
      (after.list as unknown[]).length = 0;
      (before.list as Array<{ tags: string[] }>)[0]!.tags.push('c');
      after.n = 100;
      expect(await get()).toMatchObject({ n: 2, list: [{ id: 'p1', tags: ['a'] }] });
    });

    it('rejects update documents outside the dialect', async () => {
      const invalid: unknown[] = [
        { name: 'replacement' },
        {},
        { $rename: { name: 'title' } },
        { $set: { n: 1 }, $inc: { n: 1 } },
        { $set: { profile: {}, 'profile.plan': 'x' } },
        { $push: { tags: { $each: ['a'], $slice: 1 } } },
      ];
      for (const update of invalid) {
        await expect(docs.updateOne({ _id: 'x' }, update as never)).rejects.toBeInstanceOf(DialectError);
      }
      expect((await get()).n).toBe(5);
    });
  });

  describe('upserts', () => {
    it('inserts from the filter equalities plus the update, applying $setOnInsert only on insert', async () => {
      const counters = store.collection<Doc>('counters');
      const created = new Date('2024-01-01T00:00:00Z');
      const upsert = () =>
        counters.updateOne(
          { _id: 'k1', owner: 'o1', hits: { $gte: 0 } },
          { $setOnInsert: { created, balance: 0 }, $inc: { hits: 1 }, $set: { seen: true } },
          { upsert: true },
        );
      expect(await upsert()).toEqual({ matched: 0, modified: 0, upserted: true });
      expect(await counters.findOne({ _id: 'k1' })).toEqual({ _id: 'k1', owner: 'o1', created, balance: 0, hits: 1, seen: true });
      await counters.updateOne({ _id: 'k1' }, { $set: { balance: 5 } });
      expect(await upsert()).toEqual({ matched: 1, modified: 1, upserted: false });
      expect(await counters.findOne({ _id: 'k1' })).toEqual({ _id: 'k1', owner: 'o1', created, balance: 5, hits: 2, seen: true });
    });

    it('takes equalities from dotted paths and $and, generates a string _id, and ignores $setOnInsert without upsert', async () => {
      const things = store.collection<Doc>('things');
      const result = await things.updateOne({ 'scope.owner': 'o2', $and: [{ kind: 'k' }, { n: { $gt: 1 } }] }, { $set: { v: 1 } }, { upsert: true });
      expect(result.upserted).toBe(true);
      const [doc] = await things.find({});
      expect(typeof doc!._id).toBe('string');
      expect(doc!._id.length).toBeGreaterThan(8);
      expect(doc).toEqual({ _id: doc!._id, scope: { owner: 'o2' }, kind: 'k', v: 1 });

      await things.updateOne({ _id: doc!._id }, { $set: { v: 2 }, $setOnInsert: { never: true } });
      expect(await things.findOne({ _id: doc!._id })).toEqual({ ...doc, v: 2 });

      const chosen = await things.findOneAndUpdate({ kind: 'other' }, { $setOnInsert: { _id: 'chosen' } }, { upsert: true });
      expect(chosen).toEqual({ _id: 'chosen', kind: 'other' });
    });

    it('findOneAndUpdate upserts, returning null for "before" and the new document for "after"', async () => {
      const things = store.collection<Doc>('things');
      expect(await things.findOneAndUpdate({ _id: 'u1' }, { $inc: { n: 1 } }, { upsert: true, returnDocument: 'before' })).toBeNull();
      expect(await things.findOneAndUpdate({ _id: 'u2' }, { $inc: { n: 1 } }, { upsert: true })).toEqual({ _id: 'u2', n: 1 });
      expect(await things.findOneAndUpdate({ _id: 'u1' }, { $inc: { n: 1 } }, { upsert: true })).toEqual({ _id: 'u1', n: 2 });
      expect(await things.findOneAndUpdate({ _id: 'none' }, { $inc: { n: 1 } })).toBeNull();
      expect(await things.countDocuments({})).toBe(2);
    });

    it('an upsert of $setOnInsert alone writes a document once and then returns it as it is (concurrent ones too)', async () => {
      const tokens = store.collection<Doc>('tokens');
      const write = (expires: number) => tokens.findOneAndUpdate({ _id: 't1' }, { $setOnInsert: { grant: 'g', expires, used: null } }, { upsert: true });
      const [a, b] = await Promise.all([write(1), write(2)]);
      expect(b).toEqual(a);
      await tokens.updateOne({ _id: 't1' }, { $set: { used: 'now' } });
      expect(await write(3)).toEqual({ ...a, used: 'now' });
      expect(await tokens.countDocuments({})).toBe(1);
    });

    it('a conditional upsert whose condition fails on an existing _id is a duplicate key', async () => {
      const accounts = store.collection<Doc>('accounts');
      await accounts.insertOne({ _id: 'acct', balance: 1 });
      await expect(accounts.findOneAndUpdate({ _id: 'acct', balance: { $gte: 5 } }, { $inc: { balance: -5 } }, { upsert: true })).rejects.toMatchObject({
        name: 'DuplicateKeyError',
        collection: 'accounts',
        fields: ['_id'],
      });
      expect(await accounts.findOne({ _id: 'acct' })).toEqual({ _id: 'acct', balance: 1 });
    });
  });

  describe('bulk updates', () => {
    it('applies many single-document updates at once and returns the totals', async () => {
      const keys = store.collection<Doc>('keys');
      const early = new Date('2024-01-01T00:00:00Z');
      const late = new Date('2024-06-01T00:00:00Z');
      await keys.insertMany([
        { _id: 'k1', last: early },
        { _id: 'k2', last: late },
        { _id: 'k3', last: null },
      ]);
      const result = await keys.bulkUpdate([
        { filter: { _id: 'k1' }, update: { $max: { last: late } } },
        { filter: { _id: 'k2' }, update: { $max: { last: early } } }, // older: changes nothing
        { filter: { _id: 'k3' }, update: { $set: { last: early }, $inc: { uses: 2 } } },
        { filter: { _id: 'gone' }, update: { $max: { last: late } } }, // never upserted
      ]);
      expect(result).toEqual({ matched: 3, modified: 2 });
      expect(await keys.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: 'k1', last: late },
        { _id: 'k2', last: late },
        { _id: 'k3', last: early, uses: 2 },
      ]);
      expect(await keys.bulkUpdate([])).toEqual({ matched: 0, modified: 0 });
      await expect(keys.bulkUpdate([{ filter: { _id: 'k1' }, update: { $rename: { last: 'first' } } as never }])).rejects.toBeInstanceOf(DialectError);
    });

    it('reports a unique-index violation as a DuplicateKeyError', async () => {
      await store.ensureIndexes([{ collection: 'keys', fields: ['hash'], unique: true }]);
      const keys = store.collection<Doc>('keys');
      await keys.insertMany([
        { _id: 'k1', hash: 'h1' },
        { _id: 'k2', hash: 'h2' },
      ]);
      await expect(keys.bulkUpdate([{ filter: { _id: 'k2' }, update: { $set: { hash: 'h1' } } }])).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await keys.findOne({ _id: 'k2' })).toEqual({ _id: 'k2', hash: 'h2' });
    });
  });

  describe('atomicity', () => {
    it('50 concurrent conditional decrements never overdraw', async () => {
      const credits = store.collection<Doc & { balance: number }>('credits');
      await credits.insertOne({ _id: 'owner', balance: 25 });
      const results = await Promise.all(
        Array.from({ length: 50 }, () => credits.findOneAndUpdate({ _id: 'owner', balance: { $gte: 2 } }, { $inc: { balance: -2 } })),
      );
      const granted = results
        .filter((doc) => doc !== null)
        .map((doc) => doc.balance)
        .sort((a, b) => b - a);
      expect(granted).toEqual([23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1]);
      expect((await credits.findOne({ _id: 'owner' }))!.balance).toBe(1);
    });

    it('of concurrent test-and-set updates of one document, exactly one matches', async () => {
      const codes = store.collection<Doc>('codes');
      await codes.insertOne({ _id: 'code', used: false, n: 0 });
      const results = await Promise.all(
        Array.from({ length: 20 }, () => codes.updateOne({ _id: 'code', used: false }, { $inc: { n: 1 }, $set: { used: true } })),
      );
      expect(results.filter((r) => r.matched === 1)).toHaveLength(1);
      expect(await codes.findOne({ _id: 'code' })).toEqual({ _id: 'code', used: true, n: 1 });
    });

    it('concurrent increments lose no update', async () => {
      const counters = store.collection<Doc>('counters');
      await counters.insertOne({ _id: 'c', n: 0 });
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          i % 2 ? counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } }) : counters.updateMany({ _id: 'c' }, { $inc: { n: 1 } }),
        ),
      );
      expect(await counters.findOne({ _id: 'c' })).toEqual({ _id: 'c', n: 50 });
    });
  });

  describe('unique indexes', () => {
    beforeEach(async () => {
      const specs = [
        { collection: 'keys', fields: ['hash'], unique: true },
        { collection: 'tools', fields: ['server', 'name'], unique: true },
        { collection: 'owners', fields: ['email'], unique: true, sparse: true },
        { collection: 'tools', fields: ['server'] },
      ];
      await store.ensureIndexes(specs);
      await store.ensureIndexes(specs); // idempotent
    });

    it('accepts TTL indexes (expiring documents where the server has them) and builds them once', async () => {
      const specs = [{ collection: 'sessions', fields: ['expires_at'], expireAfterSeconds: 0 }];
      await store.ensureIndexes(specs);
      await store.ensureIndexes(specs);
      const sessions = store.collection<Doc>('sessions');
      const soon = new Date(Date.now() + 3_600_000);
      await sessions.insertOne({ _id: 's1', expires_at: soon });
      expect(await sessions.find({ expires_at: { $gt: new Date() } })).toEqual([{ _id: 's1', expires_at: soon }]);
    });

    it('single-field: insert, update and upsert violations are DuplicateKeyErrors naming the field', async () => {
      const keys = store.collection<Doc>('keys');
      await keys.insertOne({ _id: 'k1', hash: 'h1' });
      await keys.insertOne({ _id: 'k2', hash: 'h2' });
      const duplicate = { name: 'DuplicateKeyError', collection: 'keys', fields: ['hash'] };

      await expect(keys.insertOne({ _id: 'k3', hash: 'h1' })).rejects.toMatchObject(duplicate);
      await expect(keys.insertOne({ _id: 'k3', hash: 'h1' })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(keys.updateOne({ _id: 'k2' }, { $set: { hash: 'h1' } })).rejects.toMatchObject(duplicate);
      await expect(keys.findOneAndUpdate({ _id: 'k2' }, { $set: { hash: 'h1' } })).rejects.toMatchObject(duplicate);
      await expect(keys.updateOne({ _id: 'k9' }, { $set: { hash: 'h2' } }, { upsert: true })).rejects.toMatchObject(duplicate);
      await expect(
        keys.insertMany([
          { _id: 'k4', hash: 'h4' },
          { _id: 'k5', hash: 'h4' },
        ]),
      ).rejects.toMatchObject(duplicate);

      expect(await keys.findOne({ _id: 'k2' })).toEqual({ _id: 'k2', hash: 'h2' });
      expect(await keys.countDocuments({ hash: { $in: ['h1', 'h2'] } })).toBe(2);
      expect(await keys.countDocuments({ _id: { $in: ['k3', 'k9'] } })).toBe(0);
    });

    it('a duplicate _id is a DuplicateKeyError naming _id', async () => {
      const keys = store.collection<Doc>('keys');
      await keys.insertOne({ _id: 'k1', hash: 'h1' });
      await expect(keys.insertOne({ _id: 'k1', hash: 'other' })).rejects.toMatchObject({ name: 'DuplicateKeyError', fields: ['_id'] });
    });

    it('compound: only the same combination collides', async () => {
      const tools = store.collection<Doc>('tools');
      await tools.insertOne({ _id: 't1', server: 's1', name: 'search' });
      await tools.insertOne({ _id: 't2', server: 's2', name: 'search' });
      await tools.insertOne({ _id: 't3', server: 's1', name: 'create' });
      await expect(tools.insertOne({ _id: 't4', server: 's1', name: 'search' })).rejects.toMatchObject({
        name: 'DuplicateKeyError',
        collection: 'tools',
        fields: ['server', 'name'],
      });
      await expect(tools.updateOne({ _id: 't3' }, { $set: { name: 'search' } })).rejects.toMatchObject({
        name: 'DuplicateKeyError',
        fields: ['server', 'name'],
      });
      await tools.updateOne({ _id: 't3' }, { $set: { server: 's3', name: 'search' } });
      expect(await tools.find({ name: 'search' }, { sort: { server: 1 } })).toEqual([
        { _id: 't1', server: 's1', name: 'search' },
        { _id: 't2', server: 's2', name: 'search' },
        { _id: 't3', server: 's3', name: 'search' },
      ]);
    });

    it('sparse unique indexes never collide on missing fields', async () => {
      // (Two documents without the field of a non-sparse unique index collide on MongoDB and the embedded
      // store, not on FerretDB: code sets the field or uses sparse; see port.ts.)
      const owners = store.collection<Doc>('owners');
      await owners.insertMany([{ _id: 'o1' }, { _id: 'o2' }, { _id: 'o3', email: 'a@example.test' }]);
      await expect(owners.insertOne({ _id: 'o4', email: 'a@example.test' })).rejects.toMatchObject({ name: 'DuplicateKeyError', fields: ['email'] });
      expect(await owners.countDocuments({})).toBe(3);
    });

    it('creating a unique index over existing duplicates fails with DuplicateKeyError', async () => {
      const logins = store.collection<Doc>('logins');
      await logins.insertMany([
        { _id: 'l1', user: 'u' },
        { _id: 'l2', user: 'u' },
      ]);
      await expect(store.ensureIndexes([{ collection: 'logins', fields: ['user'], unique: true }])).rejects.toMatchObject({
        name: 'DuplicateKeyError',
        collection: 'logins',
        fields: ['user'],
      });
      await logins.insertOne({ _id: 'l3', user: 'u' }); // no index was left behind
    });
  });

  describe('refused writes', () => {
    it('refuses every write while a source refuses them, reads go on, and status says why', async () => {
      const things = store.collection<Doc & { n?: number }>('things');
      await things.insertOne({ _id: 't', n: 1 });
      expect(await store.status(500)).toEqual({ ok: true });
      store.refuseWrites('clock', 'the clock is 95 s away from the store', 30);
      const refusal = { name: 'StoreUnavailableError', message: 'the clock is 95 s away from the store', retryAfterSeconds: 30 };
      await expect(things.insertOne({ _id: 'u' })).rejects.toMatchObject(refusal);
      await expect(things.insertMany([{ _id: 'u' }])).rejects.toMatchObject(refusal);
      await expect(things.updateOne({ _id: 't' }, { $inc: { n: 1 } })).rejects.toMatchObject(refusal);
      await expect(things.updateMany({}, { $inc: { n: 1 } })).rejects.toMatchObject(refusal);
      await expect(things.bulkUpdate([{ filter: { _id: 't' }, update: { $inc: { n: 1 } } }])).rejects.toMatchObject(refusal);
      await expect(things.findOneAndUpdate({ _id: 't' }, { $inc: { n: 1 } })).rejects.toMatchObject(refusal);
      await expect(things.deleteOne({ _id: 't' })).rejects.toMatchObject(refusal);
      await expect(things.deleteMany({})).rejects.toMatchObject(refusal);
      expect(await things.findOne({ _id: 't' })).toEqual({ _id: 't', n: 1 });
      expect(await store.status(500)).toEqual({ ok: false, reason: 'the clock is 95 s away from the store', retryAfterSeconds: 30 });
      store.allowWrites('clock');
      await things.updateOne({ _id: 't' }, { $inc: { n: 1 } });
      expect(await things.findOne({ _id: 't' })).toEqual({ _id: 't', n: 2 });
      expect(await store.status(500)).toEqual({ ok: true });
    });
  });
}

describe('embedded store, file-backed specifics', () => {
  const lines = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  /** A copy of a store's folder as it is on disk now. */
  const copyOf = async (dir: string) => {
    const copy = await tempDir();
    await cp(dir, copy, { recursive: true, filter: (file) => path.basename(file) !== LOCK_FILE }); // the copy is nobody's
    return copy;
  };

  it('persists documents, Dates and unique indexes across close and reopen', async () => {
    const dir = await tempDir();
    const born = new Date('2001-02-03T04:05:06.789Z');
    const first = await openStore({ dataDir: dir });
    expect(first.kind).toBe('embedded');
    await first.ensureIndexes([{ collection: 'owners', fields: ['email'], unique: true }]);
    const owners = first.collection<Doc>('owners');
    await owners.insertMany([
      { _id: 'o1', email: 'a@x.test', born },
      { _id: 'o2', email: 'b@x.test' },
      { _id: 'o3', email: 'c@x.test' },
    ]);
    await owners.updateOne({ _id: 'o2' }, { $set: { plan: 'pro' } });
    await owners.deleteOne({ _id: 'o3' });
    await first.close();

    const second = await openStore({ dataDir: dir });
    const reopened = second.collection<Doc>('owners');
    expect(await reopened.find({}, { sort: { _id: 1 } })).toEqual([
      { _id: 'o1', email: 'a@x.test', born },
      { _id: 'o2', email: 'b@x.test', plan: 'pro' },
    ]);
    expect((await reopened.findOne({ _id: 'o1' }))!.born).toBeInstanceOf(Date);
    await expect(reopened.insertOne({ _id: 'o4', email: 'a@x.test' })).rejects.toBeInstanceOf(DuplicateKeyError);
    await second.close();
  });

  it("writes each document as nedb's own serializer does, so that nedb reads back what was stored", async () => {
    // A fixed pseudo-random stream of documents of every JSON shape, with Dates (valid or not) at every depth.
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
    const strings = ['', 'plain', 'quote " and \\ backslash', 'line\nbreak\ttab\u0001', 'ünïcödé ✓ 𝄞', '\ud800 lone', '$notAKeyHere', '1e21'];
    const numbers = [0, -0, 1, -17, 3.14159, 1e21, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, -1e-7];
    const value = (depth: number): unknown => {
      const kind = pick(depth > 3 ? ['s', 'n', 'b', 'null', 'date', 'undef'] : ['s', 'n', 'b', 'null', 'date', 'undef', 'obj', 'arr', 'obj']);
      if (kind === 's') return pick(strings);
      if (kind === 'n') return pick(numbers);
      if (kind === 'b') return random() < 0.5;
      if (kind === 'null') return null;
      if (kind === 'undef') return undefined;
      if (kind === 'date') return random() < 0.9 ? new Date(Math.floor(random() * 4e12)) : new Date(Number.NaN);
      if (kind === 'arr') return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      const doc: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 5); i > 0; i--) doc[pick(['a', 'b_c', '10', '2', 'ünï', 'k"q', 'x y'])] = value(depth + 1);
      return doc;
    };
    const docs = Array.from({ length: 400 }, (_, i) => Object.assign({ _id: `d${i}`, at: new Date(1_700_000_000_000 + i) }, value(1)));
    const { serialize, deserialize } = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
      serialize(doc: unknown): string;
      deserialize(line: string): unknown;
    };
    // An own "__proto__" field (JSON input can carry one) next to a Date stays a field.
    const withProto = Object.defineProperty({ _id: 'p', at: new Date(5) }, '__proto__', { value: { when: new Date(6) }, enumerable: true });
    for (const doc of [...docs, withProto]) expect(lineOf(doc), JSON.stringify(doc)).toBe(serialize(doc));
    expect(lineOf(withProto)).toBe('{"_id":"p","at":{"$$date":5},"__proto__":{"when":{"$$date":6}}}');
    for (const bad of [{ $set: 1 }, { 'a.b': 1 }, { nested: { $where: 'x' } }, { list: [{ 'x.y': 1 }] }]) {
      expect(() => lineOf(bad)).toThrow();
      expect(() => serialize(bad)).toThrow();
    }

    const dir = await tempDir();
    const first = await openStore({ dataDir: dir });
    await first.collection<Doc>('shapes').insertMany(docs as Doc[]);
    const stored = await first.collection<Doc>('shapes').find({}, { sort: { _id: 1 } });
    await first.close();
    // What JSON cannot hold (undefined, NaN, an invalid Date...) comes back as nedb's own file would give it.
    const second = await openStore({ dataDir: dir });
    expect(await second.collection<Doc>('shapes').find({}, { sort: { _id: 1 } })).toEqual(stored.map((doc) => deserialize(serialize(doc))));
    await second.close();
  });

  it("drops an index of an older data folder once it is declared MongoDB's only (embedded: false)", async () => {
    const dir = await tempDir();
    const byOwner = { collection: 'calls', fields: ['owner_id', 'at'] };
    const declared = async () => (await lines(path.join(dir, 'calls.db'))).filter((line) => line.includes('"$$indexCreated"') && line.includes('at,owner_id'));
    const first = await openStore({ dataDir: dir });
    await first.ensureIndexes([byOwner]);
    await first.collection<Doc>('calls').insertOne({ _id: 'c1', owner_id: 'o1', at: new Date() });
    await first.close();
    expect(await declared()).toHaveLength(1);

    const second = await openStore({ dataDir: dir });
    await second.ensureIndexes([{ ...byOwner, embedded: false }]);
    await second.close();
    expect(await declared()).toEqual([]);
    const third = await openStore({ dataDir: dir });
    expect(await third.collection<Doc>('calls').find({ owner_id: 'o1' })).toHaveLength(1);
    // A retired index goes the same way (the MongoDB adapter drops it too: query-indexes.test.ts).
    await third.ensureIndexes([byOwner]);
    await third.ensureIndexes([{ ...byOwner, retired: true }]);
    await third.close();
    expect(await declared()).toEqual([]);
  });

  it('loads a file whose last line a crash cut short, up to its last whole line, and appends after it', async () => {
    const dir = await tempDir();
    const first = await openStore({ dataDir: dir });
    await first.collection<Doc>('owners').insertMany([
      { _id: 'o1', email: 'a@x.test' },
      { _id: 'o2', email: 'b@x.test' },
    ]);
    await first.close();
    const file = path.join(dir, 'owners.db');
    // Half a line, as a crash in the middle of an append leaves it: 1 line in 3 is more than nedb's 10%
    // tolerance, which would refuse the whole file.
    await appendFile(file, '{"_id":"o3","email":"c@x');
    const second = await openStore({ dataDir: dir });
    const owners = second.collection<Doc>('owners');
    expect((await owners.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(['o1', 'o2']);
    await owners.insertOne({ _id: 'o4', email: 'd@x.test' });
    await second.close();
    const third = await openStore({ dataDir: dir });
    expect((await third.collection<Doc>('owners').find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(['o1', 'o2', 'o4']);
    await third.close();
  });

  it('creates its folder 0700 and its files 0600, also after compaction', async () => {
    const dir = path.join(await tempDir(), 'data', 'store');
    const store = await openEmbeddedStore({ dir });
    await store.collection<Doc>('secrets').insertOne({ _id: 's', value: 'v' });
    const file = path.join(dir, 'secrets.db');
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await store.close();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('compacts on close, so the file holds one line per document', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir });
    const counters = store.collection<Doc>('counters');
    await counters.insertOne({ _id: 'c', n: 0 });
    for (let i = 0; i < 20; i++) await counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } });
    const file = path.join(dir, 'counters.db');
    expect((await lines(file)).length).toBe(21);
    await store.close();
    expect(await lines(file)).toEqual([JSON.stringify({ _id: 'c', n: 20 })]);
  });

  it('compacts periodically while open', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir, compactionIntervalMs: 1_000 });
    const counters = store.collection<Doc>('counters');
    await counters.insertOne({ _id: 'c', n: 0 });
    for (let i = 0; i < 10; i++) await counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } });
    const file = path.join(dir, 'counters.db');
    expect((await lines(file)).length).toBe(11);
    await expect.poll(async () => (await lines(file)).length, { timeout: 5_000, interval: 200 }).toBe(1);
    // Writes after a compaction go to the new file (data files are kept open for appending), as a second
    // store reading the folder while the first is still open (as after a crash) sees.
    await counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } });
    const reader = await openEmbeddedStore({ dir: await copyOf(dir) });
    expect(await reader.collection<Doc>('counters').findOne({ _id: 'c' })).toEqual({ _id: 'c', n: 11 });
    await reader.close();
    await store.close();
  });

  it('refuses work after close', async () => {
    const store = await openEmbeddedStore({ dir: await tempDir() });
    const things = store.collection<Doc>('things');
    await store.close();
    await expect(things.insertOne({ _id: 'late' })).rejects.toThrow(/closed/);
    await expect(things.find({})).rejects.toThrow(/closed/);
    expect(() => store.collection('things')).toThrow(/closed/);
    await store.close(); // a second close is harmless
  });

  it('openStore keeps an in-memory store in memory', async () => {
    const store = await openStore({ inMemory: true, dataDir: path.join(await tempDir(), 'unused') });
    await store.collection<Doc>('things').insertOne({ _id: 't' });
    await expect(stat(path.join(tempDirs.at(-1)!, 'unused'))).rejects.toMatchObject({ code: 'ENOENT' });
    await store.close();
  });
});

describe('MongoDB adapter: duplicate-key errors from the driver', () => {
  const message = 'E11000 duplicate key error collection: db.tools index: server_1_name_1 dup key: { server: "s1", name: "n" }';

  it('maps a single-write E11000 with its keyPattern', () => {
    const error = new MongoServerError({ code: 11000, errmsg: message, keyPattern: { server: 1, name: 1 }, keyValue: { server: 's1', name: 'n' } });
    const mapped = toDuplicateKeyError(error, 'tools');
    expect(mapped).toBeInstanceOf(DuplicateKeyError);
    expect(mapped).toMatchObject({ collection: 'tools', fields: ['server', 'name'], cause: error });
  });

  it('maps an insertMany E11000 through its first write error, or through the index name', () => {
    const bulk = (writeError: Record<string, unknown>) =>
      new MongoBulkWriteError({ message, code: 11000, writeErrors: [{ err: writeError }] } as never, {} as never);
    expect(toDuplicateKeyError(bulk({ code: 11000, errmsg: message, keyPattern: { hash: 1 } }), 'keys')?.fields).toEqual(['hash']);
    const byName = new Map([['tools/server_1_name_1', ['server', 'name']]]);
    expect(toDuplicateKeyError(bulk({ code: 11000, errmsg: message }), 'tools', byName)?.fields).toEqual(['server', 'name']);
  });

  it('leaves other errors alone', () => {
    expect(toDuplicateKeyError(new MongoServerError({ code: 121, errmsg: 'Document failed validation' }), 'x')).toBeUndefined();
    expect(toDuplicateKeyError(new Error('E11000 lookalike'), 'x')).toBeUndefined();
  });
});
