// The n8n sandbox, driven with plain fetch over loopback, checked against docs/provider-coverage.md
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startN8nSandbox, type N8nSandbox, type N8nWorkflow } from '../../sandboxes/n8n/n8n-sandbox.ts';

let sim: N8nSandbox;
beforeAll(async () => {
  sim = await startN8nSandbox({ slowWebhookMs: 300 });
});
afterAll(() => sim.close());

interface Page {
  data: N8nWorkflow[];
  nextCursor: string | null;
}

async function api(path: string, init: RequestInit & { key?: string | null } = {}) {
  const { key = sim.apiKey, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (key !== null) headers.set('X-N8N-API-KEY', key);
  const res = await fetch(`${sim.url}/api/v1${path}`, { ...rest, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function list(query = '', key?: string): Promise<Page> {
  const res = await api(`/workflows${query ? `?${query}` : ''}`, { key });
  expect(res.status).toBe(200);
  return res.body as Page;
}

const names = (page: Page) => page.data.map((w) => w.name);
const decodeCursor = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64').toString('utf8')) as unknown;

async function hook(path: string, init: RequestInit = {}, mode: 'production' | 'test' = 'production') {
  const res = await fetch(sim.webhookUrl(path, mode), { redirect: 'manual', ...init });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  return { status: res.status, headers: res.headers, text, json };
}

const postJson = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

const PRODUCTION_HINT =
  "The workflow must be active for a production URL to run successfully. You can activate the workflow using the toggle in the top-right of the editor. Note that unlike test URL calls, production URL calls aren't shown on the canvas (only in the executions list)";
const TEST_HINT =
  "Click the 'Execute workflow' button on the canvas, then try again. (In test mode, the webhook only works for one call after you click this button)";

describe('public API: auth and routing', () => {
  it('answers 401 with n8n bodies for a missing or wrong key', async () => {
    expect(await api('/workflows', { key: null })).toMatchObject({ status: 401, body: { message: "'X-N8N-API-KEY' header required" } });
    expect(await api('/workflows', { key: 'n8n_api_wrong' })).toMatchObject({ status: 401, body: { message: 'unauthorized' } });
    expect(await api(`/workflows/${sim.ids.hello}`, { key: 'wrong' })).toMatchObject({ status: 401, body: { message: 'unauthorized' } });
  });

  it('answers unknown routes with 404 "not found" (before the key is checked) and wrong methods with 405', async () => {
    expect(await api('/credentialz', { key: null })).toMatchObject({ status: 404, body: { message: 'not found' } });
    expect(await api(`/workflows/${sim.ids.hello}/nope`)).toMatchObject({ status: 404, body: { message: 'not found' } });
    expect(await api('/workflows', { method: 'PATCH' })).toMatchObject({ status: 405, body: { message: 'PATCH method not allowed' } });
  });

  it('rejects malformed JSON bodies with 400', async () => {
    const res = await api(`/workflows/${sim.ids.hello}/activate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"versionId":',
    });
    expect(res).toMatchObject({ status: 400, body: { message: 'Invalid JSON in request body' } });
  });

  it('records every request and serves scripted faults', async () => {
    const before = sim.requests.length;
    sim.faults.push({ pathPrefix: '/api/v1/workflows', status: 429, body: { message: 'Too many requests' }, headers: { 'retry-after': '2' } });
    const limited = await api('/workflows');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect((await api('/workflows')).status).toBe(200);
    const recorded = sim.requests.slice(before);
    expect(recorded.map((r) => [r.method, r.path])).toEqual([
      ['GET', '/api/v1/workflows'],
      ['GET', '/api/v1/workflows'],
    ]);
    expect(recorded[0].headers['x-n8n-api-key']).toBe(sim.apiKey);
  });
});

describe('GET /api/v1/workflows', () => {
  it('lists every workflow with the full workflow shape', async () => {
    const page = await list();
    expect(page.nextCursor).toBeNull();
    expect(page.data.length).toBe(sim.workflows().length);
    expect(page.data.length).toBeGreaterThanOrEqual(5);
    for (const w of page.data) {
      expect(w.id).toMatch(/^[A-Za-z0-9]{16}$/);
      expect(Object.keys(w)).toEqual(
        expect.arrayContaining(['id', 'name', 'active', 'isArchived', 'versionId', 'activeVersionId', 'triggerCount', 'createdAt', 'updatedAt']),
      );
      expect(Object.keys(w)).toEqual(
        expect.arrayContaining(['nodes', 'connections', 'settings', 'staticData', 'pinData', 'meta', 'tags', 'shared', 'activeVersion']),
      );
      expect(new Date(w.createdAt).toISOString()).toBe(w.createdAt);
      expect(w.settings).toMatchObject({ executionOrder: 'v1' });
      expect(w.active).toBe(w.activeVersionId !== null);
      if (w.active) {
        expect(w.activeVersion).toMatchObject({ versionId: w.activeVersionId, workflowId: w.id });
        expect(w.activeVersion!.nodes).toEqual(w.nodes);
      } else {
        expect(w.activeVersion).toBeNull();
        expect(w.triggerCount).toBe(0);
      }
      for (const tag of w.tags)
        expect(tag).toEqual({
          id: expect.stringMatching(/^[A-Za-z0-9]{16}$/),
          name: expect.any(String),
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        });
      expect(w.shared[0]).toMatchObject({ role: 'workflow:owner', workflowId: w.id, projectId: expect.any(String) });
      for (const node of w.nodes) {
        expect(node).toMatchObject({
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          name: expect.any(String),
          type: expect.any(String),
          parameters: expect.any(Object),
        });
      }
    }
    const hello = page.data.find((w) => w.id === sim.ids.hello)!;
    expect(hello).toMatchObject({ name: 'Hello webhook', active: true, triggerCount: 1, tags: [{ name: 'production' }] });
    expect(hello.nodes[0]).toMatchObject({ type: 'n8n-nodes-base.webhook', parameters: { path: 'hello', httpMethod: 'POST' } });
    expect(hello.connections).toEqual({ Webhook: { main: [[{ node: 'No Operation, do nothing', type: 'main', index: 0 }]] } });
  });

  it('filters by active, derived from the published version', async () => {
    const active = await list('active=true');
    const inactive = await list('active=false');
    expect(active.data.every((w) => w.active && w.activeVersionId !== null)).toBe(true);
    expect(inactive.data.every((w) => !w.active && w.activeVersionId === null)).toBe(true);
    expect(names(inactive)).toEqual(['Draft: lead scoring', 'Scratchpad']);
    expect(active.data.length + inactive.data.length).toBe(sim.workflows().length);
  });

  it('filters by tag names: all must match, unknown names are ignored', async () => {
    const production = await list('tags=production');
    expect(names(production)).toEqual(['Hello webhook', 'Order notifications', 'Header-auth webhook', 'Basic-auth webhook', 'Nightly CRM sync']);
    expect(names(await list('tags=production,internal'))).toEqual(['Header-auth webhook']);
    expect(names(await list('tags=marketing,production'))).toEqual(['Order notifications']);
    expect(names(await list('tags=production,no-such-tag'))).toEqual(names(production));
    expect(await list('tags=no-such-tag')).toEqual({ data: [], nextCursor: null });
    // "archive" exists but tags no workflow: the intersection is empty.
    expect(await list('tags=archive')).toEqual({ data: [], nextCursor: null });
    expect(await list('tags=production,archive')).toEqual({ data: [], nextCursor: null });
  });

  it('filters by name (substring, any case) and by query (name and description)', async () => {
    expect(names(await list('name=WEBHOOK'))).toEqual(['Hello webhook', 'Header-auth webhook', 'Basic-auth webhook']);
    expect(names(await list('name=%20lead%20'))).toEqual(['Lead intake', 'Draft: lead scoring']);
    expect(names(await list('query=crm'))).toEqual(['Order notifications', 'Nightly CRM sync']);
    expect(await list('name=zzz')).toEqual({ data: [], nextCursor: null });
  });

  it('filters by projectId (owning or shared project)', async () => {
    const marketing = await list(`projectId=${sim.projects.marketing.id}`);
    expect(names(marketing)).toEqual(['Greeting (text reply)', 'Lead intake', 'Nightly CRM sync']);
    expect(names(await list(`projectId=${sim.projects.member.id}`))).toEqual(['Scratchpad']);
    expect(await list('projectId=unknownProject01')).toEqual({ data: [], nextCursor: null });
  });

  it('combines filters', async () => {
    expect(names(await list('active=false&tags=marketing'))).toEqual(['Draft: lead scoring']);
    expect(names(await list('active=true&tags=marketing&name=lead'))).toEqual(['Lead intake']);
  });

  it('drops pinData only with excludePinnedData=true', async () => {
    const withPins = (await list('active=false')).data.find((w) => w.id === sim.ids.draft)!;
    expect(withPins.pinData).toEqual({ Webhook: [{ json: expect.objectContaining({ body: { email: 'ada@example.com', score: 42 } }) }] });
    expect((await list('active=false&excludePinnedData=false')).data[0]).toHaveProperty('pinData');
    for (const w of (await list('excludePinnedData=true')).data) expect(w).not.toHaveProperty('pinData');
  });

  it('pages with cursors that are base64 of {limit, offset}', async () => {
    const all = (await list()).data.map((w) => w.id);
    const seen: string[] = [];
    const cursors: unknown[] = [];
    let page = await list('limit=5');
    for (;;) {
      expect(page.data.length).toBeLessThanOrEqual(5);
      seen.push(...page.data.map((w) => w.id));
      if (page.nextCursor === null) break;
      cursors.push(decodeCursor(page.nextCursor));
      page = await list(`cursor=${encodeURIComponent(page.nextCursor)}`);
    }
    expect(seen).toEqual(all);
    expect(cursors).toEqual([
      { limit: 5, offset: 5 },
      { limit: 5, offset: 10 },
    ]);
  });

  it('pages filtered lists when the filters are sent again with the cursor', async () => {
    const first = await list('tags=production&limit=2');
    expect(names(first)).toEqual(['Hello webhook', 'Order notifications']);
    const second = await list(`tags=production&cursor=${first.nextCursor}`);
    expect(names(second)).toEqual(['Header-auth webhook', 'Basic-auth webhook']);
    const third = await list(`tags=production&cursor=${second.nextCursor}`);
    expect(third).toMatchObject({ nextCursor: null });
    expect(names(third)).toEqual(['Nightly CRM sync']);
  });

  it('gives nextCursor null when the page reaches the end exactly', async () => {
    const total = sim.workflows().length;
    expect((await list(`limit=${total}`)).nextCursor).toBeNull();
    expect((await list(`limit=${total - 1}`)).nextCursor).not.toBeNull();
    expect((await list('limit=250')).nextCursor).toBeNull();
  });

  it.each([
    ['limit=251', 'request/query/limit must be <= 250'],
    ['limit=1000', 'request/query/limit must be <= 250'],
    ['limit=0', 'request/query/limit must be >= 1'],
    ['limit=-3', 'request/query/limit must be >= 1'],
    ['limit=ten', 'request/query/limit must be number'],
    ['active=yes', 'request/query/active must be boolean'],
    ['active=1', 'request/query/active must be boolean'],
    ['excludePinnedData=maybe', 'request/query/excludePinnedData must be boolean'],
    ['active=yes&limit=300', 'request/query/active must be boolean, request/query/limit must be <= 250'],
    ['sort=name', "Unknown query parameter 'sort'"],
    ['cursor=not-a-cursor', 'An invalid cursor was provided'],
    [`cursor=${Buffer.from('{"page":2}').toString('base64')}`, 'An invalid cursor was provided'],
    [`cursor=${Buffer.from('{"limit":0,"offset":0}').toString('base64')}`, 'An invalid cursor was provided'],
  ])('rejects %s with 400', async (query, message) => {
    expect(await api(`/workflows?${query}`)).toMatchObject({ status: 400, body: { message } });
  });

  it('shows a member key only the workflows shared with its projects', async () => {
    const page = await list('', sim.memberApiKey);
    expect(names(page)).toEqual(['Greeting (text reply)', 'Lead intake', 'Nightly CRM sync', 'Scratchpad']);
    expect(names(await list('tags=production', sim.memberApiKey))).toEqual(['Nightly CRM sync']);
  });
});

describe('GET /api/v1/workflows/{id}', () => {
  it('returns one workflow, with or without pinData', async () => {
    const res = await api(`/workflows/${sim.ids.draft}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: sim.ids.draft, name: 'Draft: lead scoring', active: false, activeVersion: null, pinData: expect.any(Object) });
    expect(res.body).toEqual(sim.workflow(sim.ids.draft));
    const slim = await api(`/workflows/${sim.ids.draft}?excludePinnedData=true`);
    expect(slim.body).not.toHaveProperty('pinData');
    expect(await api(`/workflows/${sim.ids.draft}?excludePinnedData=nope`)).toMatchObject({
      status: 400,
      body: { message: 'request/query/excludePinnedData must be boolean' },
    });
  });

  it('answers an owner key with 404 "Not Found"', async () => {
    expect(await api('/workflows/AAAAAAAAAAAAAAAA')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
  });

  it('answers a member key with "Workflow with ID ... not found." or 403 for unshared workflows', async () => {
    const key = sim.memberApiKey;
    expect(await api('/workflows/AAAAAAAAAAAAAAAA', { key })).toMatchObject({
      status: 404,
      body: { message: 'Workflow with ID "AAAAAAAAAAAAAAAA" not found.' },
    });
    expect(await api(`/workflows/${sim.ids.hello}`, { key })).toMatchObject({ status: 403, body: { message: 'Forbidden' } });
    expect(await api(`/workflows/${sim.ids.lead}`, { key })).toMatchObject({ status: 200, body: { id: sim.ids.lead } });
    expect(await api(`/workflows/${sim.ids.hello}/activate`, { key, method: 'POST' })).toMatchObject({ status: 403, body: { message: 'Forbidden' } });
  });

  it('lists the tags of a workflow', async () => {
    const res = await api(`/workflows/${sim.ids.orders}/tags`);
    expect(res.status).toBe(200);
    expect((res.body as Array<{ name: string }>).map((t) => t.name)).toEqual(['production', 'marketing']);
  });
});

describe('activate / deactivate / delete', () => {
  it('deactivating unpublishes: active false, no active version, production webhook gone', async () => {
    const off = await api(`/workflows/${sim.ids.hello}/deactivate`, { method: 'POST' });
    expect(off).toMatchObject({ status: 200, body: { id: sim.ids.hello, active: false, activeVersionId: null, activeVersion: null, triggerCount: 0 } });
    expect(names(await list('active=false'))).toContain('Hello webhook');
    expect(await hook('hello', postJson({}))).toMatchObject({
      status: 404,
      json: { message: 'The requested webhook "POST hello" is not registered.', hint: PRODUCTION_HINT },
    });

    const on = await api(`/workflows/${sim.ids.hello}/activate`, { method: 'POST' });
    const body = on.body as N8nWorkflow;
    expect(on.status).toBe(200);
    expect(body).toMatchObject({ active: true, activeVersionId: body.versionId, triggerCount: 1 });
    expect(Date.parse(body.updatedAt)).toBeGreaterThan(Date.parse(body.createdAt));
    expect((await hook('hello', postJson({}))).status).toBe(200);
  });

  it('activating an inactive workflow registers its production webhook', async () => {
    expect((await hook('lead-score', postJson({ email: 'x@example.com' }))).status).toBe(404);
    await api(`/workflows/${sim.ids.draft}/activate`, { method: 'POST' });
    try {
      expect(await hook('lead-score', postJson({ email: 'x@example.com' }))).toMatchObject({ status: 200, json: { body: { email: 'x@example.com' } } });
    } finally {
      sim.setActive(sim.ids.draft, false);
    }
    expect((await hook('lead-score', postJson({}))).status).toBe(404);
  });

  it('answers 404 "Not Found" for unknown ids', async () => {
    expect(await api('/workflows/AAAAAAAAAAAAAAAA/activate', { method: 'POST' })).toMatchObject({ status: 404, body: { message: 'Not Found' } });
  });

  it('deletes a workflow and returns it', async () => {
    const other = await startN8nSandbox();
    try {
      const id = other.ids.scratch;
      const res = await fetch(`${other.url}/api/v1/workflows/${id}`, { method: 'DELETE', headers: { 'X-N8N-API-KEY': other.apiKey } });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, name: 'Scratchpad' });
      expect(other.workflow(id)).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});

describe('production webhooks', () => {
  it('runs an active workflow and answers with what the Webhook node received (lastNode)', async () => {
    const before = sim.webhookCalls.length;
    const res = await hook('hello?source=test&tag=a&tag=b', postJson({ name: 'Ada', n: 1 }, { 'X-Trace-Id': 'trace-123' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.json).toMatchObject({
      body: { name: 'Ada', n: 1 },
      query: { source: 'test', tag: ['a', 'b'] },
      params: {},
      headers: { 'x-trace-id': 'trace-123', 'content-type': 'application/json' },
      webhookUrl: `${sim.url}/webhook/hello`,
      executionMode: 'production',
    });
    expect(sim.webhookCalls.slice(before)).toEqual([
      expect.objectContaining({ mode: 'production', workflowId: sim.ids.hello, method: 'POST', path: 'hello', body: { name: 'Ada', n: 1 } }),
    ]);
  });

  it.each(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])('serves %s on a webhook registered for every method', async (method) => {
    const before = sim.webhookCalls.length;
    const withBody = method !== 'GET';
    const res = await hook('echo?x=1', withBody ? { method, headers: { 'content-type': 'application/json' }, body: '{"m":"' + method + '"}' } : { method });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ query: { x: '1' }, body: withBody ? { m: method } : {} });
    expect(sim.webhookCalls.slice(before)).toEqual([expect.objectContaining({ method, workflowId: sim.ids.echo })]);
  });

  it('ignores a trailing slash and matches paths containing slashes', async () => {
    expect((await hook('hello/', postJson({}))).status).toBe(200);
    expect(await hook('orders/new', postJson({ order: 1 }))).toMatchObject({ status: 200, json: { message: 'Workflow was started' } });
  });

  it('answers onReceived workflows immediately with "Workflow was started"', async () => {
    const res = await hook('contact', { method: 'GET' });
    expect(res).toMatchObject({ status: 200, json: { message: 'Workflow was started' } });
  });

  it('answers unknown and inactive paths with the not-registered 404 and the production hint', async () => {
    expect(await hook('nope', postJson({}))).toMatchObject({
      status: 404,
      json: { code: 404, message: 'The requested webhook "POST nope" is not registered.', hint: PRODUCTION_HINT },
    });
    // "Draft: lead scoring" has this path but is not active.
    expect(await hook('lead-score', { method: 'GET' })).toMatchObject({
      status: 404,
      json: { code: 404, message: 'The requested webhook "GET lead-score" is not registered.', hint: PRODUCTION_HINT },
    });
  });

  it('answers a registered path called with the wrong method with the "Did you mean" 404 (no hint)', async () => {
    const one = await hook('hello', { method: 'GET' });
    expect(one.status).toBe(404);
    expect(one.json).toEqual({ code: 404, message: 'This webhook is not registered for GET requests. Did you mean to make a POST request?' });
    const two = await hook('contact', { method: 'DELETE' });
    expect(two.json).toEqual({ code: 404, message: 'This webhook is not registered for DELETE requests. Did you mean to make a GET or POST request?' });
  });

  it('answers through a Respond to Webhook node: text', async () => {
    const res = await hook('greet?name=Ada', { method: 'GET' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.text).toBe('Hello Ada!');
  });

  it('answers through a Respond to Webhook node: first item with status code and headers', async () => {
    const res = await hook('lead', postJson({ email: 'lin@example.com' }));
    expect(res.status).toBe(201);
    expect(res.headers.get('x-lead-status')).toBe('received');
    expect(res.json).toMatchObject({ body: { email: 'lin@example.com' }, executionMode: 'production' });
  });

  it('answers through a Respond to Webhook node: redirect', async () => {
    const res = await hook('moved', postJson({}));
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe(`${sim.url}/webhook/hello`);
  });

  it('parses form bodies and refuses malformed JSON with 422', async () => {
    const form = await hook('hello', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=two' });
    expect(form.json).toMatchObject({ body: { a: '1', b: 'two' } });
    const bad = await hook('hello', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
    expect(bad).toMatchObject({ status: 422, json: { code: 422, message: 'Failed to parse request body' } });
  });

  it('answers 500 "Error in workflow" when the workflow fails', async () => {
    expect(await hook('fail', postJson({}))).toMatchObject({ status: 500, json: { message: 'Error in workflow' } });
  });

  describe('slow webhook', () => {
    beforeEach(() => sim.setSlowWebhookDelay(300));

    it('waits for its Wait node before answering', async () => {
      const started = Date.now();
      const res = await hook('slow', postJson({ report: 'q1' }));
      expect(res).toMatchObject({ status: 200, json: { body: { report: 'q1' } } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    });

    it('lets a client time out, and the delay is configurable', async () => {
      await expect(hook('slow', { ...postJson({}), signal: AbortSignal.timeout(100) })).rejects.toThrow(/timeout|abort/i);
      sim.setSlowWebhookDelay(0);
      const started = Date.now();
      expect((await hook('slow', postJson({}))).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(250);
    });
  });

  describe('webhook authentication', () => {
    it('header auth: 403 "Authorization data is wrong!" when missing or wrong, runs when right', async () => {
      const before = sim.webhookCalls.length;
      const missing = await hook('secure-header', postJson({}));
      expect(missing).toMatchObject({ status: 403, text: 'Authorization data is wrong!' });
      expect(missing.headers.get('www-authenticate')).toBe('Basic realm="Webhook"');
      const wrong = await hook('secure-header', postJson({}, { [sim.secrets.headerAuth.name]: 'guess' }));
      expect(wrong).toMatchObject({ status: 403, text: 'Authorization data is wrong!' });
      expect(sim.webhookCalls.length).toBe(before);
      const right = await hook('secure-header', postJson({ ok: true }, { [sim.secrets.headerAuth.name]: sim.secrets.headerAuth.value }));
      expect(right).toMatchObject({ status: 200, json: { body: { ok: true } } });
      expect(sim.webhookCalls.length).toBe(before + 1);
    });

    it('basic auth: 401 "Authorization is required!" when missing, 403 when wrong, runs when right', async () => {
      const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
      const missing = await hook('secure-basic', postJson({}));
      expect(missing).toMatchObject({ status: 401, text: 'Authorization is required!' });
      expect(missing.headers.get('www-authenticate')).toBe('Basic realm="Webhook"');
      expect(await hook('secure-basic', postJson({}, basic(sim.secrets.basicAuth.user, 'nope')))).toMatchObject({
        status: 403,
        text: 'Authorization data is wrong!',
      });
      expect(await hook('secure-basic', postJson({}, { authorization: 'Bearer x' }))).toMatchObject({ status: 401 });
      const right = await hook('secure-basic', postJson({ ok: 1 }, basic(sim.secrets.basicAuth.user, sim.secrets.basicAuth.password)));
      expect(right).toMatchObject({ status: 200, json: { body: { ok: 1 } } });
    });
  });

  it('serves scripted faults on webhook paths too', async () => {
    sim.faults.push({ pathPrefix: '/webhook/hello', status: 503, body: 'Service Unavailable' });
    const res = await hook('hello', postJson({}));
    expect(res).toMatchObject({ status: 503, text: 'Service Unavailable' });
    expect((await hook('hello', postJson({}))).status).toBe(200);
  });
});

describe('test webhooks', () => {
  it('are not registered until armed, with the test hint', async () => {
    expect(await hook('hello', postJson({}), 'test')).toMatchObject({
      status: 404,
      json: { code: 404, message: 'The requested webhook "POST hello" is not registered.', hint: TEST_HINT },
    });
  });

  it('answer exactly one call after armTestWebhook, even for an inactive workflow', async () => {
    sim.armTestWebhook(sim.ids.draft);
    const before = sim.webhookCalls.length;
    const res = await hook('lead-score?try=1', postJson({ email: 'a@example.com' }), 'test');
    expect(res).toMatchObject({
      status: 200,
      json: { body: { email: 'a@example.com' }, query: { try: '1' }, executionMode: 'test', webhookUrl: `${sim.url}/webhook-test/lead-score` },
    });
    expect(sim.webhookCalls.slice(before)).toEqual([expect.objectContaining({ mode: 'test', workflowId: sim.ids.draft })]);
    expect(await hook('lead-score', postJson({}), 'test')).toMatchObject({ status: 404, json: { hint: TEST_HINT } });
    // The production URL of the inactive workflow stays unregistered.
    expect((await hook('lead-score', postJson({}))).status).toBe(404);
  });

  it('report the wrong method while armed, and stay armed after it', async () => {
    sim.armTestWebhook(sim.ids.hello);
    expect((await hook('hello', { method: 'GET' }, 'test')).json).toEqual({
      code: 404,
      message: 'This webhook is not registered for GET requests. Did you mean to make a POST request?',
    });
    expect((await hook('hello', postJson({}), 'test')).status).toBe(200);
  });
});

describe('other paths', () => {
  it('serves the editor page for other GETs and /healthz', async () => {
    const page = await fetch(`${sim.url}/home/workflows`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await (await fetch(`${sim.url}/healthz`)).json()).toEqual({ status: 'ok' });
  });
});
