// The database_* tools end to end: the official MCP SDK client -> our MCP endpoint -> engine and postgrest
// plugins -> the PostgREST sandbox on real Postgres (PGlite). Asserts on the rows, on what the sandbox
// received, on the error families and on the credit balance.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resultPlugin, totalOfContentRange, writeFiltersPlugin } from '../plugins/postgrest/postgrest-plugins.ts';
import type { OutboundRequest, PluginContext } from '../runtime/plugin-api.ts';
import { ToolError } from '../runtime/tool-error.ts';
import { startPostgrestSandbox, type PostgrestSandbox } from '../sandboxes/postgrest/postgrest-sandbox.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { toolCalls } from './support/tool-calls.ts';
import { createOwner, createServer, startTestService, type Owner, type TestService } from './support/service.ts';

type Row = Record<string, unknown>;

let sim: PostgrestSandbox;
let sim12: PostgrestSandbox;
let svc: TestService;
let owner: Owner;
let client: Client;
let accountIds: Record<string, string>;
let specsDir: string;

const TOOLS = ['database_read_records', 'database_create_records', 'database_update_records', 'database_delete_records'];
/** Each extra account gets its own read/create/update tools, named `<label>_read` etc. */
const EXTRA_ACCOUNTS = ['anon', 'publishable', 'secret', 'badkey', 'v12'] as const;

beforeAll(async () => {
  [sim, sim12] = await Promise.all([startPostgrestSandbox(), startPostgrestSandbox({ version: 12 })]);
  // Only this family's specs, so that work in progress on other families cannot stop this suite.
  specsDir = await mkdtemp(path.join(tmpdir(), 'database-specs-'));
  await cp(path.resolve('tool-specs/database'), path.join(specsDir, 'database'), { recursive: true });
  // The suite makes a few hundred calls with one key: lift the burst limit (tested elsewhere).
  svc = await startTestService({ TOOL_SPECS_DIR: specsDir, RATE_LIMIT_BURST: '10000' });
  owner = await createOwner(svc, 10_000);
  const account = (name: string, url: string, key: string) => ({ kind: 'database', name, url, key });
  const setup = await createServer(svc, owner, {
    accounts: {
      service: account('service_role', sim.url, sim.serviceRoleKey),
      anon: account('anon', sim.url, sim.anonKey),
      publishable: account('publishable', sim.url, sim.publishableKey),
      secret: account('secret', sim.url, sim.secretKey),
      badkey: account('wrong key', sim.url, `${sim.anonKey.slice(0, -4)}AAAA`),
      v12: account('PostgREST 12', sim12.url, sim12.serviceRoleKey),
    },
    tools: [
      ...TOOLS.map((base_tool) => ({ base_tool, account: 'service' })),
      ...EXTRA_ACCOUNTS.flatMap((label) =>
        (['read', 'create', 'update'] as const).map((op) => ({ base_tool: `database_${op}_records`, name: `${label}_${op}`, account: label })),
      ),
    ],
  });
  accountIds = setup.accountIds;
  client = await connectV1(svc.url, setup.serverId, setup.key);
  // Two Postgres instances (PGlite) start here: past the default 30 s when the machine's 2 cores are busy.
}, 90_000);

afterAll(async () => {
  await client?.close();
  await svc?.close();
  await Promise.all([sim?.close(), sim12?.close()]);
  if (specsDir) await rm(specsDir, { recursive: true, force: true });
});

const tools = toolCalls(() => client);
/** A call that must succeed: the tools' result, {data, count}. */
const ok = (name: string, args: Record<string, unknown>) => tools.ok<{ data: Row[]; count: number }>(name, args);
const { fails } = tools;

const balance = async (): Promise<number> => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance;
const lastRequest = (s: PostgrestSandbox = sim) => s.requests.at(-1)!;
const names = (rows: Row[]) => rows.map((r) => r.name);
const readContacts = (filters: Record<string, unknown>) =>
  ok('database_read_records', { table: 'contacts', columns: 'name', filters, order_by: { id: 'asc' } }).then((r) => names(r.data));
const todoTitles = async () => (await sim.sql<{ title: string }>('SELECT title FROM todos ORDER BY id')).map((r) => r.title);

