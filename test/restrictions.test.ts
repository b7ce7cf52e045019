// Scoped keys end to end: the official MCP SDK client -> our service -> the Jira sandbox. A key restricted to
// reading, to a list of tools, to a time or to a budget sees and calls only what it may; a refused call is an
// error result naming the restriction, charges nothing and never reaches Jira (requests counted there).
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JiraSandbox, startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { connectV1, connectV2 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';

let jira: JiraSandbox;
let svc: TestService;
let owner: Owner;
let serverId: string;
const clients: Array<{ close(): Promise<void> }> = [];

const READ_TOOLS = ['tracker_get_issue', 'tracker_get_projects', 'tracker_search_issues'];
const ALL_TOOLS = [...READ_TOOLS, 'tracker_delete_issue', 'tracker_update_issue'].sort();

beforeAll(async () => {
  // No key cache: a change made through the store directly (an expiry moved into the past) is seen at once.
  [jira, svc] = await Promise.all([startJiraSandbox(), startTestService({ KEY_CACHE_MS: '0' })]);
  owner = await createOwner(svc, 1000);
  const account = { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken };
  ({ serverId } = await createServer(svc, owner, { accounts: { jira: account }, tools: ALL_TOOLS.map((base_tool) => ({ base_tool, account: 'jira' })) }));
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([svc?.close(), jira?.close()]);
});

async function newKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await svc.call('POST', `/api/servers/${serverId}/api-keys`, { token: owner.token, body: { name: 'scoped', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, key: res.body.key };
}

async function client(key: string, sdk: 'v1' | 'v2' = 'v1'): Promise<Client> {
  const c = (sdk === 'v1' ? await connectV1(svc.url, serverId, key) : await connectV2(svc.url, serverId, key)) as Client;
  clients.push(c);
  return c;
}

const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance as number;
const issueRequests = () => jira.requests.filter((r) => /\/rest\/api\/3\/issue\//.test(r.path)).length;
const errorText = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>)[0].text;

describe('a read-only key', () => {
  it('does not see tracker_delete_issue, and calling it is refused without a charge or a Jira request', async () => {
    const { key } = await newKey({ access: 'read' });
    const c = await client(key);
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(READ_TOOLS);
    const [before, requests] = [await balance(), jira.requests.length];
    const result = await c.callTool({ name: 'tracker_delete_issue', arguments: { issue_key: 'DEMO-1' } });
    expect(result.isError).toBe(true);
    expect(errorText(result)).toContain('This key is read-only: tracker_delete_issue changes data');
    expect((result.structuredContent as { error: { code: string } }).error.code).toBe('tool_not_allowed');
    expect(jira.requests.length).toBe(requests);
    expect(jira.issue('DEMO-1')).toBeDefined();
    expect(await balance()).toBe(before);
    // Recorded as a refusal, like every other call refused before its charge.
    const calls = (await svc.call('GET', '/api/calls?limit=1', { token: owner.token })).body.calls;
    expect(calls[0]).toMatchObject({ tool: 'tracker_delete_issue', outcome: 'rejected', code: 'tool_not_allowed', credits: 0 });
    // Reading works and is paid as usual.
    const read = await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1', fields: 'summary' } });
    expect(read.isError).toBe(false);
    expect(await balance()).toBe(before - 1);
  });
});

describe('an allow-list key', () => {
  it('sees exactly its tools, is refused the others naming its list, and does not get tools added later', async () => {
    const { key } = await newKey({ tools: ['tracker_get_issue', 'tracker_delete_issue'] });
    const unrestricted = (await newKey({})).key;
    const c = await client(key, 'v2');
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['tracker_delete_issue', 'tracker_get_issue']);
    const requests = jira.requests.length;
    const refused = await c.callTool({ name: 'tracker_get_projects', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(errorText(refused)).toContain('This key may call only tracker_delete_issue, tracker_get_issue: tracker_get_projects is not among them');
    expect(jira.requests.length).toBe(requests);

    // A tool added to the server afterwards: an unrestricted key gets it, the allow-list key does not.
    const accountId = (await svc.call('GET', '/api/accounts', { token: owner.token })).body.accounts[0].id;
    const added = await svc.call('POST', `/api/servers/${serverId}/tools`, {
      token: owner.token,
      body: { base_tool: 'tracker_get_project_issue_types', account_id: accountId },
    });
    expect(added.status).toBe(201);
    expect((await (await client(unrestricted)).listTools()).tools.map((t) => t.name)).toContain('tracker_get_project_issue_types');
    expect((await (await client(key)).listTools()).tools.map((t) => t.name)).toEqual(['tracker_delete_issue', 'tracker_get_issue']);
    await svc.call('DELETE', `/api/servers/${serverId}/tools/${added.body.id}`, { token: owner.token });
  });
});

describe('an expiring key', () => {
  it('works until its expiry, then gets the 401 of an invalid key; the list shows the days left', async () => {
    const expires = new Date(Date.now() + 3 * 86_400_000 + 60_000);
    const { id, key } = await newKey({ expires_at: expires.toISOString() });
    const listed = (await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token: owner.token })).body.api_keys.find((k: { id: string }) => k.id === id);
    expect(listed).toMatchObject({ expires_at: expires.toISOString(), expires_in_days: 4 });
    const c = await client(key);
    expect((await c.listTools()).tools.length).toBe(ALL_TOOLS.length);
    // The expiry passes (moved into the past in the store: nothing waits for days).
    await svc.store.collection('api_keys').updateOne({ _id: id }, { $set: { 'restrictions.expires_at': new Date(Date.now() - 1000) } });
    const res = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or expired API key' });
    await expect(c.listTools()).rejects.toThrow();
  });
});

describe('a budget', () => {
  it('of 3 credits per day lets three one-credit calls through and refuses the fourth before Jira and the charge', async () => {
    const { key } = await newKey({ credit_limit: { credits: 3, per: 'day' } });
    const c = await client(key);
    const [before, requests] = [await balance(), issueRequests()];
    for (let i = 0; i < 3; i++) expect((await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } })).isError).toBe(false);
    expect(issueRequests()).toBe(requests + 3);
    const fourth = await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } });
    expect(fourth.isError).toBe(true);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect(errorText(fourth)).toContain("This key's budget is 3 credits per day (UTC) and 3 credits are spent: tracker_get_issue costs 1 credit.");
    expect(errorText(fourth)).toContain(`The budget resets at ${tomorrow} 00:00 UTC.`);
    expect((fourth.structuredContent as { error: { code: string } }).error.code).toBe('budget_exceeded');
    expect(issueRequests()).toBe(requests + 3);
    expect(await balance()).toBe(before - 3);
    const list = (await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token: owner.token })).body.api_keys;
    expect(list.find((k: { credit_limit: unknown }) => k.credit_limit)).toMatchObject({ credit_limit: { credits: 3, per: 'day' }, budget_spent: 3 });
  });

  it('holds under parallel calls: of 20 at once (a JSON-RPC batch and parallel requests) exactly the budget goes through', async () => {
    const { key } = await newKey({ credit_limit: { credits: 5, per: 'month' } });
    const [before, requests] = [await balance(), issueRequests()];
    type Answer = { result: { isError: boolean; content: Array<{ text: string }> } };
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-2' } } });
    const post = (body: unknown) =>
      fetch(`${svc.url}/mcp/${serverId}`, {
        method: 'POST',
        // 2025-03-26: the last revision with JSON-RPC batches.
        headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-03-26', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<Answer | Answer[]>);
    // A batch starts all its calls in the same turn of the event loop; the separate requests overlap with it.
    const answers = (
      await Promise.all([post(Array.from({ length: 12 }, (_, i) => call(i))), ...Array.from({ length: 8 }, (_, i) => post(call(100 + i)))])
    ).flat();
    expect(answers).toHaveLength(20);
    expect(answers.filter((r) => !r.result.isError)).toHaveLength(5);
    expect(answers.filter((r) => r.result.content[0].text.includes("This key's budget is 5 credits per month"))).toHaveLength(15);
    expect(issueRequests()).toBe(requests + 5);
    expect(await balance()).toBe(before - 5);
  });

  it('gets back the credits of a refunded call', async () => {
    const { key } = await newKey({ credit_limit: { credits: 1, per: 'day' } });
    const c = await client(key);
    // Jira fails with 503 (every retry too): the call is refunded, and so is its share of the budget.
    jira.faults.push({ method: 'GET', pathPrefix: '/rest/api/3/issue/', status: 503, times: 3 });
    const failed = await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } });
    expect(failed.isError).toBe(true);
    expect((failed.structuredContent as { error: { code: string } }).error.code).not.toBe('budget_exceeded');
    expect((await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } })).isError).toBe(false);
    expect((await c.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } })).isError).toBe(true);
  });
});

