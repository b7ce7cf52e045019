// Differential test: the same filters built by our library and by @supabase/postgrest-js (the official
// client, used here only as an oracle) must select the same rows on the PostgREST sandbox. Where the two
// disagree, the test shows why ours is right (postgrest-js quotes `in` values only for `,()`, and sends
// filters on columns named like reserved parameters as those parameters).
import { PostgrestClient } from '@supabase/postgrest-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readParams, toQueryString, type ReadArgs } from '../plugins/postgrest/filters.ts';
import { startPostgrestSandbox, type PostgrestSandbox } from '../sandboxes/postgrest/postgrest-sandbox.ts';

let sim: PostgrestSandbox;
let client: PostgrestClient;

beforeAll(async () => {
  sim = await startPostgrestSandbox();
  client = new PostgrestClient(sim.restUrl, { headers: { apikey: sim.serviceRoleKey, Authorization: `Bearer ${sim.serviceRoleKey}` } });
  await sim.sql(`CREATE TABLE ledger (id int PRIMARY KEY, "order" text, "limit" int, "or" text);
    INSERT INTO ledger VALUES (1, 'a,b', 5, 'x'), (2, 'c', 10, 'y'), (3, 'a,b', 20, null);
    GRANT SELECT ON ledger TO service_role`);
});
afterAll(async () => {
  await sim?.close();
});

type Row = Record<string, unknown>;
type Query = ReturnType<ReturnType<PostgrestClient['from']>['select']>;

/** Rows selected by our parameters, sent as one encoded query string. */
async function ours(table: string, args: ReadArgs): Promise<Row[]> {
  const res = await fetch(`${sim.restUrl}/${table}?${toQueryString(readParams(args))}`, {
    headers: { apikey: sim.serviceRoleKey, authorization: `Bearer ${sim.serviceRoleKey}` },
  });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body as Row[];
}

/** Rows selected by the postgrest-js builder (which sends its own URL to the sandbox). */
async function oracle(table: string, columns: string, build: (q: Query) => Query): Promise<{ rows: Row[] | null; error: unknown }> {
  const { data, error } = await build(client.from(table).select(columns));
  return { rows: data as Row[] | null, error };
}

const nameList = (rows: Row[] | null): unknown[] | null => rows && rows.map((r) => r.name);

interface Case {
  title: string;
  filters: ReadArgs['filters'];
  build: (q: Query) => Query;
  expected: Array<string | null>;
}