describe('tools/list', () => {
  it('lists the four tools with their input schemas', async () => {
    const { tools } = await client.listTools();
    const read = tools.find((t) => t.name === 'database_read_records')!;
    expect(TOOLS.every((id) => tools.some((t) => t.name === id))).toBe(true);
    expect(read.inputSchema.required).toEqual(['table']);
    expect(Object.keys(read.inputSchema.properties ?? {})).toEqual(['table', 'columns', 'filters', 'limit', 'offset', 'order_by']);
    const del = tools.find((t) => t.name === 'database_delete_records')!;
    expect(del.inputSchema.required).toEqual(['table', 'filters']);
    expect(del.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(read.description).toMatch(/literal \* cannot be matched/);
  });
});

describe('database_read_records', () => {
  it('reads a whole table with the defaults: select=*, limit=100, count from Content-Range', async () => {
    const before = await balance();
    const { data, count } = await ok('database_read_records', { table: 'todos', order_by: { id: 'asc' } });
    expect(count).toBe(5);
    expect(data.map((r) => r.title)).toEqual(['Buy milk', 'Write report', 'Call mom', 'Plan trip', 'Fix bike']);
    expect(data[0]).toEqual({ id: 1, title: 'Buy milk', done: false, owner: 'public' });
    const req = lastRequest();
    expect(req.method).toBe('GET');
    expect(req.path).toBe('/rest/v1/todos');
    expect([...req.query]).toEqual([
      ['select', '*'],
      ['order', 'id.asc'],
      ['limit', '100'],
    ]);
    expect(req.headers.prefer).toBe('count=exact');
    expect(req.headers.apikey).toBe(sim.serviceRoleKey);
    expect(req.headers.authorization).toBe(`Bearer ${sim.serviceRoleKey}`);
    expect(await balance()).toBe(before - 1);
  });

  it('applies each operator', async () => {
    expect(await readContacts({ age: { eq: 41 } })).toEqual(['Hebdon, John']);
    expect(await readContacts({ age: { neq: 41, gte: 60 } })).toEqual(['dot.name', 'null']);
    expect(await readContacts({ age: { gt: 52 } })).toEqual(['dot.name', 'null']);
    expect(await readContacts({ score: { gte: 92.25 } })).toEqual(['Williams, Mary', 'dot.name']);
    expect(await readContacts({ age: { lt: 18 } })).toEqual(['']);
    expect(await readContacts({ born: { lte: '1964-06-06' } })).toEqual(['dot.name', 'null']);
    expect(await readContacts({ name: { like: '%Name' } })).toEqual(['"Quoted" Name']);
    expect(await readContacts({ name: { ilike: '%name' } })).toEqual(['"Quoted" Name', 'dot.name', 'star*name']);
    expect(await readContacts({ age: { in: [18, 23, 99] } })).toEqual(['back\\slash', 'Zoë Ünicode 日本']);
    expect(await readContacts({ email: { is: null } })).toEqual([null]);
    expect(await readContacts({ active: { is: true }, age: { gt: 50 } })).toEqual(['"Quoted" Name', 'dot.name', 'null']);
    expect(await readContacts({ active: { is: false }, age: { lt: 25 } })).toEqual(['Zoë Ünicode 日本', '']);
    expect(await readContacts({ active: { eq: true }, name: { ilike: '*a*' }, age: { gte: 35, lte: 47 } })).toEqual(['Williams, Mary', '100% real']);
  });

  it('matches tricky values literally: commas, parentheses, quotes, dots, backslashes, unicode, empty strings', async () => {
    expect(await readContacts({ name: { eq: 'Hebdon, John' } })).toEqual(['Hebdon, John']);
    expect(lastRequest().query.get('name')).toBe('eq.Hebdon, John');
    expect(await readContacts({ name: { eq: "O'Brien (Jr.)" } })).toEqual(["O'Brien (Jr.)"]);
    expect(await readContacts({ name: { eq: '"Quoted" Name' } })).toEqual(['"Quoted" Name']);
    expect(await readContacts({ name: { eq: 'dot.name' } })).toEqual(['dot.name']);
    expect(await readContacts({ name: { eq: 'back\\slash' } })).toEqual(['back\\slash']);
    expect(await readContacts({ name: { eq: 'Zoë Ünicode 日本' } })).toEqual(['Zoë Ünicode 日本']);
    expect(await readContacts({ name: { eq: '' } })).toEqual(['']);
    expect(await readContacts({ name: { eq: 'null' } })).toEqual(['null']);
    expect(await readContacts({ name: { eq: ' leading space' } })).toEqual([' leading space']);
    expect(await readContacts({ name: { in: ['Hebdon, John', "O'Brien (Jr.)", '"Quoted" Name', 'dot.name', 'back\\slash', ' leading space'] } })).toEqual([
      'Hebdon, John',
      "O'Brien (Jr.)",
      '"Quoted" Name',
      'back\\slash',
      'dot.name',
      ' leading space',
    ]);
    expect(lastRequest().query.get('name')).toBe('in.("Hebdon, John","O\'Brien (Jr.)","\\"Quoted\\" Name","dot.name","back\\\\slash"," leading space")');
    expect(await readContacts({ name: { in: [''] } })).toEqual(['']);
    expect(await readContacts({ name: { in: ['', 'Zoë Ünicode 日本'] } })).toEqual(['Zoë Ünicode 日本', '']);
    expect(await readContacts({ name: { in: [] } })).toEqual([]);
  });

  it('treats % and _ as LIKE wildcards, \\ as their escape, and * as an alias of %', async () => {
    expect(await readContacts({ name: { like: '100\\%%' } })).toEqual(['100% real']);
    expect(await readContacts({ name: { like: '%\\_%' } })).toEqual(['under_score']);
    expect(await readContacts({ name: { ilike: '*JOHN*' } })).toEqual(['Hebdon, John']);
    expect(lastRequest().query.get('name')).toBe('ilike.*JOHN*');
    expect(await readContacts({ name: { like: 'star*' } })).toEqual(['star*name']);
    // * is a wildcard, so "a literal *" matches more than the one row holding a *: documented, not refused.
    expect(await readContacts({ name: { like: '%*%' } })).toHaveLength(13);
    expect(await readContacts({ name: { like: 'star_name' } })).toEqual(['star*name']);
  });

  it('selects columns and orders by several columns', async () => {
    const { data } = await ok('database_read_records', {
      table: 'contacts',
      columns: 'name, age',
      filters: { age: { gte: 40 } },
      order_by: { active: 'desc', age: 'asc' },
    });
    expect(lastRequest().query.get('select')).toBe('name,age');
    expect(lastRequest().query.get('order')).toBe('active.desc,age.asc');
    expect(data).toEqual([
      { name: 'Hebdon, John', age: 41 },
      { name: '100% real', age: 47 },
      { name: '"Quoted" Name', age: 52 },
      { name: 'null', age: 61 },
      { name: 'dot.name', age: 64 },
    ]);
  });

  it('pages with limit and offset and counts every matching row (206 and 200 answers)', async () => {
    const page = await ok('database_read_records', { table: 'contacts', columns: 'id', order_by: { id: 'asc' }, limit: 4, offset: 4 });
    expect(page).toEqual({ data: [{ id: 5 }, { id: 6 }, { id: 7 }, { id: 8 }], count: 14 });
    expect(lastRequest().query.get('offset')).toBe('4');
    const last = await ok('database_read_records', { table: 'contacts', columns: 'id', order_by: { id: 'asc' }, limit: 4, offset: 12 });
    expect(last).toEqual({ data: [{ id: 13 }, { id: 14 }], count: 14 });
    const all = await ok('database_read_records', { table: 'contacts', columns: 'id', filters: { age: { gt: 60 } } });
    expect(all).toEqual({ data: [{ id: 6 }, { id: 12 }], count: 2 });
    expect(await ok('database_read_records', { table: 'contacts', filters: { age: { gt: 200 } } })).toEqual({ data: [], count: 0 });
    expect(await ok('database_read_records', { table: 'contacts', offset: 14 })).toEqual({ data: [], count: 14 });
  });

  it('reports an offset past the last row as invalid_range (PGRST103, 416)', async () => {
    const error = await fails('database_read_records', { table: 'todos', offset: 50 });
    expect(error).toMatchObject({ code: 'invalid_range', provider_status: 416 });
    expect(error.message).toContain('An offset of 50 was requested, but there are only 5 rows.');
  });
});

describe('database_create_records', () => {
  beforeEach(() => sim.reset());

  it('inserts one object and returns the stored row', async () => {
    const before = await balance();
    const result = await ok('database_create_records', { table: 'todos', records: { title: 'Water plants' } });
    expect(result).toEqual({ data: [{ id: 6, title: 'Water plants', done: false, owner: 'public' }], count: 1 });
    const req = lastRequest();
    expect(req.method).toBe('POST');
    expect(JSON.parse(req.body)).toEqual({ title: 'Water plants' });
    expect(req.query.has('columns')).toBe(false);
    expect(req.headers.prefer).toBe('return=representation,missing=default');
    expect(await balance()).toBe(before - 1);
  });

  it('inserts a batch whose rows have different keys (columns= and missing=default)', async () => {
    const records = [{ title: 'A' }, { title: 'B', done: true }, { owner: 'carol', title: 'C "quoted", (x)' }];
    const { data, count } = await ok('database_create_records', { table: 'todos', records });
    expect(count).toBe(3);
    expect(data.map(({ title, done, owner: o }) => ({ title, done, owner: o }))).toEqual([
      { title: 'A', done: false, owner: 'public' },
      { title: 'B', done: true, owner: 'public' },
      { title: 'C "quoted", (x)', done: false, owner: 'carol' },
    ]);
    expect(lastRequest().query.get('columns')).toBe('title,done,owner');
    expect(JSON.parse(lastRequest().body)).toEqual(records);
    expect((await todoTitles()).slice(5)).toEqual(['A', 'B', 'C "quoted", (x)']);
  });

  it('inserts a batch with the same keys without columns=', async () => {
    const { count } = await ok('database_create_records', {
      table: 'contacts',
      records: [
        { name: 'Ünï', age: 1 },
        { age: 2, name: 'dup,name' },
      ],
    });
    expect(count).toBe(2);
    expect(lastRequest().query.has('columns')).toBe(false);
  });
});

describe('database_update_records and database_delete_records', () => {
  beforeEach(() => sim.reset());

  it('updates exactly the filtered rows and returns them', async () => {
    const before = await balance();
    const { data, count } = await ok('database_update_records', {
      table: 'todos',
      updates: { done: true },
      filters: { title: { in: ['Buy milk', 'Call mom'] } },
    });
    expect(count).toBe(2);
    expect(data.map((r) => [r.title, r.done])).toEqual([
      ['Buy milk', true],
      ['Call mom', true],
    ]);
    const req = lastRequest();
    expect(req.method).toBe('PATCH');
    expect(req.query.get('title')).toBe('in.("Buy milk","Call mom")');
    expect(JSON.parse(req.body)).toEqual({ done: true });
    expect(req.headers.prefer).toBe('return=representation');
    expect(await sim.sql('SELECT title, done FROM todos ORDER BY id')).toEqual([
      { title: 'Buy milk', done: true },
      { title: 'Write report', done: true },
      { title: 'Call mom', done: true },
      { title: 'Plan trip', done: false },
      { title: 'Fix bike', done: true },
    ]);
    expect(await balance()).toBe(before - 1);
  });

  it('updates nothing when no row matches (count 0)', async () => {
    expect(await ok('database_update_records', { table: 'todos', updates: { done: true }, filters: { id: { gt: 100 } } })).toEqual({ data: [], count: 0 });
  });

  it('deletes exactly the filtered rows and returns them', async () => {
    const { data, count } = await ok('database_delete_records', { table: 'contacts', filters: { age: { lt: 25 }, name: { neq: '' } } });
    expect(count).toBe(2);
    expect(names(data)).toEqual(['back\\slash', 'Zoë Ünicode 日本']);
    expect(lastRequest().method).toBe('DELETE');
    const left = await sim.sql<{ name: string | null }>('SELECT name FROM contacts ORDER BY id');
    expect(left).toHaveLength(12);
    expect(left.map((r) => r.name)).not.toContain('back\\slash');
    expect(left.map((r) => r.name)).toContain('');
  });

  it('refuses missing or empty filters before any request: no row changed, nothing charged', async () => {
    const before = await balance();
    const sent = sim.requests.length;
    const attempts: Array<[string, Record<string, unknown>, RegExp]> = [
      ['database_delete_records', { table: 'todos' }, /"filters" is required/],
      ['database_delete_records', { table: 'todos', filters: {} }, /"filters" must NOT have fewer than 1 properties/],
      ['database_delete_records', { table: 'todos', filters: { id: {} } }, /"filters.id" must NOT have fewer than 1 properties/],
      ['database_update_records', { table: 'todos', updates: { done: true } }, /"filters" is required/],
      ['database_update_records', { table: 'todos', updates: { done: true }, filters: {} }, /"filters" must NOT have fewer than 1 properties/],
      ['database_update_records', { table: 'todos', updates: { done: true }, filters: { title: {} } }, /"filters.title" must NOT have fewer than 1 properties/],
      ['database_update_records', { table: 'todos', updates: {}, filters: { id: { eq: 1 } } }, /"updates" must NOT have fewer than 1 properties/],
    ];
    for (const [name, args, message] of attempts) {
      const error = await fails(name, args);
      expect(error.code, JSON.stringify(args)).toBe('invalid_arguments');
      expect(error.message).toMatch(message);
    }
    expect(sim.requests.length).toBe(sent);
    expect(await todoTitles()).toEqual(['Buy milk', 'Write report', 'Call mom', 'Plan trip', 'Fix bike']);
    expect((await sim.sql('SELECT count(*)::int AS n FROM todos WHERE done'))[0]).toEqual({ n: 2 });
    expect(await balance()).toBe(before);
  });
});

describe('arguments of the wrong shape are refused with the path of the bad field, nothing charged', () => {
  it('refuses wrong operators and value types in argument validation', async () => {
    const before = await balance();
    const sent = sim.requests.length;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['database_read_records', { table: 'contacts', filters: { age: { in: 5 } } }, '"filters.age.in" must be array'],
      ['database_read_records', { table: 'contacts', filters: { age: { in: [1, null] } } }, '"filters.age.in.1" must be string'],
      ['database_read_records', { table: 'contacts', filters: { age: { between: [1, 2] } } }, '"filters.age" must be one of: eq, neq'],
      ['database_read_records', { table: 'contacts', filters: { age: { is: 'null' } } }, '"filters.age.is" must be one of: null, true, false'],
      ['database_read_records', { table: 'contacts', filters: { age: { eq: { a: 1 } } } }, '"filters.age.eq" must be string'],
      ['database_read_records', { table: 'contacts', filters: { name: { like: 5 } } }, '"filters.name.like" must be string'],
      ['database_read_records', { table: 'contacts', filters: { age: 5 } }, '"filters.age" must be object'],
      ['database_read_records', { table: 'contacts', order_by: { age: 'up' } }, '"order_by.age" must be one of: asc, desc'],
      ['database_read_records', { table: 'contacts', limit: 0 }, '"limit" must be >= 1'],
      ['database_read_records', { table: 'contacts', limit: 1001 }, '"limit" must be <= 1000'],
      ['database_read_records', { table: 'contacts', offset: -1 }, '"offset" must be >= 0'],
      ['database_read_records', { table: 'contacts;drop' }, '"table" must match pattern'],
      ['database_create_records', { table: 'todos', records: 'x' }, '"records" must be object'],
      ['database_create_records', { table: 'todos', records: [] }, '"records" must NOT have fewer than 1 items'],
      ['database_create_records', { table: 'todos', records: [{ title: 'a' }, 3] }, '"records.1" must be object'],
      ['database_delete_records', { table: 'todos', filters: { id: { gt: [1] } } }, '"filters.id.gt" must be string'],
    ];
    for (const [name, args, message] of cases) {
      const error = await fails(name, args);
      expect(error.code, JSON.stringify(args)).toBe('invalid_arguments');
      expect(error.message, JSON.stringify(args)).toContain(message);
    }
    expect(sim.requests.length).toBe(sent);
    expect(await balance()).toBe(before);
  });

  it('refuses column names that are not identifiers before sending, and gives the credit back', async () => {
    const before = await balance();
    const sent = sim.requests.length;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['database_read_records', { table: 'contacts', filters: { 'my col': { eq: 1 } } }, 'filters["my col"]: "my col" is not a valid column name'],
      ['database_read_records', { table: 'contacts', columns: 'id,name:alias' }, 'columns: "name:alias" is not a valid column name'],
      ['database_read_records', { table: 'contacts', order_by: { 'a.b': 'asc' } }, 'order_by["a.b"]: "a.b" is not a valid column name'],
      ['database_create_records', { table: 'todos', records: [{ title: 'x' }, { 'ti tle': 'y' }] }, 'records[1]["ti tle"]'],
      ['database_update_records', { table: 'todos', updates: { 'done;': true }, filters: { id: { eq: 1 } } }, 'updates["done;"]'],
      ['database_delete_records', { table: 'todos', filters: { 'id)': { eq: 1 } } }, 'filters["id)"]'],
    ];
    for (const [name, args, message] of cases) {
      const error = await fails(name, args);
      expect(error.code, JSON.stringify(args)).toBe('invalid_arguments');
      expect(error.message).toContain(message);
    }
    expect(sim.requests.length).toBe(sent);
    expect(await balance()).toBe(before);
  });
});

