// "Try it with sandbox accounts" through the management API and the official MCP SDK clients, with the
// outbound guard fully on (ALLOW_PRIVATE_NETWORKS empty): the service serves its own Jira, n8n, Notion and
// Supabase sandboxes to each owner, one owner's data is never another's, and nobody else reaches them.
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../runtime/config.ts';
import { SANDBOX_DEFINITIONS } from '../sandboxes/in-service.ts';
import { type AnyClient, connectV1, connectV2 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';

interface Outcome {
  isError: boolean;
  result: any;
  error: { code: string; message: string; retryable: boolean; provider_status: number | null };
}

async function call(client: AnyClient, name: string, args: Record<string, unknown>): Promise<Outcome> {
  const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any };
  return { isError: r.isError === true, result: r.structuredContent, error: r.structuredContent?.error };
}

describe('sandbox accounts', () => {
  let svc: TestService;
  let a: Owner;
  let b: Owner;
  let setupA: any;
  let clientA: ClientV1;
  let clientB: AnyClient;

  beforeAll(async () => {
    svc = await startTestService({ ALLOW_PRIVATE_NETWORKS: '', STARTING_CREDITS: '0' });
    expect(svc.config.allowPrivateNetworks).toEqual({ all: false, ranges: [] });
    [a, b] = await Promise.all([createOwner(svc), createOwner(svc)]);
    const [ra, rb] = await Promise.all([svc.call('POST', '/api/sandbox', { token: a.token }), svc.call('POST', '/api/sandbox', { token: b.token })]);
    expect([ra.status, rb.status]).toEqual([201, 201]);
    setupA = ra.body;
    clientA = await connectV1(svc.url, ra.body.server.id, ra.body.key.key);
    clientB = await connectV2(svc.url, rb.body.server.id, rb.body.key.key);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([clientA?.close(), clientB?.close()]);
    await svc?.close();
  });

  it('makes one sandbox account per provider, a server with every base tool bound to them and a key shown once', async () => {
    const tools = svc.catalog.current.tools.size;
    expect(setupA.accounts.map((x: any) => [x.kind, x.name, x.sandbox])).toEqual([
      ['tracker', 'Sandbox Jira', true],
      ['automation', 'Sandbox n8n', true],
      ['workspace', 'Sandbox Notion', true],
      ['database', 'Sandbox Supabase', true],
    ]);
    expect(setupA.accounts[0]).toMatchObject({ site_url: 'https://jira.sandbox.invalid', secret_hint: expect.stringMatching(/^api_token: ••••/) });
    expect(JSON.stringify(setupA.accounts)).not.toMatch(/ATATT3xFfGF0-sandbox-|ntn_|sb_publishable_/);
    expect(setupA.server).toMatchObject({ name: 'Sandbox', sandbox: true, active: true, url: `${svc.url}/mcp/${setupA.server.id}` });
    expect(setupA.tools).toBe(tools);
    expect(setupA.key.key).toMatch(/^mcpk_/);
    expect(setupA.idle_minutes).toBe(30);
    expect(setupA.example).toEqual({ name: 'tracker_search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC', max_results: 5 } });
    const claude = setupA.snippets.find((s: any) => s.id === 'claude-code');
    expect(claude.code).toBe(`claude mcp add --transport http sandbox ${setupA.server.url} \\\n  --header "Authorization: Bearer ${setupA.key.key}"`);
    expect(setupA.snippets.find((s: any) => s.id === 'curl').code).toContain('"method":"tools/call","params":{"name":"tracker_search_issues"');

    // Every listing says which accounts are sandboxes; the key never shows again.
    const listed = await svc.call('GET', '/api/accounts', { token: a.token });
    expect(listed.body.accounts.map((x: any) => x.sandbox)).toEqual([true, true, true, true]);
    const keys = await svc.call('GET', `/api/servers/${setupA.server.id}/api-keys`, { token: a.token });
    expect(JSON.stringify(keys.body)).not.toContain(setupA.key.key);

    // Asking again adds nothing but a new key.
    const again = await svc.call('POST', '/api/sandbox', { token: a.token });
    expect(again.status).toBe(201);
    expect(again.body.accounts.map((x: any) => x.id)).toEqual(setupA.accounts.map((x: any) => x.id));
    expect(again.body.server.id).toBe(setupA.server.id);
    expect((await svc.call('GET', `/api/servers/${setupA.server.id}/tools`, { token: a.token })).body.tools).toHaveLength(tools);
    expect(again.body.key.key).not.toBe(setupA.key.key);
    expect((await svc.call('GET', '/api/servers', { token: a.token })).body.servers).toHaveLength(1);
    expect((await svc.call('POST', '/api/sandbox', { token: a.token, body: { server: 'x' } })).body.message).toBe(
      'POST /api/sandbox takes no fields (got: server)',
    );
  });

  it('calls a tool of each provider through its sandbox account, with the official SDK clients', async () => {
    for (const def of SANDBOX_DEFINITIONS) {
      const out = await call(clientA, def.example.tool, def.example.arguments);
      expect(out.isError, `${def.example.tool}: ${JSON.stringify(out.error)}`).toBe(false);
    }
    expect((await call(clientA, 'tracker_search_issues', { jql: 'project = DEMO' })).result.total).toBeGreaterThan(0);
    expect((await call(clientB, 'automation_List_Workflows', {})).result.data.map((w: any) => w.name)).toContain('Hello webhook');
    expect((await call(clientA, 'search_pages', { query: 'Welcome' })).result.results[0].title).toBe('Welcome');
    // The publishable key: row-level security shows the public rows only.
    expect((await call(clientB, 'database_read_records', { table: 'todos' })).result.data.map((r: any) => r.title)).toEqual([
      'Buy milk',
      'Write report',
      'Fix bike',
    ]);
    // The webhook tool bound to the n8n sandbox account reaches its webhooks by path or by full URL.
    const hello = await call(clientA, 'automation_Trigger_Workflow_Webhook', { webhook_url: 'webhook/hello', body: { name: 'Ada' } });
    expect(hello.result).toMatchObject({ status_code: 200 });
    const full = await call(clientA, 'automation_Trigger_Workflow_Webhook', {
      webhook_url: 'https://n8n.sandbox.invalid/webhook/hello',
      body: { name: 'Ada' },
    });
    expect(full.result).toMatchObject({ status_code: 200 });

    // Every sandbox account verifies like a real one.
    for (const account of setupA.accounts) {
      const verified = await svc.call('POST', `/api/accounts/${account.id}/verify`, { token: a.token });
      expect(verified.body, account.name).toMatchObject({ verified: true });
    }
    expect(svc.sandboxes!.stats()).toEqual({ sets: 2, sandboxes: 8 });
    // A bound, not a wait: the first calls start each owner's sandboxes and the shared Postgres, which takes
    // tens of seconds on a busy 2-core machine (it went past 20 s on main at a load average of 20).
  }, 120_000);

  it("keeps one owner's sandbox data from every other owner", async () => {
    const title = `A's secret todo ${Date.now()}`;
    expect((await call(clientA, 'database_create_records', { table: 'todos', records: { title } })).isError).toBe(false);
    expect((await call(clientA, 'database_read_records', { table: 'todos', filters: { title: { eq: title } } })).result.count).toBe(1);
    expect((await call(clientB, 'database_read_records', { table: 'todos', filters: { title: { eq: title } } })).result).toEqual({ data: [], count: 0 });

    const summary = `A's secret issue ${Date.now()}`;
    const created = await call(clientA, 'tracker_Create_Issue', { project_key: 'DEMO', summary });
    expect(created.isError, JSON.stringify(created.error)).toBe(false);
    const jql = `summary ~ "${summary}"`;
    expect((await call(clientA, 'tracker_search_issues', { jql })).result.total).toBe(1);
    expect((await call(clientB, 'tracker_search_issues', { jql })).result.total).toBe(0);
    // Owner B's own copy of the same issue key is the seed's, not A's.
    const key = created.result.key;
    const bIssue = await call(clientB, 'tracker_get_issue', { issue_key: key });
    expect(JSON.stringify(bIssue.result ?? bIssue.error)).not.toContain(summary);

    // B cannot bind A's sandbox account to a tool of its own.
    const server = await svc.call('POST', '/api/servers', { token: b.token, body: { name: 'B' } });
    const bind = await svc.call('POST', `/api/servers/${server.body.id}/tools`, {
      token: b.token,
      body: { base_tool: 'tracker_search_issues', account_id: setupA.accounts[0].id },
    });
    expect(bind).toMatchObject({ status: 400, body: { message: expect.stringContaining(`no account ${setupA.accounts[0].id} of yours exists`) } });
  });

  it('fails a normal account naming the sandbox host, and a webhook URL at it, like a host that does not resolve', async () => {
    const balance = async () => (await svc.call('GET', '/api/credits', { token: b.token })).body.balance;
    const before = await balance();
    const notion = { kind: 'workspace', integration_token: 'ntn_a_token_of_my_own' };
    const { key, serverId } = await createServer(svc, b, {
      accounts: {
        sandbox: { ...notion, name: 'Looks like the sandbox', api_url: 'https://notion.sandbox.invalid' },
        unknown: { ...notion, name: 'Unknown host', api_url: 'https://notion.nowhere.invalid' },
      },
      tools: [
        { base_tool: 'search_pages', name: 'search_at_sandbox', account: 'sandbox' },
        { base_tool: 'search_pages', name: 'search_at_unknown', account: 'unknown' },
        { base_tool: 'automation_Trigger_Workflow_Webhook', name: 'webhook' },
      ],
    });
    const client = await connectV1(svc.url, serverId, key);
    try {
      const atUnknown = await call(client, 'search_at_unknown', { query: 'Welcome' });
      expect(atUnknown.error).toEqual({
        code: 'network_error',
        message: 'Could not reach the provider at notion.nowhere.invalid (ENOTFOUND)',
        retryable: true,
        provider_status: null,
      });
      expect((await call(client, 'search_at_sandbox', { query: 'Welcome' })).error).toEqual({
        ...atUnknown.error,
        message: 'Could not reach the provider at notion.sandbox.invalid (ENOTFOUND)',
      });

      const hookAtUnknown = await call(client, 'webhook', { webhook_url: 'https://n8n.nowhere.invalid/webhook/hello' });
      expect(hookAtUnknown.error).toMatchObject({ code: 'network_error', message: 'Could not reach the provider at n8n.nowhere.invalid (ENOTFOUND)' });
      expect((await call(client, 'webhook', { webhook_url: 'https://n8n.sandbox.invalid/webhook/hello' })).error).toEqual({
        ...hookAtUnknown.error,
        message: 'Could not reach the provider at n8n.sandbox.invalid (ENOTFOUND)',
      });
      // Failures of ours: the credits came back.
      expect(await balance()).toBe(before);
    } finally {
      await client.close();
    }
  });

  it('never lets a sandbox account point elsewhere; renaming and deleting work', async () => {
    const [jira] = setupA.accounts;
    const moved = await svc.call('PATCH', `/api/accounts/${jira.id}`, { token: a.token, body: { site_url: 'https://evil.example.com' } });
    expect(moved).toMatchObject({
      status: 400,
      body: { message: '"Sandbox Jira" is a sandbox account: the service sets its fields and only its name can change' },
    });
    const renamed = await svc.call('PATCH', `/api/accounts/${jira.id}`, { token: a.token, body: { name: 'My Jira sandbox' } });
    expect(renamed.body).toMatchObject({ name: 'My Jira sandbox', sandbox: true, site_url: 'https://jira.sandbox.invalid' });
    expect((await svc.call('POST', '/api/accounts', { token: a.token, body: { kind: 'tracker', name: 'x', sandbox: true, ...jira } })).status).toBe(400);

    // Bound to tools it cannot go; once they are gone it can, and "Try" makes a new one.
    expect((await svc.call('DELETE', `/api/accounts/${jira.id}`, { token: a.token })).status).toBe(409);
    await svc.call('DELETE', `/api/servers/${setupA.server.id}`, { token: a.token });
    expect((await svc.call('DELETE', `/api/accounts/${jira.id}`, { token: a.token })).status).toBe(204);
    const again = await svc.call('POST', '/api/sandbox', { token: a.token });
    expect(again.body.accounts[0]).toMatchObject({ kind: 'tracker', sandbox: true });
    expect(again.body.accounts[0].id).not.toBe(jira.id);
    expect(again.body.server.id).not.toBe(setupA.server.id);
    const client = await connectV2(svc.url, again.body.server.id, again.body.key.key);
    expect((await call(client, 'tracker_get_projects', {})).isError).toBe(false);
    await client.close();
  });

  it('stops a set after the idle time, and its data starts again from the seed', async () => {
    const summary = `Forgotten ${Date.now()}`;
    const setup = await svc.call('POST', '/api/sandbox', { token: b.token });
    const client = await connectV2(svc.url, setup.body.server.id, setup.body.key.key);
    await call(client, 'tracker_Create_Issue', { project_key: 'DEMO', summary });
    expect((await call(client, 'tracker_search_issues', { jql: `summary ~ "${summary}"` })).result.total).toBe(1);
    await svc.sandboxes!.sweep(Date.now() + 30 * 60_000);
    expect(svc.sandboxes!.stats()).toEqual({ sets: 0, sandboxes: 0 });
    expect((await call(client, 'tracker_search_issues', { jql: `summary ~ "${summary}"` })).result.total).toBe(0);
    await client.close();
  });
});