const cases: Case[] = [
  { title: 'eq with a comma', filters: { name: { eq: 'Hebdon, John' } }, build: (q) => q.eq('name', 'Hebdon, John'), expected: ['Hebdon, John'] },
  { title: 'eq with double quotes', filters: { name: { eq: '"Quoted" Name' } }, build: (q) => q.eq('name', '"Quoted" Name'), expected: ['"Quoted" Name'] },
  {
    title: 'eq with parentheses, dots and an apostrophe',
    filters: { name: { eq: "O'Brien (Jr.)" } },
    build: (q) => q.eq('name', "O'Brien (Jr.)"),
    expected: ["O'Brien (Jr.)"],
  },
  { title: 'eq with a backslash', filters: { name: { eq: 'back\\slash' } }, build: (q) => q.eq('name', 'back\\slash'), expected: ['back\\slash'] },
  { title: 'eq with a dot', filters: { name: { eq: 'dot.name' } }, build: (q) => q.eq('name', 'dot.name'), expected: ['dot.name'] },
  { title: 'eq with unicode', filters: { name: { eq: 'Zoë Ünicode 日本' } }, build: (q) => q.eq('name', 'Zoë Ünicode 日本'), expected: ['Zoë Ünicode 日本'] },
  { title: 'eq with a leading space', filters: { name: { eq: ' leading space' } }, build: (q) => q.eq('name', ' leading space'), expected: [' leading space'] },
  { title: 'eq with the empty string', filters: { name: { eq: '' } }, build: (q) => q.eq('name', ''), expected: [''] },
  { title: 'eq with the string null', filters: { name: { eq: 'null' } }, build: (q) => q.eq('name', 'null'), expected: ['null'] },
  {
    title: 'eq with a boolean',
    filters: { active: { eq: false }, age: { lt: 30 } },
    build: (q) => q.eq('active', false).lt('age', 30),
    expected: ["O'Brien (Jr.)", 'Zoë Ünicode 日本', ''],
  },
  {
    title: 'neq and gt on one column each',
    filters: { name: { neq: 'null' }, age: { gt: 60 } },
    build: (q) => q.neq('name', 'null').gt('age', 60),
    expected: ['dot.name'],
  },
  {
    title: 'two operators on one column',
    filters: { age: { gte: 41, lte: 52 } },
    build: (q) => q.gte('age', 41).lte('age', 52),
    expected: ['Hebdon, John', '"Quoted" Name', '100% real'],
  },
  { title: 'numeric with decimals', filters: { score: { gte: 92.25 } }, build: (q) => q.gte('score', 92.25), expected: ['Williams, Mary', 'dot.name'] },
  { title: 'dates', filters: { born: { lt: '1970-01-01' } }, build: (q) => q.lt('born', '1970-01-01'), expected: ['dot.name', 'null'] },
  {
    title: 'like with an escaped % and a trailing %',
    filters: { name: { like: '100\\%%' } },
    build: (q) => q.like('name', '100\\%%'),
    expected: ['100% real'],
  },
  { title: 'like with an escaped _', filters: { name: { like: 'under\\_%' } }, build: (q) => q.like('name', 'under\\_%'), expected: ['under_score'] },
  { title: 'like is case-sensitive', filters: { name: { like: '%NAME' } }, build: (q) => q.like('name', '%NAME'), expected: [] },
  { title: 'ilike with * as the % wildcard', filters: { name: { ilike: '*JOHN*' } }, build: (q) => q.ilike('name', '*JOHN*'), expected: ['Hebdon, John'] },
  { title: 'like with a trailing * wildcard', filters: { name: { like: 'star*' } }, build: (q) => q.like('name', 'star*'), expected: ['star*name'] },
  { title: 'ilike ignores case, unicode too', filters: { name: { ilike: '%ZOË%' } }, build: (q) => q.ilike('name', '%ZOË%'), expected: ['Zoë Ünicode 日本'] },
  {
    title: 'in with commas and parentheses',
    filters: { name: { in: ['Hebdon, John', "O'Brien (Jr.)"] } },
    build: (q) => q.in('name', ['Hebdon, John', "O'Brien (Jr.)"]),
    expected: ['Hebdon, John', "O'Brien (Jr.)"],
  },
  {
    title: 'in with dots, unicode and the string null',
    filters: { name: { in: ['dot.name', 'Zoë Ünicode 日本', 'null'] } },
    build: (q) => q.in('name', ['dot.name', 'Zoë Ünicode 日本', 'null']),
    expected: ['dot.name', 'Zoë Ünicode 日本', 'null'],
  },
  {
    title: 'in with quotes and a backslash',
    filters: { name: { in: ['"Quoted" Name', 'back\\slash'] } },
    build: (q) => q.in('name', ['"Quoted" Name', 'back\\slash']),
    expected: ['"Quoted" Name', 'back\\slash'],
  },
  { title: 'in with numbers', filters: { age: { in: [18, 41, 99] } }, build: (q) => q.in('age', [18, 41, 99]), expected: ['Hebdon, John', 'back\\slash'] },
  { title: 'in with an empty list', filters: { age: { in: [] } }, build: (q) => q.in('age', []), expected: [] },
  { title: 'is null', filters: { email: { is: null } }, build: (q) => q.is('email', null), expected: [null] },
  {
    title: 'is true',
    filters: { active: { is: true }, age: { gt: 45 } },
    build: (q) => q.is('active', true).gt('age', 45),
    expected: ['"Quoted" Name', 'dot.name', '100% real', 'null'],
  },
  {
    title: 'is false',
    filters: { active: { is: false } },
    build: (q) => q.is('active', false),
    expected: ["O'Brien (Jr.)", 'Zoë Ünicode 日本', 'star*name', ''],
  },
];

