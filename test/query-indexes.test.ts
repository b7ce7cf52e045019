// Every query of the call log and the audit trail has an index that gives its pages in order (newest first on
// (at, _id)), so a page never sorts an owner's month. Each query is explained on MONGODB_URL: on MongoDB the
// winning plan must walk an index and have no SORT stage; FerretDB (the test runs' server) cannot say (its
// SQLite plans scan, "sortPushdown": false), so there the query is checked against the indexes the service
// built: one must start with fields the query fixes and end with (at, _id). Retired indexes are dropped.
import type { Document, MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { callConditions } from '../runtime/api/calls.ts';
import { AUDIT_ACTIONS, NEWEST_FIRST, auditConditions, encodeCursor, newestFirstFilter } from '../runtime/audit/audit-trail.ts';
import { RETIRED_INDEXES, STORE_INDEXES } from '../runtime/indexes.ts';
import { openMongoStore } from '../runtime/store/mongodb.ts';
import { isOperatorObject } from '../runtime/store/dialect.ts';
import type { Filter, Store } from '../runtime/store/port.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';

afterAll(() => dropTestDatabases());

const cursor = encodeCursor({ at: new Date('2026-03-01T12:00:00Z'), _id: 'call_cursor' });
const from = new Date('2026-02-01T00:00:00Z');
const to = new Date('2026-03-02T00:00:00Z');

/** Every shape of query the call log makes: each filter alone and in pairs, with and without a time range and a cursor. */
function callLogQueries(): Array<{ name: string; filter: Filter; sort: Record<string, 1 | -1> }> {
  const filters: Array<[string, Parameters<typeof callConditions>[1]]> = [
    ['all', {}],
    ['server', { server: 'srv_1' }],
    ['key', { key: 'key_1' }],
    ['tool', { tool: 'demo_ping' }],
    ['outcome', { outcomes: ['tool_error'] }],
    ['outcomes', { outcomes: ['tool_error', 'refunded'] }],
    ['server+tool', { server: 'srv_1', tool: 'demo_ping' }],
    ['key+outcome', { key: 'key_1', outcomes: ['refunded'] }],
  ];
  return filters.flatMap(([name, q]) =>
    [false, true].flatMap((ranged) =>
      [undefined, cursor].map((c) => ({
        name: `calls ${name}${ranged ? ' from-to' : ''}${c ? ' after a cursor' : ''}`,
        filter: newestFirstFilter(callConditions('own_1', ranged ? { ...q, from, to } : q), c),
        sort: NEWEST_FIRST as Record<string, 1 | -1>,
      })),
    ),
  );
}

/** The audit trail's: an owner's or everyone's (the operator), by no action, one, or a family (several), ranged, paged. */
function auditQueries(): Array<{ name: string; filter: Filter; sort: Record<string, 1 | -1> }> {
  const family = AUDIT_ACTIONS.filter((a) => a.startsWith('key.'));
  return [undefined, 'own_1'].flatMap((ownerId) =>
    [undefined, ['key.create'], family].flatMap((actions) =>
      [false, true].flatMap((ranged) =>
        [undefined, cursor].map((c) => ({
          name: `audit ${ownerId ?? 'every owner'} ${actions ? `${actions.length} action(s)` : 'any action'}${ranged ? ' from-to' : ''}${c ? ' after a cursor' : ''}`,
          filter: newestFirstFilter(auditConditions({ ownerId, actions, ...(ranged ? { from, to } : {}) }), c),
          sort: NEWEST_FIRST as Record<string, 1 | -1>,
        })),
      ),
    ),
  );
}

/** Fields a filter fixes to one value or a list of values (at its top level and in $and). */
function fixedFields(filter: Filter): Set<string> {
  const fixed = new Set<string>();
  for (const [field, value] of Object.entries(filter)) {
    if (field === '$and') for (const part of value as Filter[]) for (const f of fixedFields(part)) fixed.add(f);
    else if (field.startsWith('$')) continue;
    else if (!isOperatorObject(value) || Object.keys(value as object).every((op) => op === '$eq' || op === '$in')) fixed.add(field);
  }
  return fixed;
}

/** An index serves a newest-first sort when it is (fixed fields..., at, _id): walked backwards, in order. */
function servingIndex(indexes: string[][], filter: Filter): string[] | undefined {
  const fixed = fixedFields(filter);
  return indexes.find((fields) => fields.slice(-2).join() === 'at,_id' && fields.slice(0, -2).every((f) => fixed.has(f)));
}

function stages(plan: Document): string[] {
  const children = [plan.inputStage, ...(plan.inputStages ?? [])].filter(Boolean) as Document[];
  return [plan.stage as string, ...children.flatMap(stages)];
}

describe.runIf(MONGODB_URL)('the indexes of the call log and the audit trail (MONGODB_URL)', () => {
  let store: Store;
  const open = async () => {
    const { url, dbName } = mongoTestUrl('query_indexes');
    store = await openMongoStore(url, { dbName });
    await store.ensureIndexes(STORE_INDEXES);
    // A few documents, so that the planner has something to plan over.
    await store.collection('calls').insertMany(
      Array.from({ length: 30 }, (_, i) => ({
        _id: `call_${i}`,
        owner_id: 'own_1',
        server_id: 'srv_1',
        key_id: 'key_1',
        tool: 'demo_ping',
        outcome: 'ok',
        at: new Date(Date.now() - i * 1000),
      })),
    );
    await store
      .collection('audit_events')
      .insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `aud_${i}`, owner_id: 'own_1', action: 'key.create', at: new Date(Date.now() - i * 1000) })));
    return store;
  };
  afterAll(() => store?.close());

  it('gives every page of the call log and the audit trail from an index, in order (no SORT)', async () => {
    const s = await open();
    const db = (s.mongo!.client as MongoClient).db(s.mongo!.dbName);
    const unserved: string[] = [];
    for (const [collection, queries] of [
      ['calls', callLogQueries()],
      ['audit_events', auditQueries()],
    ] as const) {
      const indexes = (await db.collection(collection).listIndexes().toArray()).map((index) => Object.keys(index.key as object));
      for (const q of queries) {
        const explained = await db.collection(collection).find(q.filter, { sort: q.sort, limit: 51 }).explain('queryPlanner');
        if (s.mongo!.server === 'mongodb') {
          const plan = stages(explained.queryPlanner.winningPlan as Document);
          if (plan.includes('SORT') || !plan.some((stage) => stage === 'IXSCAN')) unserved.push(`${q.name}: ${plan.join(' <- ')}`);
        } else if (!servingIndex(indexes, q.filter)) unserved.push(`${q.name}: no index (${[...fixedFields(q.filter)].join(', ')}, at, _id)`);
      }
    }
    expect(unserved).toEqual([]);
    // The overview's latest calls (newest first on `at` alone) walk the same index.
    expect(servingIndex([['owner_id', 'at', '_id']], { owner_id: 'own_1' })).toBeDefined();
  });

  it('keeps seven indexes on the ledger, each serving a query, and drops those of earlier versions', async () => {
    const { url, dbName } = mongoTestUrl('query_indexes');
    const older = await openMongoStore(url, { dbName });
    try {
      await older.ensureIndexes(RETIRED_INDEXES.map(({ retired: _retired, ...spec }) => spec)); // as an earlier version built them
      await older.ensureIndexes([...STORE_INDEXES, ...RETIRED_INDEXES]);
      const db = (older.mongo!.client as MongoClient).db(dbName);
      const keysOf = async (collection: string) => (await db.collection(collection).listIndexes().toArray()).map((i) => Object.keys(i.key as object).join());
      expect((await keysOf('calls')).sort()).toEqual([
        '_id',
        'charge_key',
        'owner_id,at,_id',
        'owner_id,key_id,at,_id',
        'owner_id,outcome,at,_id',
        'owner_id,tool,at,_id',
        'slot,at',
      ]);
      expect((await keysOf('audit_events')).sort()).toEqual(['_id', 'action,at,_id', 'at,_id', 'owner_id,action,at,_id', 'owner_id,at,_id']);
    } finally {
      await older.close();
    }
  });
});