describe('error families', () => {
  beforeEach(() => sim.reset());

  it('table not found: PGRST205 (PostgREST 13) and 42P01 (PostgREST 12)', async () => {
    const v13 = await fails('database_read_records', { table: 'todo' });
    expect(v13).toMatchObject({ code: 'table_not_found', provider_status: 404, retryable: false });
    expect(v13.message).toBe(
      "Table not found: Could not find the table 'public.todo' in the schema cache; Perhaps you meant the table 'public.todos'. Check the table name, and that its schema is exposed by the Data API.",
    );
    const v12 = await fails('v12_read', { table: 'nope' });
    expect(v12).toMatchObject({ code: 'table_not_found', provider_status: 404 });
    expect(v12.message).toContain('relation "public.nope" does not exist');
  });

  it('column not found: 42703 on reads, PGRST204 on writes', async () => {
    const read = await fails('database_read_records', { table: 'todos', filters: { banana: { eq: 1 } } });
    expect(read).toMatchObject({ code: 'column_not_found', provider_status: 400 });
    expect(read.message).toContain('column todos.banana does not exist');
    const write = await fails('database_create_records', { table: 'todos', records: { title: 'x', helicopter: 1 } });
    expect(write).toMatchObject({ code: 'column_not_found', provider_status: 400 });
    expect(write.message).toContain("Could not find the 'helicopter' column of 'todos' in the schema cache");
    expect(await todoTitles()).not.toContain('x');
  });

  it('unique constraint violation: 23505, 409, nothing of the batch inserted', async () => {
    const before = await balance();
    const error = await fails('database_create_records', { table: 'todos', records: [{ title: 'New one' }, { title: 'Buy milk' }] });
    expect(error).toMatchObject({ code: 'unique_violation', provider_status: 409 });
    expect(error.message).toContain('Unique constraint violation: duplicate key value violates unique constraint');
    expect(error.message).toContain('Key (title)=(Buy milk) already exists.');
    expect(await todoTitles()).not.toContain('New one');
    // The provider answered: the call is charged.
    expect(await balance()).toBe(before - 1);
  });

  it('other constraint and type errors', async () => {
    expect(await fails('database_create_records', { table: 'todo_notes', records: { todo_id: 999, body: 'x' } })).toMatchObject({
      code: 'foreign_key_violation',
      provider_status: 409,
    });
    expect(await fails('database_create_records', { table: 'contacts', records: { age: -1 } })).toMatchObject({ code: 'invalid_value', provider_status: 400 });
    expect(await fails('database_read_records', { table: 'contacts', filters: { age: { eq: 'abc' } } })).toMatchObject({
      code: 'invalid_value',
      provider_status: 400,
    });
  });

  it('permission denied (42501): 401 for the anon role (not reported as a bad key), 403 for other roles', async () => {
    const anon = await fails('anon_create', { table: 'todos', records: { title: 'Sneaky', owner: 'alice' } });
    expect(anon).toMatchObject({ code: 'permission_denied', provider_status: 401 });
    expect(anon.message).toContain('new row violates row-level security policy for table "todos"');
    const grant = await fails('anon_read', { table: 'secrets' });
    expect(grant).toMatchObject({ code: 'permission_denied', provider_status: 401 });
    expect(grant.message).toContain('permission denied for table secrets');
    await sim.sql('CREATE TABLE audit (id int PRIMARY KEY); REVOKE ALL ON audit FROM service_role');
    const service = await fails('database_read_records', { table: 'audit' });
    expect(service).toMatchObject({ code: 'permission_denied', provider_status: 403 });
    expect(service.message).toContain('permission denied for table audit');
    expect(await todoTitles()).toEqual(['Buy milk', 'Write report', 'Call mom', 'Plan trip', 'Fix bike']);
  });

  it("Supabase's safe-update refusal (21000)", async () => {
    sim.faults.push({ method: 'DELETE', status: 400, body: { code: '21000', details: null, hint: null, message: 'DELETE requires a WHERE clause' } });
    const error = await fails('database_delete_records', { table: 'todos', filters: { id: { eq: 1 } } });
    expect(error).toMatchObject({ code: 'where_clause_required', provider_status: 400 });
    expect(error.message).toContain('DELETE requires a WHERE clause');
  });

  it('invalid key: the gateway bodies "Invalid API key" and "No API key found"', async () => {
    const bad = await fails('badkey_read', { table: 'todos' });
    expect(bad).toMatchObject({ code: 'unauthorized', provider_status: 401 });
    expect(bad.message).toBe(
      "Unauthorized: Supabase rejected the stored key (invalid API key): Invalid API key; Double check your Supabase `anon` or `service_role` API key. Copy the key again from the project's API settings and save it in the account.",
    );
    sim.faults.push({ status: 401, body: { message: 'No API key found in request', hint: 'No `apikey` request header or url param was found.' } });
    const missing = await fails('database_read_records', { table: 'todos' });
    expect(missing).toMatchObject({ code: 'unauthorized', provider_status: 401 });
    expect(missing.message).toContain('No API key found in request');
  });

  it('a provider failure gives the credit back', async () => {
    const before = await balance();
    sim.faults.push({ method: 'POST', status: 503, body: { message: 'upstream unavailable' } });
    const error = await fails('database_create_records', { table: 'todos', records: { title: 'Later' } });
    expect(error).toMatchObject({ code: 'provider_error', provider_status: 503, retryable: true });
    expect(await balance()).toBe(before);
  });
});