describe('our parameters and postgrest-js select the same rows', () => {
  for (const c of cases) {
    it(c.title, async () => {
      const mine = await ours('contacts', { columns: 'name', filters: c.filters, order_by: { id: 'asc' }, limit: 1000 });
      const theirs = await oracle('contacts', 'name', (q) => c.build(q).order('id'));
      expect(theirs.error).toBeNull();
      expect(nameList(mine)).toEqual(c.expected);
      expect(nameList(theirs.rows)).toEqual(c.expected);
    });
  }

  it('ordering and paging', async () => {
    const mine = await ours('contacts', { columns: 'id,age', filters: { age: { gte: 20 } }, order_by: { age: 'desc', id: 'asc' }, limit: 3, offset: 2 });
    const theirs = await oracle('contacts', 'id,age', (q) => q.gte('age', 20).order('age', { ascending: false }).order('id').range(2, 4));
    expect(mine).toEqual(theirs.rows);
    expect(mine.map((r) => r.age)).toEqual([52, 47, 41]);
  });
});

describe('where postgrest-js gets it wrong and we do not', () => {
  it('in with a value that has a leading space (postgrest-js does not quote it and PostgREST trims it)', async () => {
    const mine = await ours('contacts', { columns: 'name', filters: { name: { in: [' leading space'] } } });
    const theirs = await oracle('contacts', 'name', (q) => q.in('name', [' leading space']));
    expect(nameList(mine)).toEqual([' leading space']);
    expect(nameList(theirs.rows)).toEqual([]);
  });

  it('in with only the empty string (PostgREST reads in.() and in.("") as the empty list)', async () => {
    const mine = await ours('contacts', { columns: 'name', filters: { name: { in: [''] } } });
    const theirs = await oracle('contacts', 'name', (q) => q.in('name', ['']));
    expect(nameList(mine)).toEqual(['']);
    expect(nameList(theirs.rows)).toEqual([]);
  });

  it('in with a value holding both a comma and double quotes', async () => {
    await sim.sql(`INSERT INTO contacts (name) VALUES ('say "hi", bye')`);
    try {
      const mine = await ours('contacts', { columns: 'name', filters: { name: { in: ['say "hi", bye'] } } });
      const theirs = await oracle('contacts', 'name', (q) => q.in('name', ['say "hi", bye']));
      expect(nameList(mine)).toEqual(['say "hi", bye']);
      expect(nameList(theirs.rows)).not.toEqual(['say "hi", bye']);
    } finally {
      await sim.sql(`DELETE FROM contacts WHERE name = 'say "hi", bye'`);
    }
  });

  it('filters on columns named order, limit and or (postgrest-js sends them as those parameters)', async () => {
    const mine = await ours('ledger', { columns: 'id', filters: { order: { eq: 'a,b' }, limit: { gt: 6 }, or: { is: null } } });
    expect(mine).toEqual([{ id: 3 }]);
    expect(await ours('ledger', { columns: 'id', filters: { order: { like: 'a,%' } } })).toEqual([{ id: 1 }, { id: 3 }]);
    expect(await ours('ledger', { columns: 'id', filters: { order: { in: ['a,b', 'c'] }, id: { neq: 1 } } })).toEqual([{ id: 2 }, { id: 3 }]);
    const theirs = await oracle('ledger', 'id', (q) => q.eq('order', 'a,b').gt('limit', 6).is('or', null));
    expect(theirs.error).not.toBeNull();
  });
});
