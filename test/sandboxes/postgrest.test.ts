// The Supabase/PostgREST sandbox over real HTTP (plain fetch): grammar, preferences, RLS, error bodies.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startPostgrestSandbox, type PostgrestSandbox } from '../../sandboxes/postgrest/postgrest-sandbox.ts';

let sim: PostgrestSandbox;

// PGlite takes half a minute to start on a busy machine.
beforeAll(async () => {
  sim = await startPostgrestSandbox();
}, 90_000);
afterAll(async () => {
  await sim?.close();
});
beforeEach(async () => {
  await sim.reset();
  sim.requests.length = 0;
});

interface CallOptions {
  key?: string | null;
  headers?: Record<string, string>;
  body?: unknown;
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** One request; `path` is below /rest/v1 and already encoded. The service_role key is the default. */
async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const key = options.key === undefined ? sim.serviceRoleKey : options.key;
  const headers: Record<string, string> = { ...(key ? { apikey: key } : {}), ...options.headers };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  }
  const res = await fetch(`${sim.restUrl}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/** GET with a query built from pairs (encoded once by URLSearchParams). */
function get(table: string, params: Array<[string, string]>, options: CallOptions = {}): Promise<Reply> {
  return call('GET', `/${table}?${new URLSearchParams(params)}`, options);
}

async function names(params: Array<[string, string]>): Promise<Array<string | null>> {
  const reply = await get('contacts', [['select', 'name'], ['order', 'id'], ...params]);
  expect(reply.status, reply.text).toBe(200);
  return reply.json.map((row: { name: string | null }) => row.name);
}

function expectError(reply: Reply, status: number, body: Record<string, unknown>): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(reply.json).toEqual({ details: null, hint: null, ...body });
  expect(reply.headers.get('proxy-status')).toBe(`PostgREST; error=${body.code as string}`);
}

describe('gateway and keys', () => {
  it('answers 401 without a key and with a wrong key, with the gateway bodies', async () => {
    const missing = await call('GET', '/todos', { key: null });
    expect(missing.status).toBe(401);
    expect(missing.json).toEqual({ message: 'No API key found in request', hint: 'No `apikey` request header or url param was found.' });
    const wrong = await call('GET', '/todos', { key: 'sb_publishable_nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ message: 'Invalid API key', hint: 'Double check your Supabase `anon` or `service_role` API key.' });
  });

  it('accepts the key as a url parameter and all four key kinds', async () => {
    const viaQuery = await call('GET', `/todos?apikey=${encodeURIComponent(sim.anonKey)}&select=id`, { key: null });
    expect(viaQuery.status).toBe(200);
    expect(viaQuery.json).toHaveLength(3);
    for (const [key, rows] of [
      [sim.anonKey, 3],
      [sim.publishableKey, 3],
      [sim.serviceRoleKey, 5],
      [sim.secretKey, 5],
    ] as const) {
      const reply = await call('GET', '/todos', { key, headers: { authorization: `Bearer ${key}` } });
      expect(reply.json, key).toHaveLength(rows);
    }
    expect(sim.anonKey.split('.')).toHaveLength(3);
    expect(JSON.parse(Buffer.from(sim.serviceRoleKey.split('.')[1], 'base64url').toString())).toMatchObject({ role: 'service_role' });
  });

  it('rejects a bad bearer JWT with PGRST301/303 and WWW-Authenticate', async () => {
    const parts = await call('GET', '/todos', { key: sim.anonKey, headers: { authorization: 'Bearer abc' } });
    expectError(parts, 401, { code: 'PGRST301', message: 'Expected 3 parts in JWT; got 1' });
    expect(parts.headers.get('www-authenticate')).toBe('Bearer error="invalid_token", error_description="Expected 3 parts in JWT; got 1"');
    const forged = sim.anonKey.slice(0, -4) + (sim.anonKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const signature = await call('GET', '/todos', { key: sim.anonKey, headers: { authorization: `Bearer ${forged}` } });
    expectError(signature, 401, { code: 'PGRST301', message: 'JWT cryptographic operation failed' });
    const expired = sim.signJwt({ role: 'authenticated', sub: 'alice', exp: Math.floor(Date.now() / 1000) - 10 });
    expectError(await call('GET', '/todos', { key: sim.anonKey, headers: { authorization: `Bearer ${expired}` } }), 401, {
      code: 'PGRST303',
      message: 'JWT expired',
    });
  });

  it('a JWT with an unknown role gets 401 22023 from Postgres', async () => {
    const token = sim.signJwt({ role: 'superhero' });
    const reply = await call('GET', '/todos', { key: sim.anonKey, headers: { authorization: `Bearer ${token}` } });
    expectError(reply, 401, { code: '22023', message: 'role "superhero" does not exist' });
  });

  it('records requests and plays scripted faults', async () => {
    sim.faults.push({ method: 'GET', pathPrefix: '/rest/v1/todos', status: 503, body: { message: 'upstream down' } });
    const faulted = await call('GET', '/todos?id=eq.1');
    expect(faulted.status).toBe(503);
    expect(faulted.json).toEqual({ message: 'upstream down' });
    expect((await call('GET', '/todos?id=eq.1')).status).toBe(200);
    expect(sim.requests.map((r) => [r.method, r.path, r.query.get('id')])).toEqual([
      ['GET', '/rest/v1/todos', 'eq.1'],
      ['GET', '/rest/v1/todos', 'eq.1'],
    ]);
  });
});

describe('row-level security and grants', () => {
  it('anon sees only public todos, service_role all, a user its own', async () => {
    const anon = await call('GET', '/todos?select=owner', { key: sim.anonKey });
    expect(new Set(anon.json.map((r: { owner: string }) => r.owner))).toEqual(new Set(['public']));
    expect((await call('GET', '/todos', { key: sim.secretKey })).json).toHaveLength(5);
    const alice = sim.signJwt({ role: 'authenticated', sub: 'alice' });
    const mine = await call('GET', '/todos?select=title', { key: sim.anonKey, headers: { authorization: `Bearer ${alice}` } });
    expect(mine.json).toEqual([{ title: 'Call mom' }]);
  });

  it('refuses an anon insert outside the policy with 401, and a user insert with 403', async () => {
    const anon = await call('POST', '/todos', { key: sim.anonKey, body: { title: 'sneaky', owner: 'bob' } });
    expectError(anon, 401, { code: '42501', message: 'new row violates row-level security policy for table "todos"' });
    expect(anon.headers.get('www-authenticate')).toBe('Bearer');
    const alice = sim.signJwt({ role: 'authenticated', sub: 'alice' });
    const user = await call('POST', '/todos', { key: sim.anonKey, headers: { authorization: `Bearer ${alice}` }, body: { title: 'sneaky', owner: 'bob' } });
    expectError(user, 403, { code: '42501', message: 'new row violates row-level security policy for table "todos"' });
    expect(await sim.sql(`SELECT * FROM todos WHERE title = 'sneaky'`)).toEqual([]);
    const allowed = await call('POST', '/todos', { key: sim.anonKey, body: { title: 'fine', owner: 'public' } });
    expect(allowed.status).toBe(201);
  });

  it('answers permission denied without a grant: 401 for anon, 403 for a user; service_role reads', async () => {
    expectError(await call('GET', '/secrets', { key: sim.anonKey }), 401, { code: '42501', message: 'permission denied for table secrets' });
    const user = sim.signJwt({ role: 'authenticated', sub: 'alice' });
    expectError(await call('GET', '/secrets', { key: sim.anonKey, headers: { authorization: `Bearer ${user}` } }), 403, {
      code: '42501',
      message: 'permission denied for table secrets',
    });
    expect((await call('GET', '/secrets?select=label')).json).toEqual([{ label: 'stripe' }]);
  });

  it('silently skips rows anon cannot see on update and delete', async () => {
    const update = await call('PATCH', '/todos?owner=eq.alice', { key: sim.anonKey, headers: { prefer: 'return=representation' }, body: { done: true } });
    expect(update.status).toBe(200);
    expect(update.json).toEqual([]);
    const remove = await call('DELETE', '/todos?owner=eq.bob', { key: sim.anonKey });
    expect(remove.status).toBe(204);
    expect(await sim.sql(`SELECT title, done FROM todos WHERE owner IN ('alice', 'bob') ORDER BY id`)).toEqual([
      { title: 'Call mom', done: false },
      { title: 'Plan trip', done: false },
    ]);
  });
});

describe('horizontal filters', () => {
  it('compares with eq, neq, gt, gte, lt, lte on numbers, dates and text', async () => {
    expect(await names([['age', 'eq.41']])).toEqual(['Hebdon, John']);
    expect(await names([['age', 'gt.60']])).toEqual(['dot.name', 'null']);
    expect(await names([['age', 'gte.61']])).toEqual(['dot.name', 'null']);
    expect(await names([['age', 'lt.19']])).toEqual(['back\\slash', '']);
    expect(await names([['age', 'lte.0']])).toEqual(['']);
    expect(await names([['born', 'lt.1970-01-01']])).toEqual(['dot.name', 'null']);
    expect(await names([['score', 'gte.92.25']])).toEqual(['Williams, Mary', 'dot.name']);
    expect((await names([['name', 'neq.Hebdon, John']])).includes('Hebdon, John')).toBe(false);
    expect(
      await names([
        ['active', 'eq.false'],
        ['age', 'lt.30'],
      ]),
    ).toEqual(["O'Brien (Jr.)", 'Zoë Ünicode 日本', '']);
  });

  it('takes everything after <op>. literally, quotes included', async () => {
    expect(await names([['name', 'eq.Hebdon, John']])).toEqual(['Hebdon, John']);
    expect(await names([['name', 'eq."Quoted" Name']])).toEqual(['"Quoted" Name']);
    expect(await names([['name', "eq.O'Brien (Jr.)"]])).toEqual(["O'Brien (Jr.)"]);
    expect(await names([['name', 'eq.back\\slash']])).toEqual(['back\\slash']);
    expect(await names([['name', 'eq.dot.name']])).toEqual(['dot.name']);
    expect(await names([['name', 'eq.Zoë Ünicode 日本']])).toEqual(['Zoë Ünicode 日本']);
    expect(await names([['name', 'eq.']])).toEqual(['']);
    expect(await names([['name', 'eq.null']])).toEqual(['null']);
    expect(await names([['name', 'eq. leading space']])).toEqual([' leading space']);
  });

  it('matches like (case-sensitive) and ilike with * standing for %', async () => {
    expect(await names([['name', 'like.*name']])).toEqual(['dot.name', 'star*name']);
    expect(await names([['name', 'like.%name']])).toEqual(['dot.name', 'star*name']);
    expect(await names([['name', 'ilike.*NAME']])).toEqual(['"Quoted" Name', 'dot.name', 'star*name']);
    expect(await names([['name', 'ilike.zoË*']])).toEqual(['Zoë Ünicode 日本']);
    expect(await names([['name', 'like.100\\%*']])).toEqual(['100% real']);
    expect(await names([['name', 'like.under\\_score']])).toEqual(['under_score']);
    expect(await names([['name', 'like.star*']])).toEqual(['star*name']);
  });

  it('matches in lists with quoting rules', async () => {
    expect(await names([['name', 'in.("Hebdon, John","Williams, Mary")']])).toEqual(['Hebdon, John', 'Williams, Mary']);
    expect(await names([['name', 'in.("\\"Quoted\\" Name","back\\\\slash")']])).toEqual(['"Quoted" Name', 'back\\slash']);
    expect(await names([['name', "in.(dot.name,null,O'Brien (Jr.)"]])).toEqual(['dot.name', 'null']);
    expect(await names([['name', 'in.(" leading space","")']])).toEqual(['', ' leading space']);
    expect(await names([['age', 'in.(18,41)']])).toEqual(['Hebdon, John', 'back\\slash']);
    // PostgREST collapses a lone empty element to the empty list.
    expect(await names([['name', 'in.()']])).toEqual([]);
    expect(await names([['name', 'in.("")']])).toEqual([]);
  });

  it('tests is null, not_null, true, false, unknown (any case)', async () => {
    expect(await names([['name', 'is.null']])).toEqual([null]);
    expect((await names([['name', 'is.not_null']])).length).toBe(13);
    expect((await names([['active', 'is.TRUE']])).length).toBe(7);
    expect(await names([['active', 'is.false']])).toEqual(["O'Brien (Jr.)", 'Zoë Ünicode 日本', 'star*name', '']);
    expect(await names([['active', 'is.unknown']])).toEqual(['back\\slash', ' leading space', null]);
  });

  it('negates with not. and combines or/and trees with quoted values', async () => {
    expect((await names([['active', 'not.is.null']])).length).toBe(11);
    expect(
      await names([
        ['age', 'not.lt.60'],
        ['name', 'not.eq.null'],
      ]),
    ).toEqual(['dot.name']);
    expect(await names([['or', '(name.eq."Hebdon, John",name.eq."O\'Brien (Jr.)",age.eq.64)']])).toEqual(['Hebdon, John', "O'Brien (Jr.)", 'dot.name']);
    expect(await names([['or', '(name.in.("Williams, Mary","\\"Quoted\\" Name"),and(age.gt.60,name.neq.null))']])).toEqual([
      'Williams, Mary',
      '"Quoted" Name',
      'dot.name',
    ]);
    expect(await names([['and', '(age.gte.40,age.lte.50)']])).toEqual(['Hebdon, John', '100% real']);
    expect(await names([['not.or', '(age.lt.60,age.is.null)']])).toEqual(['dot.name', 'null']);
    expect(await names([['or', '(name.like.*日本,name.ilike."*JOHN*")']])).toEqual(['Hebdon, John', 'Zoë Ünicode 日本']);
  });

  it('supports quantified like, isdistinct, match and full-text operators', async () => {
    expect(await names([['name', 'like(any).{dot*,star*}']])).toEqual(['dot.name', 'star*name']);
    expect(await names([['name', 'ilike(all).{*A*,*E*}']])).toEqual(['"Quoted" Name', 'dot.name', '100% real', 'star*name', ' leading space']);
    expect(
      await names([
        ['active', 'isdistinct.true'],
        ['age', 'lt.25'],
      ]),
    ).toEqual(['back\\slash', 'Zoë Ünicode 日本', '']);
    expect(await names([['name', 'match.^[A-Z][a-z]+, ']])).toEqual(['Hebdon, John', 'Williams, Mary']);
    expect(await names([['name', 'imatch.^z']])).toEqual(['Zoë Ünicode 日本']);
    expect(await names([['name', 'fts(simple).john']])).toEqual(['Hebdon, John']);
    expect(await names([['name', 'wfts."real"']])).toEqual(['100% real']);
  });
});

describe('select, order and paging', () => {
  it('selects columns, *, aliases and casts', async () => {
    const reply = await get('contacts', [
      ['select', 'id,who:name,age::text,score'],
      ['id', 'eq.1'],
    ]);
    expect(reply.json).toEqual([{ id: 1, who: 'Hebdon, John', age: '41', score: 88.5 }]);
    expect(reply.text).toContain('"score":88.50');
    const star = await get('todos', [
      ['select', '*'],
      ['id', 'eq.1'],
    ]);
    expect(star.json).toEqual([{ id: 1, title: 'Buy milk', done: false, owner: 'public' }]);
    expect(
      (
        await get('todos', [
          ['select', ''],
          ['id', 'eq.1'],
        ])
      ).json,
    ).toEqual([{}]);
  });

  it('orders by several columns with nulls placement', async () => {
    const reply = await get('contacts', [
      ['select', 'active,id'],
      ['order', 'active.desc.nullslast,id.desc'],
      ['limit', '4'],
    ]);
    expect(reply.json).toEqual([
      { active: true, id: 12 },
      { active: true, id: 10 },
      { active: true, id: 8 },
      { active: true, id: 6 },
    ]);
    const nullsFirst = await get('contacts', [
      ['select', 'id'],
      ['order', 'age.asc.nullsfirst'],
      ['limit', '2'],
    ]);
    expect(nullsFirst.json).toEqual([{ id: 14 }, { id: 11 }]);
  });

  it('pages with limit/offset and the Range header, with Content-Range', async () => {
    const page = await get('todos', [
      ['select', 'id'],
      ['order', 'id'],
      ['limit', '2'],
      ['offset', '1'],
    ]);
    expect(page.status).toBe(200);
    expect(page.json).toEqual([{ id: 2 }, { id: 3 }]);
    expect(page.headers.get('content-range')).toBe('1-2/*');
    const ranged = await call('GET', '/todos?select=id&order=id', { headers: { range: '3-10' } });
    expect(ranged.json).toEqual([{ id: 4 }, { id: 5 }]);
    expect(ranged.headers.get('content-range')).toBe('3-4/*');
  });

  it('counts with Prefer: count=exact (206 when partial, 200 when whole, */0 when empty)', async () => {
    const partial = await call('GET', '/todos?select=id&limit=2', { headers: { prefer: 'count=exact' } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get('content-range')).toBe('0-1/5');
    const whole = await call('GET', '/todos?select=id', { headers: { prefer: 'count=exact' } });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-range')).toBe('0-4/5');
    const none = await call('GET', '/todos?id=gt.100', { headers: { prefer: 'count=exact' } });
    expect([none.status, none.headers.get('content-range'), none.json]).toEqual([200, '*/0', []]);
    const noCount = await call('GET', '/todos?id=gt.100');
    expect(noCount.headers.get('content-range')).toBe('*/*');
    const head = await call('HEAD', '/todos?done=is.true', { headers: { prefer: 'count=exact' } });
    expect([head.status, head.headers.get('content-range'), head.text]).toEqual([200, '0-1/2', '']);
    const anon = await call('GET', '/todos?limit=1', { key: sim.anonKey, headers: { prefer: 'count=exact' } });
    expect(anon.headers.get('content-range')).toBe('0-0/3');
  });

  it('answers 416 PGRST103 for an offset beyond the total', async () => {
    const reply = await call('GET', '/todos?offset=9', { headers: { prefer: 'count=exact' } });
    expect(reply.status).toBe(416);
    expect(reply.json).toEqual({
      code: 'PGRST103',
      details: 'An offset of 9 was requested, but there are only 5 rows.',
      hint: null,
      message: 'Requested range not satisfiable',
    });
    expect(reply.headers.get('content-range')).toBe('*/5');
    expect((await call('GET', '/todos?offset=9')).json).toEqual([]);
  });

  it('caps a response at db-max-rows', async () => {
    const small = await startPostgrestSandbox({ maxRows: 2 });
    try {
      const reply = await fetch(`${small.restUrl}/todos?select=id`, { headers: { apikey: small.serviceRoleKey, prefer: 'count=exact' } });
      expect(reply.status).toBe(206);
      expect(reply.headers.get('content-range')).toBe('0-1/5');
    } finally {
      await small.close();
    }
  });

  it('returns one object for vnd.pgrst.object+json, else 406 PGRST116', async () => {
    const one = await call('GET', '/todos?id=eq.1&select=title', { headers: { accept: 'application/vnd.pgrst.object+json' } });
    expect(one.json).toEqual({ title: 'Buy milk' });
    expect(one.headers.get('content-type')).toBe('application/vnd.pgrst.object+json; charset=utf-8');
    const many = await call('GET', '/todos', { headers: { accept: 'application/vnd.pgrst.object+json' } });
    expectError(many, 406, { code: 'PGRST116', message: 'Cannot coerce the result to a single JSON object', details: 'The result contains 5 rows' });
  });
});

describe('inserts', () => {
  it('inserts one row: 201 without body by default, the row with return=representation', async () => {
    const minimal = await call('POST', '/todos', { body: { title: 'one' } });
    expect([minimal.status, minimal.text, minimal.headers.get('content-range')]).toEqual([201, '', '*/*']);
    const rep = await call('POST', '/todos?select=title,done', { headers: { prefer: 'return=representation' }, body: { title: 'two', done: true } });
    expect(rep.status).toBe(201);
    expect(rep.json).toEqual([{ title: 'two', done: true }]);
    expect(rep.headers.get('preference-applied')).toBe('return=representation');
  });

  it('gives a Location with return=headers-only and a count with count=exact', async () => {
    const reply = await call('POST', '/todos', { headers: { prefer: 'return=headers-only, count=exact' }, body: [{ title: 'h1' }, { title: 'h2' }] });
    expect(reply.status).toBe(201);
    const [{ id }] = await sim.sql<{ id: number }>(`SELECT id FROM todos WHERE title = 'h1'`);
    expect(reply.headers.get('location')).toBe(`/todos?id=eq.${id}`);
    expect(reply.headers.get('content-range')).toBe('*/2');
  });

  it('inserts a bulk array whose objects share keys, and refuses differing keys with PGRST102', async () => {
    const rep = await call('POST', '/contacts?select=name,age', {
      headers: { prefer: 'return=representation' },
      body: [
        { name: 'A, (b)', age: 1 },
        { age: 2, name: 'ü "q"' },
      ],
    });
    expect(rep.json).toEqual([
      { name: 'A, (b)', age: 1 },
      { name: 'ü "q"', age: 2 },
    ]);
    const mismatch = await call('POST', '/contacts', { body: [{ name: 'x' }, { name: 'y', age: 3 }] });
    expectError(mismatch, 400, { code: 'PGRST102', message: 'All object keys must match' });
  });

  it('with columns= fills missing keys with NULL, or the default with missing=default, and ignores other keys', async () => {
    const nulls = await call('POST', '/todo_notes?columns=todo_id,body&select=todo_id,body', {
      headers: { prefer: 'return=representation' },
      body: [
        { todo_id: 1, body: 'a' },
        { todo_id: 2, body: 'b', ignored: 'x' },
      ],
    });
    expect(nulls.json).toEqual([
      { todo_id: 1, body: 'a' },
      { todo_id: 2, body: 'b' },
    ]);
    const missingTitle = await call('POST', '/todos?columns="title","done"', { body: [{ title: 'c1' }, { title: 'c2', done: true }] });
    expectError(missingTitle, 400, {
      code: '23502',
      message: 'null value in column "done" of relation "todos" violates not-null constraint',
      details: expect.any(String),
    });
    const defaults = await call('POST', '/todos?columns="title","done"&select=title,done', {
      headers: { prefer: 'return=representation,missing=default' },
      body: [{ title: 'c1' }, { title: 'c2', done: true }],
    });
    expect(defaults.json).toEqual([
      { title: 'c1', done: false },
      { title: 'c2', done: true },
    ]);
  });

  it('refuses unknown body keys and columns= entries with PGRST204, bad JSON with PGRST102', async () => {
    expectError(await call('POST', '/todos', { body: { title: 'x', helicopter: 1 } }), 400, {
      code: 'PGRST204',
      message: "Could not find the 'helicopter' column of 'todos' in the schema cache",
    });
    expectError(await call('POST', '/todos?columns=title,rotor', { body: { title: 'x' } }), 400, {
      code: 'PGRST204',
      message: "Could not find the 'rotor' column of 'todos' in the schema cache",
    });
    expectError(await call('POST', '/todos', { body: '{"title": ' }), 400, { code: 'PGRST102', message: 'Empty or invalid json' });
    expectError(await call('PATCH', '/todos?id=eq.1', { body: '' }), 400, { code: 'PGRST102', message: 'Empty or invalid json' });
  });
});

describe('updates and deletes', () => {
  it('updates: 204 by default, 200 with the rows for return=representation', async () => {
    const minimal = await call('PATCH', '/todos?id=eq.1', { body: { done: true } });
    expect([minimal.status, minimal.text, minimal.headers.get('content-range')]).toEqual([204, '', '0-0/*']);
    const rep = await call('PATCH', '/todos?done=is.true&select=id', { headers: { prefer: 'return=representation, count=exact' }, body: { owner: 'carol' } });
    expect(rep.status).toBe(200);
    expect(rep.json.map((r: { id: number }) => r.id).sort()).toEqual([1, 2, 5]);
    expect(rep.headers.get('content-range')).toBe('0-2/3');
    const none = await call('PATCH', '/todos?id=eq.999', { headers: { prefer: 'count=exact' }, body: { done: true } });
    expect([none.status, none.headers.get('content-range')]).toEqual([204, '*/0']);
  });

  it('deletes: 204 by default, 200 with the deleted rows for return=representation', async () => {
    const rep = await call('DELETE', '/todos?or=(id.eq.1,id.eq.2)&select=title', { headers: { prefer: 'return=representation' } });
    expect([rep.status, rep.json]).toEqual([200, [{ title: 'Buy milk' }, { title: 'Write report' }]]);
    const minimal = await call('DELETE', '/todos?id=eq.3', { headers: { prefer: 'count=exact' } });
    expect([minimal.status, minimal.text, minimal.headers.get('content-range')]).toEqual([204, '', '*/1']);
    expect(await sim.sql('SELECT count(*)::int AS n FROM todos')).toEqual([{ n: 2 }]);
    expect(await sim.sql('SELECT count(*)::int AS n FROM todo_notes')).toEqual([{ n: 0 }]);
  });

  it('refuses PATCH and DELETE without any filter (pg-safeupdate) and changes nothing', async () => {
    expect(await call('DELETE', '/todos')).toMatchObject({
      status: 400,
      json: { code: '21000', details: null, hint: null, message: 'DELETE requires a WHERE clause' },
    });
    expect(await call('PATCH', '/todos?select=id', { body: { done: true } })).toMatchObject({
      status: 400,
      json: { code: '21000', details: null, hint: null, message: 'UPDATE requires a WHERE clause' },
    });
    expect(await sim.sql('SELECT count(*)::int AS n FROM todos WHERE done')).toEqual([{ n: 2 }]);
    expect((await call('DELETE', '/todos?or=(id.eq.-1)')).status).toBe(204);
  });

  it('refuses more affected rows than max-affected with handling=strict, rolling back', async () => {
    const reply = await call('DELETE', '/todos?id=gt.0', { headers: { prefer: 'handling=strict, max-affected=2' } });
    expectError(reply, 400, { code: 'PGRST124', message: 'Query result exceeds max-affected preference constraint', details: 'The query affects 5 rows' });
    expect(await sim.sql('SELECT count(*)::int AS n FROM todos')).toEqual([{ n: 5 }]);
  });
});

describe('error bodies', () => {
  it('PGRST205 for an unknown table, with a hint when a name is close', async () => {
    expectError(await call('GET', '/todo'), 404, {
      code: 'PGRST205',
      hint: "Perhaps you meant the table 'public.todos'",
      message: "Could not find the table 'public.todo' in the schema cache",
    });
    expectError(await call('GET', '/helicopters'), 404, { code: 'PGRST205', message: "Could not find the table 'public.helicopters' in the schema cache" });
  });

  it('emulates PostgREST 12: 42P01 for an unknown table and no Proxy-Status', async () => {
    const old = await startPostgrestSandbox({ version: 12 });
    try {
      const reply = await fetch(`${old.restUrl}/projectx`, { headers: { apikey: old.anonKey } });
      expect(reply.status).toBe(404);
      expect(await reply.json()).toEqual({ code: '42P01', details: null, hint: null, message: 'relation "public.projectx" does not exist' });
      expect(reply.headers.get('proxy-status')).toBeNull();
      const notNull = await fetch(`${old.restUrl}/contacts?name=is.not_null`, { headers: { apikey: old.anonKey } });
      expect(notNull.status).toBe(400);
      expect((await notNull.json()).code).toBe('PGRST100');
    } finally {
      await old.close();
    }
  });

  it('42703 for unknown columns in select, filter and order', async () => {
    expectError(await call('GET', '/todos?select=id,banana'), 400, { code: '42703', message: 'column todos.banana does not exist' });
    expectError(await call('GET', '/todos?titl=eq.x'), 400, {
      code: '42703',
      message: 'column todos.titl does not exist',
      hint: 'Perhaps you meant to reference the column "todos.title".',
    });
    expectError(await call('GET', '/todos?order=banana.desc'), 400, { code: '42703', message: 'column todos.banana does not exist' });
  });

  it('constraint violations: 23505 and 23503 are 409, 23502 and 23514 are 400', async () => {
    expectError(await call('POST', '/contacts', { body: { name: 'dup', email: 'john@example.com' } }), 409, {
      code: '23505',
      details: 'Key (email)=(john@example.com) already exists.',
      message: 'duplicate key value violates unique constraint "contacts_email_key"',
    });
    expectError(await call('POST', '/todo_notes', { body: { todo_id: 999, body: 'x' } }), 409, {
      code: '23503',
      details: 'Key (todo_id)=(999) is not present in table "todos".',
      message: 'insert or update on table "todo_notes" violates foreign key constraint "todo_notes_todo_id_fkey"',
    });
    const notNull = await call('POST', '/todos', { body: { title: null } });
    expectError(notNull, 400, {
      code: '23502',
      message: 'null value in column "title" of relation "todos" violates not-null constraint',
      details: expect.any(String),
    });
    const check = await call('PATCH', '/contacts?id=eq.1', { body: { age: -1 } });
    expectError(check, 400, {
      code: '23514',
      message: 'new row for relation "contacts" violates check constraint "contacts_age_check"',
      details: expect.any(String),
    });
  });

  it('22P02 for a value of the wrong type, in a filter or a body', async () => {
    expectError(await call('GET', '/contacts?age=eq.abc'), 400, { code: '22P02', message: 'invalid input syntax for type integer: "abc"' });
    expectError(await call('POST', '/contacts', { body: { age: 'old' } }), 400, { code: '22P02', message: 'invalid input syntax for type integer: "old"' });
  });

  it('PGRST100 for filter, logic tree, order and select syntax errors', async () => {
    expectError(await call('GET', '/todos?id=foo.1'), 400, {
      code: 'PGRST100',
      message: '"failed to parse filter (foo.1)" (line 1, column 1)',
      details: 'unexpected "f" expecting "not" or operator (eq, gt, ...)',
    });
    expectError(await call('GET', '/todos?id=in.1,2'), 400, {
      code: 'PGRST100',
      message: '"failed to parse filter (in.1,2)" (line 1, column 4)',
      details: 'unexpected "1" expecting "("',
    });
    const tree = await call('GET', `/todos?or=${encodeURIComponent('(id.eq.1,title.eq.x')}`);
    expect(tree.json).toMatchObject({ code: 'PGRST100', message: '"failed to parse logic tree ((id.eq.1,title.eq.x)" (line 1, column 22)' });
    expect((await call('GET', '/todos?order=id.sideways')).json).toMatchObject({
      code: 'PGRST100',
      message: '"failed to parse order (id.sideways)" (line 1, column 3)',
    });
    expect((await call('GET', '/todos?select=id,,title')).json).toMatchObject({
      code: 'PGRST100',
      message: '"failed to parse select parameter (id,,title)" (line 1, column 4)',
    });
    expect((await call('GET', '/todos?columns=')).status).toBe(400);
  });

  it('PGRST200 for an embed, PGRST108 for a filter on an embed, 404 for routes outside the API', async () => {
    expect((await call('GET', '/todos?select=id,todo_notes(*)')).json).toMatchObject({ code: 'PGRST200' });
    expect((await call('GET', '/todos?todo_notes.id=eq.1')).json).toMatchObject({ code: 'PGRST108' });
    const outside = await fetch(`${sim.url}/auth/v1/user`, { headers: { apikey: sim.anonKey } });
    expect(outside.status).toBe(404);
  });
});

describe('sql helper', () => {
  it('runs statements as owner and reloads the schema cache', async () => {
    await sim.sql('CREATE TABLE gadgets (id int PRIMARY KEY, label text); GRANT SELECT ON gadgets TO anon');
    await sim.sql('INSERT INTO gadgets VALUES ($1, $2)', [1, 'lamp']);
    expect((await call('GET', '/gadgets', { key: sim.anonKey })).json).toEqual([{ id: 1, label: 'lamp' }]);
  });
});