describe('row-level security: anon/publishable keys vs service_role/secret keys', () => {
  beforeEach(() => sim.reset());

  it('the anon and publishable keys see only the public rows; service_role and secret keys see all', async () => {
    const args = { table: 'todos', columns: 'title,owner', order_by: { id: 'asc' } };
    const anon = await ok('anon_read', args);
    expect(anon.count).toBe(3);
    expect(anon.data.map((r) => r.owner)).toEqual(['public', 'public', 'public']);
    expect(lastRequest().headers.apikey).toBe(sim.anonKey);
    expect(await ok('publishable_read', args)).toEqual(anon);
    expect(lastRequest().headers.authorization).toBe(`Bearer ${sim.publishableKey}`);
    const service = await ok('database_read_records', args);
    expect(service.count).toBe(5);
    expect(service.data.map((r) => r.title)).toEqual(['Buy milk', 'Write report', 'Call mom', 'Plan trip', 'Fix bike']);
    expect(await ok('secret_read', args)).toEqual(service);
  });

  it("an anon update of rows it cannot see changes nothing (RLS is silent), the service_role's does", async () => {
    expect(await ok('anon_update', { table: 'todos', updates: { done: true }, filters: { owner: { eq: 'alice' } } })).toEqual({ data: [], count: 0 });
    expect((await sim.sql('SELECT done FROM todos WHERE owner = $1', ['alice']))[0]).toEqual({ done: false });
    const service = await ok('database_update_records', { table: 'todos', updates: { done: true }, filters: { owner: { eq: 'alice' } } });
    expect(service.count).toBe(1);
    expect((await ok('anon_create', { table: 'todos', records: { title: 'Anon todo' } })).data[0]).toMatchObject({ title: 'Anon todo', owner: 'public' });
  });
});