describe('SANDBOXES=off', () => {
  it('has no sandbox route and no button', async () => {
    const svc = await startTestService({ SANDBOXES: 'off' });
    try {
      const owner = await createOwner(svc);
      expect(svc.sandboxes).toBeUndefined();
      const res = await svc.call('POST', '/api/sandbox', { token: owner.token });
      expect(res).toMatchObject({ status: 404, body: { error: 'Not Found', message: 'Sandbox accounts are turned off on this service (SANDBOXES=off)' } });
      const signup = await svc.call('POST', '/api/auth/signup', { body: { email: `off-${Date.now()}@example.com`, password: 'a long enough passphrase' } });
      const cookie = signup.headers.get('set-cookie')!.split(';')[0];
      const page = await fetch(`${svc.url}/`, { headers: { cookie } });
      expect(page.status).toBe(200);
      expect(await page.text()).not.toMatch(/sandbox/i);
    } finally {
      await svc.close();
    }
  });

  it('is checked at start with the other settings', () => {
    expect(() => loadConfig({ SANDBOXES: 'maybe', SANDBOX_IDLE_MINUTES: '0', SANDBOX_MAX_SETS: 'x' })).toThrow(ConfigError);
    try {
      loadConfig({ SANDBOXES: 'maybe', SANDBOX_IDLE_MINUTES: '0', SANDBOX_MAX_SETS: 'x' });
    } catch (err) {
      expect((err as Error).message).toContain('SANDBOXES must be on or off (got "maybe")');
      expect((err as Error).message).toContain('SANDBOX_IDLE_MINUTES must be an integer from 1 to 1440 (got "0")');
      expect((err as Error).message).toContain('SANDBOX_MAX_SETS must be an integer from 1 to 10000 (got "x")');
    }
    expect(loadConfig({}).sandboxes).toEqual({ enabled: true, idleMinutes: 30, maxSets: 50, maxWriteMb: 5 });
  });
});

