// The OpenAPI import (runtime/openapi/, `npm run import:openapi`): real documents (GitHub's official one,
// Notion's), a circular $ref and a Swagger 2.0 fixture, imported, linted with the real loader, re-imported
// byte for byte, and called through the service with the official MCP client against loopback fakes.
import { spawn } from 'node:child_process';
import { readFile, readdir, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pluginRegistry } from '../plugins/registry.ts';
import { normalize, readApiDocument } from '../runtime/openapi/document.ts';
import { TOOL_NAME_LIMIT } from '../runtime/openapi/names.ts';
import { type ImportOptions, type ImportPlan, planImport } from '../runtime/openapi/plan.ts';
import { type WriteReport, renderPlan, writePlan } from '../runtime/openapi/write.ts';
import { runExchanges } from '../runtime/engine/exchange-runner.ts';
import { loadCatalog } from '../runtime/toolspec/loader.ts';
import { MAX_DESCRIPTION_LENGTH } from '../runtime/toolspec/language.ts';
import { connectV2 } from './support/mcp-clients.ts';
import type { OAuthClient } from '../sandboxes/oauth/oauth.ts';
import { startSupabaseSandbox, type SupabaseSandbox } from '../sandboxes/supabase/supabase-sandbox.ts';
import { HttpBrowser } from './support/connect.ts';
import { type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { type ToolCalls, toolCalls } from './support/tool-calls.ts';

const FIXTURES = path.resolve('test/fixtures/openapi');
const GITHUB = path.join(FIXTURES, 'github-api.github.com.json.gz');
const NOTION = path.resolve('node_modules/@notionhq/notion-mcp-server/scripts/notion-openapi.json');
const noNetwork = async (url: URL): Promise<Buffer> => {
  throw new Error(`no network in this test: ${url.href}`);
};

/** Reads, plans, writes into `<specs>/<provider>`: what the command does, in-process. */
async function importInto(specs: string, source: string, options: Omit<ImportOptions, 'descriptionLimit'>): Promise<{ plan: ImportPlan; report: WriteReport }> {
  const doc = await readApiDocument(source, noNetwork);
  const plan = planImport(doc, { ...options, descriptionLimit: MAX_DESCRIPTION_LENGTH });
  const out = path.join(specs, options.provider);
  return { plan, report: await writePlan(renderPlan(plan, out), out, false) };
}

/** The import command as a process (the suite's network safety net loaded into it); its output and exit code. */
function importCommand(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/support/loopback-only.ts', 'runtime/openapi/import.ts', ...args], {
    env: { ...process.env, ALLOW_PRIVATE_NETWORKS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

interface Received {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A loopback HTTP server answering with `answer`; every request it got is in `received`. */
async function fakeApi(answer: (req: Received) => { status: number; body?: unknown; headers?: Record<string, string> }) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const r: Received = { method: req.method!, url: new URL(req.url!, 'http://fake'), headers: req.headers, body: raw ? JSON.parse(raw) : undefined };
      received.push(r);
      const a = answer(r);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.body === undefined ? '' : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const tempSpecs = () => mkdtemp(path.join(tmpdir(), 'openapi-import-'));

describe("GitHub's official document, tag issues", () => {
  let specs: string;
  let first: { plan: ImportPlan; report: WriteReport };
  let svc: TestService;
  let fake: Awaited<ReturnType<typeof fakeApi>>;
  let calls: ToolCalls;

  beforeAll(async () => {
    specs = await tempSpecs();
    first = await importInto(specs, GITHUB, { provider: 'github', title: 'GitHub', tags: ['issues'], auth: 'bearer' });
    fake = await fakeApi(github);
    svc = await startTestService({ TOOL_SPECS_DIR: specs });
    const owner = await createOwner(svc);
    const { serverId, key } = await createServer(svc, owner, {
      accounts: { gh: { kind: 'github', name: 'GitHub', api_url: fake.url, token: 'ghp_test_token_1234' } },
      tools: ['github_issues_create', 'github_issues_get', 'github_issues_list_for_repo', 'github_issues_create_comment'].map((base_tool) => ({
        base_tool,
        account: 'gh',
      })),
    });
    const client = await connectV2(svc.url, serverId, key);
    calls = toolCalls(client);
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
    await fake?.close();
  });

  it('makes every operation of the tag a tool that the loader accepts', async () => {
    expect(first.plan.tools.length + first.plan.skipped.length).toBe(first.plan.document.operations.filter((o) => o.tags.includes('issues')).length);
    expect(first.plan.skipped).toEqual([]);
    const catalog = await loadCatalog(specs, pluginRegistry);
    expect(catalog.tools.size).toBe(first.plan.tools.length);
    const create = catalog.tools.get('github_issues_create')!.spec;
    expect(create.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(catalog.tools.get('github_issues_get')!.spec.annotations).toMatchObject({ readOnlyHint: true });
    expect(catalog.tools.get('github_issues_delete_comment')!.spec.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true });
    // The body's properties are top-level arguments beside the path's; title is the one the body requires.
    expect(create.input).toMatchObject({ type: 'object', additionalProperties: false, required: ['owner', 'repo', 'title'] });
    expect(Object.keys(create.input.properties as object)).toEqual(expect.arrayContaining(['owner', 'repo', 'title', 'body', 'labels', 'assignees']));
    const provider = catalog.providers.get('github')!.spec;
    expect(provider.auth?.headers).toEqual({ Authorization: 'Bearer {{account.token}}' });
    expect(provider.account.fields.find((f) => f.name === 'api_url')?.default).toBe('https://api.github.com');
    expect(provider.verify).toMatchObject({ method: 'GET', path: '/user' });
  });

  it("writes an exchange per operation from the document's examples, and each runs as written", async () => {
    const withExamples = first.plan.tools.filter((t) => t.exchanges);
    // Every operation of the tag but one has an example answer, or answers with no body.
    expect(withExamples.length).toBe(first.plan.tools.length - 1);
    const report = await runExchanges(await loadCatalog(specs, pluginRegistry));
    expect(report.failures).toEqual([]);
    expect(report.ran).toBe(withExamples.length);
  }, 60_000);

  it('writes the same bytes when the same document is imported again', async () => {
    const again = await importInto(specs, GITHUB, { provider: 'github', title: 'GitHub', tags: ['issues'], auth: 'bearer' });
    expect(again.report.written).toEqual([]);
    expect(again.report.unchanged).toEqual(first.report.written);
  });

  it('creates an issue (201) with the token, the path and the body the document describes', async () => {
    const issue = await calls.ok('github_issues_create', { owner: 'octo', repo: 'hello', title: 'Found a bug', body: 'It breaks', labels: ['bug'] });
    expect(issue).toMatchObject({ number: 7, title: 'Found a bug', state: 'open' });
    const sent = fake.received.find((r) => r.method === 'POST' && r.url.pathname === '/repos/octo/hello/issues')!;
    expect(sent.headers.authorization).toBe('Bearer ghp_test_token_1234');
    expect(sent.body).toEqual({ title: 'Found a bug', body: 'It breaks', labels: ['bug'] });
    const comment = await calls.ok('github_issues_create_comment', { owner: 'octo', repo: 'hello', issue_number: 7, body: 'Me too' });
    expect(comment).toMatchObject({ id: 1, body: 'Me too' });
  });

  it("says what GitHub refused: 404, and 422 with GitHub's errors", async () => {
    const missing = await calls.fails('github_issues_get', { owner: 'octo', repo: 'hello', issue_number: 404 });
    expect(missing).toMatchObject({ code: 'not_found', provider_status: 404 });
    expect(missing.message).toContain('Not Found');
    const invalid = await calls.fails('github_issues_create', { owner: 'octo', repo: 'hello', title: 'x', assignees: ['nobody'] });
    expect(invalid.provider_status).toBe(422);
    // The details of GitHub's errors array reach the client, not just "Validation Failed".
    expect(invalid.message).toContain('Validation Failed');
    expect(invalid.message).toContain('Issue.assignees: invalid');
  });

  it('pages by the Link header: has_more and the next page, several pages in one call', async () => {
    const listed = await calls.ok('github_issues_list_for_repo', { owner: 'octo', repo: 'hello', state: 'all', per_page: 2 });
    expect(listed).toMatchObject({ has_more: true, next_page: 2 });
    expect(listed.items.map((i: any) => i.number)).toEqual([1, 2]);
    const sent = fake.received.filter((r) => r.url.pathname === '/repos/octo/hello/issues' && r.method === 'GET').at(-1)!;
    expect(Object.fromEntries(sent.url.searchParams)).toMatchObject({ state: 'all', per_page: '2' });
    const rest = await calls.ok('github_issues_list_for_repo', { owner: 'octo', repo: 'hello', state: 'all', per_page: 2, page: 2, pages: 5 });
    expect(rest.items.map((i: any) => i.number)).toEqual([3, 4, 5, 6]);
    expect(rest.has_more).toBe(false);
    expect(rest.next_page).toBeUndefined();
  });
});

/** Answers like GitHub's REST API for the calls above. */
function github(r: Received): { status: number; body?: unknown; headers?: Record<string, string> } {
  const issue = (number: number, title = `Issue ${number}`) => ({
    id: 1000 + number,
    node_id: `I_${number}`,
    url: `https://api.github.com/repos/octo/hello/issues/${number}`,
    html_url: `https://github.com/octo/hello/issues/${number}`,
    number,
    title,
    state: 'open',
    locked: false,
    labels: [],
    assignee: null,
    milestone: null,
    comments: 0,
    closed_at: null,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    repository_url: 'https://api.github.com/repos/octo/hello',
    labels_url: '',
    comments_url: '',
    events_url: '',
    user: null,
  });
  const p = r.url.pathname;
  if (r.method === 'POST' && p === '/repos/octo/hello/issues') {
    if (r.body?.assignees?.includes('nobody')) {
      return {
        status: 422,
        body: {
          message: 'Validation Failed',
          errors: [{ resource: 'Issue', field: 'assignees', code: 'invalid', value: 'nobody' }],
          documentation_url: 'https://docs.github.com/rest/issues/issues#create-an-issue',
          status: '422',
        },
      };
    }
    return { status: 201, body: issue(7, r.body.title) };
  }
  if (r.method === 'POST' && p === '/repos/octo/hello/issues/7/comments') {
    const url = 'https://api.github.com/repos/octo/hello/issues/comments/1';
    const at = '2026-01-01T00:00:00Z';
    return {
      status: 201,
      body: {
        id: 1,
        node_id: 'IC_1',
        url,
        html_url: url,
        issue_url: issue(7).url,
        body: r.body.body,
        user: null,
        created_at: at,
        updated_at: at,
        author_association: 'OWNER',
      },
    };
  }
  // GitHub's next links name the repository by id.
  if (r.method === 'GET' && (p === '/repos/octo/hello/issues' || p === '/repositories/1/issues')) {
    const page = Number(r.url.searchParams.get('page') ?? 1);
    // Three pages; GitHub's Link names the next one on every page but the last.
    const link = (n: number, rel: string) => `<http://${r.headers.host}/repositories/1/issues?state=all&per_page=2&page=${n}>; rel="${rel}"`;
    const links = page < 3 ? [link(page + 1, 'next'), link(3, 'last')] : [link(1, 'first'), link(page - 1, 'prev')];
    return { status: 200, body: [issue(page * 2 - 1), issue(page * 2)], headers: { link: links.join(', ') } };
  }
  return { status: 404, body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' } };
}

describe("GitHub's official document, every operation", () => {
  it('imports all 1,223 operations into unique names of at most 56 characters (figures printed)', async () => {
    const { code, out } = await importCommand([GITHUB, '--provider', 'github', '--dry-run', '--out', path.join(tmpdir(), 'github-all')]);
    expect(code, out).toBe(0);
    const names = out
      .split('\ntools:\n')[1]
      .split('\n\n')[0]
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[0]);
    const skipped = out.split('\nskipped:\n')[1].split('\n\n')[0].split('\n');
    expect(names.length + skipped.length).toBe(1223);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(new RegExp(`^[A-Za-z0-9_.-]{1,${TOOL_NAME_LIMIT}}$`));
    const figures = /imported in ([\d.]+) s, peak memory (\d+) MB/.exec(out)!;
    console.log(
      `GitHub, every operation: ${names.length} tools, ${skipped.length} skipped, imported in ${figures[1]} s, peak memory ${figures[2]} MB, ` +
        `longest name ${Math.max(...names.map((n) => n.length))} characters`,
    );
  }, 240_000);
});

describe("Notion's OpenAPI 3.1 document", () => {
  it('imports every operation lint-clean: the bearer token, Notion-Version sent by the provider', async () => {
    const specs = await tempSpecs();
    const { plan } = await importInto(specs, NOTION, { provider: 'notion' });
    expect(plan.document.version).toBe('3.1');
    expect(plan.skipped).toEqual([]);
    const catalog = await loadCatalog(specs, pluginRegistry);
    expect(catalog.tools.size).toBe(plan.document.operations.length);
    const provider = catalog.providers.get('notion')!.spec;
    expect(provider.headers).toEqual({ 'Notion-Version': '2025-09-03' });
    expect(provider.auth?.headers).toEqual({ Authorization: 'Bearer {{account.token}}' });
    expect(provider.verify).toMatchObject({ path: '/v1/users/me' });
    // The header is the provider's, not an argument of every tool.
    const page = catalog.tools.get('notion_retrieve_a_page')!.spec;
    expect(Object.keys(page.input.properties as object)).toEqual(['page_id', 'filter_properties']);
    const again = await importInto(specs, NOTION, { provider: 'notion' });
    expect(again.report.written).toEqual([]);
    const exchanges = await runExchanges(catalog);
    expect(exchanges).toMatchObject({ failures: [], ran: plan.tools.filter((t) => t.exchanges).length });
  });
});

describe('a circular $ref', () => {
  it('ends each loop in a finite schema, across files, and the specs lint clean', async () => {
    const specs = await tempSpecs();
    const { plan } = await importInto(specs, path.join(FIXTURES, 'circular.yaml'), { provider: 'folders' });
    expect(plan.tools.map((t) => t.spec.id)).toEqual(['folders_create_folder', 'folders_get_folder', 'folders_get_me']);
    const create = plan.tools[0].spec;
    // Serializable (no loop left), and readOnly id is not an argument.
    expect(() => JSON.stringify(create)).not.toThrow();
    expect(Object.keys(create.input.properties as object)).toEqual(['name', 'parent', 'children', 'owner']);
    expect((create.output.properties as any).owner.properties.manager).toEqual({ type: 'object' });
    const catalog = await loadCatalog(specs, pluginRegistry);
    expect(catalog.providers.get('folders')!.spec.account.fields.map((f) => f.name)).toEqual(['api_url', 'token']);
    expect(catalog.providers.get('folders')!.spec.account.fields[0].default).toBe('https://folders.example/api/v1');
  });
});

describe('security schemes', () => {
  const withScheme = (scheme: Record<string, unknown>, security: unknown = [{ s: [] }]) =>
    planImport(
      normalize(
        {
          openapi: '3.0.3',
          info: { title: 'Things', version: '1' },
          servers: [{ url: 'https://things.example' }],
          components: { securitySchemes: { s: scheme } },
          security,
          paths: { '/me': { get: { operationId: 'me', responses: { '200': { description: 'me' } } } } },
        },
        'inline',
      ),
      { provider: 'things', descriptionLimit: MAX_DESCRIPTION_LENGTH },
    );

  it('maps basic, API keys in a header or a cookie, and OAuth 2 (to an access token field, said so)', () => {
    expect(withScheme({ type: 'http', scheme: 'basic' }).provider.auth).toEqual({ basic: { username: 'username', password: 'password' } });
    expect(withScheme({ type: 'apiKey', in: 'header', name: 'X-API-Key' }).provider.auth).toEqual({ headers: { 'X-API-Key': '{{account.api_key}}' } });
    expect(withScheme({ type: 'apiKey', in: 'cookie', name: 'sid' }).provider.auth).toEqual({ headers: { Cookie: 'sid={{account.sid}}' } });
    const oauth = withScheme({
      type: 'oauth2',
      flows: { authorizationCode: { authorizationUrl: 'https://things.example/authorize', tokenUrl: 'https://things.example/token', scopes: {} } },
    });
    expect(oauth.provider.auth).toEqual({ headers: { Authorization: 'Bearer {{account.access_token}}' } });
    expect(oauth.provider.account.fields[1]).toMatchObject({ name: 'access_token', secret: true });
    expect(oauth.provider.connect).toMatchObject({ authorize_url: 'https://things.example/authorize', token_url: 'https://things.example/token' });
    // Without a flow an owner's browser can go through, a token field only, said so.
    const machine = withScheme({ type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://things.example/token', scopes: {} } } });
    expect(machine.provider.connect).toBeUndefined();
    expect(machine.notes.join('\n')).toContain('mapped to an access token field');
    // An empty alternative makes the credentials optional.
    expect(withScheme({ type: 'http', scheme: 'bearer' }, [{ s: [] }, {}]).provider.account.fields[1]).toMatchObject({ name: 'token', required: false });
  });
});

describe('an OAuth 2 authorization-code scheme', () => {
  const FIXTURE = path.join(FIXTURES, 'supabase-management-oauth.yaml');
  const APP = { clientId: 'imported-supabase-app', clientSecret: 'sba_imported_app_secret_0123456789' };
  let supabase: SupabaseSandbox;
  let specs: string;
  let plan: ImportPlan;
  let svc: TestService;
  const client: OAuthClient = { ...APP, redirectUris: [], name: 'Tool Server' };

  beforeAll(async () => {
    supabase = await startSupabaseSandbox({ clients: [client] });
    // The document, with the sandbox standing for api.supabase.com.
    const dir = await tempSpecs();
    const doc = path.join(dir, 'supabase-management.yaml');
    await writeFile(doc, (await readFile(FIXTURE, 'utf8')).split('https://api.supabase.com').join(supabase.url));
    specs = await tempSpecs();
    ({ plan } = await importInto(specs, doc, { provider: 'supabase_mgmt' }));
    svc = await startTestService({
      TOOL_SPECS_DIR: specs,
      OAUTH_SUPABASE_MGMT_CLIENT_ID: APP.clientId,
      OAUTH_SUPABASE_MGMT_CLIENT_SECRET: APP.clientSecret,
      STARTING_CREDITS: '10',
    });
    client.redirectUris.push(`${svc.url}/connect/callback`);
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await supabase?.close();
  });

  it("becomes a connect block: the flow's URLs, the operations' scopes, RFC 6749's defaults said in a comment; the token field stays", async () => {
    expect(plan.provider.connect).toEqual({
      by: 'Supabase Management',
      // Relative in the document: resolved against its server.
      authorize_url: `${supabase.url}/v1/oauth/authorize`,
      token_url: `${supabase.url}/v1/oauth/token`,
      token_body: 'form',
      client_auth: 'basic',
      pkce: true,
      scopes: ['projects:read', 'organizations:read'],
      api: { base_url: supabase.url, headers: { Authorization: 'Bearer {{connection.access_token}}' } },
    });
    expect(plan.provider.auth).toEqual({ headers: { Authorization: 'Bearer {{account.access_token}}' } });
    const text = await readFile(path.join(specs, 'supabase_mgmt', 'provider.yaml'), 'utf8');
    expect(text).toMatch(/# .*OAUTH_SUPABASE_MGMT_CLIENT_ID[^]*RFC 6749[^]*\nconnect:\n/);
    // Swagger 2.0 calls the same flow accessCode.
    const swagger = normalize(
      {
        swagger: '2.0',
        info: { title: 'Old', version: '1' },
        host: 'old.example',
        securityDefinitions: {
          o: {
            type: 'oauth2',
            flow: 'accessCode',
            authorizationUrl: 'https://old.example/oauth/authorize',
            tokenUrl: 'https://old.example/oauth/token',
            scopes: { read: 'Read' },
          },
        },
        paths: { '/things': { get: { operationId: 'things', security: [{ o: ['read'] }], responses: { '200': { description: 'ok' } } } } },
      },
      'inline',
    );
    expect(planImport(swagger, { provider: 'old', descriptionLimit: MAX_DESCRIPTION_LENGTH }).provider.connect).toMatchObject({
      authorize_url: 'https://old.example/oauth/authorize',
      token_url: 'https://old.example/oauth/token',
      scopes: ['read'],
      api: { base_url: 'https://old.example' },
    });
  });

  it('connects through the consent page, and a tool calls with the bearer', async () => {
    const b = new HttpBrowser(svc.url);
    await b.signUp();
    const started = await b.api('POST', '/api/accounts/connect', { provider: 'supabase_mgmt', name: 'Supabase' });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const consent = await b.follow(started.body.authorize_url);
    const acme = supabase.organizations.find((o) => o.name === 'Acme')!;
    const landed = await b.consent(consent.url, consent.html, 'accept', [['organization', acme.slug]]);
    expect(new URL(landed.url).pathname, landed.html.slice(0, 2000)).toBe('/accounts');
    const accountId = new URL(landed.url).searchParams.get('connected')!;
    expect((await b.api('GET', `/api/accounts/${accountId}`)).body).toMatchObject({ kind: 'supabase_mgmt', auth: 'oauth', state: 'connected' });
    // The token request as RFC 6749 has it: a form, the client in HTTP Basic, and the PKCE verifier.
    const exchange = supabase.requests.find((r) => r.path === '/v1/oauth/token')!;
    expect(exchange.headers['content-type']).toContain('application/x-www-form-urlencoded');
    expect(String(exchange.headers.authorization)).toBe(`Basic ${Buffer.from(`${APP.clientId}:${APP.clientSecret}`).toString('base64')}`);
    expect(new URLSearchParams(exchange.body).get('code_verifier')).toBeTruthy();

    const server = await b.api('POST', '/api/servers', { name: 'management' });
    await b.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: 'supabase_mgmt_v1_list_all_projects', account_id: accountId });
    const key = (await b.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'k' })).body.key;
    const calls = toolCalls(await connectV2(svc.url, server.body.id, key));
    const listed = await calls.ok('supabase_mgmt_v1_list_all_projects', {});
    expect(listed.items.map((p: { name: string }) => p.name)).toEqual(['todo-app']);
    expect(String(supabase.requests.at(-1)!.headers.authorization)).toMatch(/^Bearer /);
  });
});

describe('a Swagger 2.0 document', () => {
  let specs: string;
  let plan: ImportPlan;
  let svc: TestService;
  let fake: Awaited<ReturnType<typeof fakeApi>>;
  let calls: ToolCalls;
  let accountId: string;
  let ownerToken: string;

  beforeAll(async () => {
    specs = await tempSpecs();
    ({ plan } = await importInto(specs, path.join(FIXTURES, 'petstore-swagger2.yaml'), { provider: 'petstore' }));
    fake = await fakeApi((r) => {
      if (r.url.searchParams.get('api_key') !== 'k-123') return { status: 401, body: { message: 'bad key' } };
      if (r.url.pathname === '/v2/users/me') return { status: 200, body: { username: 'ada' } };
      if (r.method === 'GET' && r.url.pathname === '/v2/pets') return { status: 200, body: [{ id: 1, name: 'doggie', status: 'available' }] };
      if (r.method === 'POST' && r.url.pathname === '/v2/pets') return { status: 201, body: { id: 2, ...r.body } };
      if (r.method === 'DELETE' && r.url.pathname === '/v2/pets/2') return { status: 204 };
      return { status: 404, body: { message: 'Pet not found' } };
    });
    svc = await startTestService({ TOOL_SPECS_DIR: specs });
    const owner = await createOwner(svc);
    ownerToken = owner.token;
    const { serverId, key, accountIds } = await createServer(svc, owner, {
      accounts: { pets: { kind: 'petstore', name: 'Pets', api_url: `${fake.url}/v2`, api_key: 'k-123' } },
      tools: ['petstore_find_pets_by_status', 'petstore_add_pet', 'petstore_get_pet_by_id', 'petstore_delete_pet'].map((base_tool) => ({
        base_tool,
        account: 'pets',
      })),
    });
    accountId = accountIds.pets;
    calls = toolCalls(await connectV2(svc.url, serverId, key));
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await fake?.close();
  });

  it('reads host, basePath, body and formData parameters, collectionFormat and the API key in the query', async () => {
    expect(plan.document.servers).toEqual(['https://petstore.example/v2']);
    expect(plan.provider.auth).toEqual({ query: { api_key: '{{account.api_key}}' } });
    expect(plan.skipped.map((s) => [s.operation.operationId, s.reason])).toEqual([
      ['uploadFile', 'its body is multipart/form-data (file uploads), which a tool does not send'],
      ['watchPet', 'it streams its answer (text/event-stream)'],
      ['health', 'it answers with text/plain, not JSON'],
    ]);
    await loadCatalog(specs, pluginRegistry);
  });

  it('verifies the account and calls the tools with the key in the query, arrays comma-joined', async () => {
    const verified = await svc.call('POST', `/api/accounts/${accountId}/verify`, { token: ownerToken });
    expect(verified.body).toMatchObject({ verified: true });
    const found = await calls.ok('petstore_find_pets_by_status', { status: ['available', 'pending'] });
    expect(found.items).toEqual([{ id: 1, name: 'doggie', status: 'available' }]);
    const sent = fake.received.find((r) => r.url.pathname === '/v2/pets')!;
    expect(Object.fromEntries(sent.url.searchParams)).toEqual({ status: 'available,pending', limit: '20', api_key: 'k-123' });
    expect(await calls.ok('petstore_add_pet', { name: 'rex', tags: [{ name: 'good' }] })).toEqual({ id: 2, name: 'rex', tags: [{ name: 'good' }] });
    expect(await calls.ok('petstore_delete_pet', { petId: 2 })).toEqual({ success: true });
    const missing = await calls.fails('petstore_get_pet_by_id', { petId: 9 });
    expect(missing).toMatchObject({ code: 'not_found', provider_status: 404 });
    expect(missing.message).not.toContain('k-123');
  });

  it('writes exchanges from the examples that carry the API key in the query, and they run', async () => {
    expect(plan.tools.filter((t) => t.exchanges).map((t) => t.spec.id)).toEqual(['petstore_find_pets_by_status', 'petstore_delete_pet']);
    expect(plan.tools[0].exchanges!.exchanges[0].requests[0]).toMatchObject({
      path: '/v2/pets',
      query: { status: 'available', limit: '20', api_key: 'example-api_key' },
      answer: { status: 200, body: [{ id: 1, name: 'doggie', status: 'available' }] },
    });
    expect(await runExchanges(await loadCatalog(specs, pluginRegistry))).toMatchObject({ failures: [], ran: 2 });
  });
});

describe('the command', () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    // The fixtures served over HTTP on loopback (the circular one refers to its second file by a relative URL).
    server = http.createServer(async (req, res) => {
      const name = path.basename(new URL(req.url!, 'http://x').pathname);
      try {
        const text = await readFile(path.join(FIXTURES, name));
        res.writeHead(200, { 'content-type': 'application/yaml' }).end(text);
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads a URL through the outbound guard: refused by default, read when loopback is allowed', async () => {
    const out = path.join(await tempSpecs(), 'folders');
    const refused = await importCommand([`${base}/circular.yaml`, '--provider', 'folders', '--out', out]);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/127\.0\.0\.1.*(refused|not allowed)/i);
    const read = await importCommand([`${base}/circular.yaml`, '--provider', 'folders', '--out', out], { ALLOW_PRIVATE_NETWORKS: 'loopback' });
    expect(read.code, read.out).toBe(0);
    expect(read.out).toContain('lint: tool specs OK: 1 providers, 3 tools');
    expect((await readdir(out)).sort()).toEqual(['create_folder.yaml', 'get_folder.yaml', 'get_me.yaml', 'provider.yaml']);
  }, 60_000);

  it('dry run: says what would be made and skipped, writes nothing; selects by tag, operationId and method and path', async () => {
    const out = path.join(await tempSpecs(), 'petstore');
    const source = path.join(FIXTURES, 'petstore-swagger2.yaml');
    const dry = await importCommand([
      source,
      '--provider',
      'petstore',
      '--tag',
      'store',
      '--operation',
      'addPet',
      '--operation',
      'delete /pets/*',
      '--dry-run',
      '--out',
      out,
    ]);
    expect(dry.code, dry.out).toBe(0);
    expect(dry.out).toContain('4 of 8 operations selected by --tag store, --operation addPet, --operation delete /pets/*');
    expect(dry.out).toMatch(/petstore_add_pet\s+POST \/pets \(addPet\)/);
    expect(dry.out).toMatch(/petstore_delete_pet\s+DELETE \/pets\/\{petId\} \(deletePet\)/);
    expect(dry.out).toContain('GET /store/health (health): it answers with text/plain, not JSON');
    expect(dry.out).toContain('files: 5 would write');
    await expect(readdir(out)).rejects.toThrow();
    const unknown = await importCommand([source, '--provider', 'petstore', '--tag', 'pets', '--dry-run']);
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain("--tag pets: no operation has this tag (the document's tags: pet, store)");
  }, 60_000);

  it('leaves a file whose import line was deleted alone, and names files of operations it no longer makes', async () => {
    const specs = await tempSpecs();
    const out = path.join(specs, 'petstore');
    await importInto(specs, path.join(FIXTURES, 'petstore-swagger2.yaml'), { provider: 'petstore' });
    const edited = (await readFile(path.join(out, 'add_pet.yaml'), 'utf8')).replace(/^# Imported by.*\n/m, '').replace('credits: 1', 'credits: 3');
    await writeFile(path.join(out, 'add_pet.yaml'), edited);
    const again = await importInto(specs, path.join(FIXTURES, 'petstore-swagger2.yaml'), { provider: 'petstore', operations: ['addPet', 'getMe'] });
    expect(again.report).toMatchObject({ written: [], kept: ['add_pet.yaml'] });
    expect(again.report.stale.sort()).toEqual([
      'delete_pet.exchanges.yaml',
      'delete_pet.yaml',
      'find_pets_by_status.exchanges.yaml',
      'find_pets_by_status.yaml',
      'get_pet_by_id.yaml',
    ]);
    expect(await readFile(path.join(out, 'add_pet.yaml'), 'utf8')).toBe(edited);
  });
});