describe('account verification', () => {
  it('verifies a working key and reports a wrong one as unauthorized', async () => {
    const good = await svc.call('POST', `/api/accounts/${accountIds.service}/verify`, { token: owner.token });
    expect(good.body).toMatchObject({ id: accountIds.service, verified: true });
    expect(lastRequest().path).toBe('/rest/v1/');
    const bad = await svc.call('POST', `/api/accounts/${accountIds.badkey}/verify`, { token: owner.token });
    expect(bad.body).toMatchObject({ verified: false, error: { code: 'unauthorized', provider_status: 401 } });
  });

  it('verifies an anon key although the platform answers the API root 403 to such keys', async () => {
    sim.faults.push({ method: 'GET', pathPrefix: '/rest/v1/', status: 403, body: { message: 'Access to the schema is restricted to secret keys' } });
    const anon = await svc.call('POST', `/api/accounts/${accountIds.anon}/verify`, { token: owner.token });
    expect(anon.body).toMatchObject({ id: accountIds.anon, verified: true });
  });

  it('refuses an account whose URL has a path or whose key has the wrong form', async () => {
    const withPath = await svc.call('POST', '/api/accounts', {
      token: owner.token,
      body: { kind: 'database', name: 'x', url: `${sim.url}/rest/v1`, key: sim.anonKey },
    });
    expect(withPath.status).toBe(400);
    expect(JSON.stringify(withPath.body)).toContain('without a path');
    const badKey = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'database', name: 'x', url: sim.url, key: 'not a key' } });
    expect(badKey.status).toBe(400);
    expect(JSON.stringify(badKey.body)).toContain('sb_publishable_');
  });
});