describe('a provider written in YAML alone, served from its exchanges', () => {
  let svc: TestService;
  let owner: Owner;
  let setup: any;
  let client: AnyClient;

  beforeAll(async () => {
    // n8n (which has a simulator) beside the GitHub fixture provider (which has only its exchanges).
    const specs = await mkdtemp(path.join(tmpdir(), 'specs-'));
    await cp(path.resolve('tool-specs/automation'), path.join(specs, 'automation'), { recursive: true });
    await cp(path.resolve('test/fixtures/github-specs/github'), path.join(specs, 'github'), { recursive: true });
    svc = await startTestService({ TOOL_SPECS_DIR: specs, ALLOW_PRIVATE_NETWORKS: '' });
    owner = await createOwner(svc);
    const res = await svc.call('POST', '/api/sandbox', { token: owner.token });
    expect(res.status).toBe(201);
    setup = res.body;
    client = await connectV2(svc.url, setup.server.id, setup.key.key);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await svc?.close();
  });

  it('makes its sandbox account with the others, and binds its tools', async () => {
    expect(setup.accounts.map((x: any) => [x.kind, x.name, x.sandbox])).toEqual([
      ['automation', 'Sandbox n8n', true],
      ['github', 'Sandbox GitHub', true],
    ]);
    expect(setup.accounts[1]).toMatchObject({ api_url: 'https://github.exchanges.sandbox.invalid', api_version: '2022-11-28', secret_hint: 'token: ••••6789' });
    expect(setup.tools).toBe(svc.catalog.current.tools.size);
  });

  it('answers the requests of its exchanges through the service, the outbound guard fully on', async () => {
    const issue = await call(client, 'github_get_issue', { owner: 'octocat', repo: 'Hello-World', number: 1347 });
    expect(issue.isError, JSON.stringify(issue.error)).toBe(false);
    expect(issue.result).toMatchObject({ number: 1347, title: 'Found a bug', labels: ['bug'] });
    // The Link header's URL leads back into the sandbox: the second page comes from it too.
    const both = await call(client, 'github_list_issues', { owner: 'octocat', repo: 'Hello-World', per_page: 2, pages: 2 });
    expect(both.result).toMatchObject({ has_more: false });
    expect(both.result.issues.map((i: any) => i.number)).toEqual([1347, 1345]);
    const refused = await call(client, 'github_create_issue', { owner: 'octocat', repo: 'Hello-World', title: 'Found a bug', assignees: ['ghost'] });
    expect(refused.error).toMatchObject({ code: 'validation_failed', provider_status: 422 });
    expect(refused.error.message).toContain('Issue.assignees: invalid');
    // Anything its exchanges do not write down is said so, and not charged.
    const unknown = await call(client, 'github_get_issue', { owner: 'octocat', repo: 'Hello-World', number: 2 });
    expect(unknown.error).toMatchObject({ code: 'provider_error', provider_status: 501 });
    expect(unknown.error.message).toContain(
      "The GitHub sandbox has no answer for GET /repos/octocat/Hello-World/issues/2: it answers only the requests written in the provider's exchanges",
    );
    expect((await call(client, 'automation_List_Workflows', {})).isError).toBe(false);
  });
});