describe('the key API', () => {
  it('refuses bad restrictions with a message naming each field', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const res = await svc.call('POST', `/api/servers/${serverId}/api-keys`, { token: owner.token, body: { name: 'bad', ...body } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      return res.body.message as string;
    };
    expect(await bad({ tools: ['tracker_get_issue', 'nope_tool'] })).toMatch(/^"tools": no tool named nope_tool; the tools are tracker_delete_issue, /);
    expect(await bad({ tools: [] })).toContain('"tools" must be a list of at least one tool name');
    expect(await bad({ access: 'write' })).toContain('"access" must be "all" or "read"');
    expect(await bad({ expires_at: '2020-01-01T00:00:00Z' })).toBe('"expires_at" must be in the future (2020-01-01T00:00:00.000Z has passed)');
    expect(await bad({ expires_at: 'next week' })).toContain('"expires_at" must be an ISO 8601 time');
    expect(await bad({ credit_limit: { credits: 2.5, per: 'day' } })).toBe('"credit_limit.credits" must be a whole number of credits from 1 to 1,000,000,000');
    expect(await bad({ credit_limit: { credits: 5, per: 'week' } })).toBe('"credit_limit.per" must be "day" or "month" (UTC)');
    expect(await bad({ credit_limit: { credits: 5 } })).toContain('"credit_limit.per"');
    expect(await bad({ scope: 'x' })).toBe('Unknown field(s): scope (allowed: name, tools, access, expires_at, credit_limit, act_for_end_users)');
    // Several problems at once are all named.
    const both = await bad({ access: 'write', credit_limit: { credits: 0, per: 'day' } });
    expect(both).toContain('"access"');
    expect(both).toContain('"credit_limit.credits"');
  });

  it('PATCH changes the restrictions and the name, never the value', async () => {
    const { id, key } = await newKey({});
    const path = `/api/servers/${serverId}/api-keys/${id}`;
    expect((await svc.call('PATCH', path, { token: owner.token, body: { key: 'mcpk_x' } })).body.message).toContain('the value of a key never changes');
    const patched = await svc.call('PATCH', path, {
      token: owner.token,
      body: { name: 'reader', access: 'read', credit_limit: { credits: 10, per: 'month' }, expires_at: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, name: 'reader', access: 'read', tools: null, credit_limit: { credits: 10, per: 'month' }, expires_in_days: 1 });
    expect(JSON.stringify(patched.body)).not.toContain(key);
    const c = await client(key);
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(READ_TOOLS);
    // null clears a restriction; left-out fields keep theirs.
    const cleared = await svc.call('PATCH', path, { token: owner.token, body: { access: 'all', expires_at: null } });
    expect(cleared.body).toMatchObject({ access: 'all', expires_at: null, expires_in_days: null, credit_limit: { credits: 10, per: 'month' } });
    expect((await c.listTools()).tools.length).toBe(ALL_TOOLS.length);
    expect((await svc.call('PATCH', `/api/servers/${serverId}/api-keys/key_nope`, { token: owner.token, body: {} })).status).toBe(404);
  });

  it('global keys take the same restrictions, naming tools of any server of the owner', async () => {
    const created = await svc.call('POST', '/api/api-keys', { token: owner.token, body: { name: 'global reader', tools: ['tracker_get_projects'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'global', tools: ['tracker_get_projects'], access: 'all' });
    await svc.call('POST', `/api/api-keys/${created.body.id}/servers/${serverId}`, { token: owner.token });
    expect((await (await client(created.body.key)).listTools()).tools.map((t) => t.name)).toEqual(['tracker_get_projects']);
    const patched = await svc.call('PATCH', `/api/api-keys/${created.body.id}`, {
      token: owner.token,
      body: { tools: ['tracker_get_issue', 'tracker_get_projects'] },
    });
    expect(patched.body.tools).toEqual(['tracker_get_issue', 'tracker_get_projects']);
    const list = (await svc.call('GET', '/api/api-keys', { token: owner.token })).body.api_keys;
    expect(list.find((k: { id: string }) => k.id === created.body.id).tools).toEqual(['tracker_get_issue', 'tracker_get_projects']);
  });
});