describe('plugins (the second line behind the input schemas)', () => {
  const request: OutboundRequest = { method: 'DELETE', path: '/todos', query: [], headers: {} };
  const context = (args: Record<string, unknown>) => ({ args }) as unknown as PluginContext;

  it('write_filters refuses missing or empty filters with an invalid_arguments error that gives the credit back', async () => {
    for (const filters of [undefined, {}, { id: {} }]) {
      let error: unknown;
      try {
        await writeFiltersPlugin.apply(request, context({ table: 'todos', filters }));
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({ code: 'invalid_arguments', refund: true });
      expect((error as Error).message).toBe(
        'Invalid arguments: filters: at least one condition is required, so that an update or delete never touches every row by accident',
      );
    }
    expect(() => writeFiltersPlugin.apply(request, context({ table: 'to dos', filters: { id: { eq: 1 } } }))).toThrow(
      /table: "to dos" is not a valid table name/,
    );
    const built = await writeFiltersPlugin.apply(request, context({ table: 'todos', filters: { id: { eq: 1 } } }));
    expect(built.query).toEqual([['id', 'eq.1']]);
  });

  it('result takes the count from Content-Range, else from the rows', () => {
    expect(totalOfContentRange('0-24/3573')).toBe(3573);
    expect(totalOfContentRange('*/0')).toBe(0);
    expect(totalOfContentRange(['5-9/10'])).toBe(10);
    expect(totalOfContentRange('0-24/*')).toBeUndefined();
    expect(totalOfContentRange(undefined)).toBeUndefined();
    const ctx = context({});
    expect(resultPlugin.apply({ data: [{ a: 1 }], count: '0-0/7' }, ctx)).toEqual({ data: [{ a: 1 }], count: 7 });
    expect(resultPlugin.apply({ data: [{ a: 1 }, { a: 2 }] }, ctx)).toEqual({ data: [{ a: 1 }, { a: 2 }], count: 2 });
    expect(resultPlugin.apply({ data: null, count: '*/*' }, ctx)).toEqual({ data: [], count: 0 });
  });
});
