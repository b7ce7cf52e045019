// The MCP endpoint over real HTTP: every protocol revision, bare JSON-RPC, the official SDK clients of
// both eras, every JSON-RPC and HTTP error in its place, pagination, progress and cancellation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JiraSandbox, startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { JsonText, serialize, stringify } from '../runtime/mcp/json-text.ts';
import { describeTool, describedTools } from '../runtime/mcp/tool-wire.ts';
import { connectV1, connectV2 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';

let jira: JiraSandbox;
let svc: TestService;
let owner: Owner;
let serverId: string;
let key: string;

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

beforeAll(async () => {
  jira = await startJiraSandbox();
  svc = await startTestService({ TOOLS_PAGE_SIZE: '1', MAX_BODY_BYTES: '4096' });
  owner = await createOwner(svc, 1000);
  ({ serverId, key } = await createServer(svc, owner, {
    accounts: { jira: { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken } },
    tools: [
      { base_tool: 'tracker_get_issue', account: 'jira' },
      { base_tool: 'tracker_get_issue', name: 'read_demo_issue', account: 'jira' },
    ],
  }));
});

afterAll(async () => {
  await svc?.close();
  await jira?.close();
});

/** A raw POST to the server's MCP endpoint. */
async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const res = await fetch(`${svc.url}/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, headers: res.headers, text };
}

const modern = (method: string, params: Record<string, unknown> = {}, id: number | string = 1, headers: Record<string, string> = {}) =>
  post({ jsonrpc: '2.0', id, method, params: { ...params, _meta: MODERN_META } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...headers });

const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance as number;

describe('bare JSON-RPC over HTTP (no initialize, only Content-Type)', () => {
  it('answers tools/list with plain JSON', async () => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body.id).toBe(1);
    expect(res.body.result.tools[0].name).toBe('read_demo_issue');
    expect(res.headers.get('ratelimit-limit')).toBe('100');
  });

  it('answers tools/call with content, and no structuredContent for 2025-03-26', async () => {
    const res = await post({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1', fields: 'summary' } },
    });
    expect(res.status).toBe(200);
    expect(res.body.result.isError).toBe(false);
    expect(res.body.result.structuredContent).toBeUndefined();
    expect(JSON.parse(res.body.result.content[0].text)).toMatchObject({ key: 'DEMO-1', fields: { summary: expect.any(String) } });
  });

  it('answers a notification and a posted response with 202 and no body', async () => {
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    const res = await post({ jsonrpc: '2.0', id: 9, result: {} });
    expect(res.status).toBe(202);
    expect(res.text).toBe('');
  });
});

describe('versions of the initialize era', () => {
  it.each(['2025-03-26', '2025-06-18', '2025-11-25'])('echoes %s', async (v) => {
    const res = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(res.body.result).toMatchObject({
      protocolVersion: v,
      capabilities: { tools: { listChanged: false } },
      serverInfo: { name: 'tool-server', title: 'Tool Server' },
    });
    expect(typeof res.body.result.instructions).toBe('string');
  });

  it.each(['2024-01-01', '2026-07-28'])('answers 2025-11-25 to %s (initialize never names a modern revision)', async (v) => {
    const res = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(res.body.result.protocolVersion).toBe('2025-11-25');
  });

  it('refuses an unsupported MCP-Protocol-Version header with 400', async () => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '1999-01-01' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32000);
    expect(res.body.error.message).toContain('Unsupported protocol version: 1999-01-01');
  });

  it('adds title, outputSchema and structuredContent from 2025-06-18 on', async () => {
    const list = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2025-06-18' });
    const tool = list.body.result.tools[0];
    expect(tool).toMatchObject({ title: 'Get issue', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true } });
    expect(tool.outputSchema.type).toBe('object');
    expect(tool.description).toContain('Cost: 1 credit per call.');
    expect(tool._meta['io.toolserver/credits']).toBe(1);
    const call = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-2' } } },
      { 'mcp-protocol-version': '2025-06-18' },
    );
    expect(call.body.result.structuredContent.key).toBe('DEMO-2');
    expect(JSON.parse(call.body.result.content[0].text)).toEqual(call.body.result.structuredContent);
  });

  it("tags every answer and log line with a request id (the caller's own when it sends one)", async () => {
    const own = await post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { 'x-request-id': 'trace-42' });
    expect(own.headers.get('x-request-id')).toBe('trace-42');
    const made = await post({ jsonrpc: '2.0', id: 9, method: 'ping' }, { 'x-request-id': 'bad id with spaces' });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    await expect.poll(() => svc.logs.some((l) => l.includes('"requestId":"trace-42"'))).toBe(true);
  });

  it('answers ping with an empty result', async () => {
    expect((await post({ jsonrpc: '2.0', id: 7, method: 'ping' })).body).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
  });
});

describe('the 2026-07-28 revision', () => {
  it('answers server/discover with the supported versions and the per-result fields', async () => {
    const res = await modern('server/discover');
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: { listChanged: false } },
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'tool-server' } },
    });
  });

  it('stamps tools/list with cache hints', async () => {
    const res = await modern('tools/list');
    expect(res.body.result).toMatchObject({ resultType: 'complete', ttlMs: 30000, cacheScope: 'private' });
  });

  it('checks Mcp-Method and Mcp-Name against the body (400, -32020)', async () => {
    const missing = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } }, { 'mcp-protocol-version': '2026-07-28' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe(-32020);
    const wrong = await modern('tools/list', {}, 1, { 'mcp-method': 'tools/call' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: -32020, data: { mismatch: { header: 'tools/call' } } });
    const name = await modern('tools/call', { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } }, 2, { 'mcp-name': 'other' });
    expect(name.status).toBe(400);
    expect(name.body.error.code).toBe(-32020);
    const encoded = await modern('tools/call', { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } }, 3, {
      'mcp-name': `=?base64?${Buffer.from('tracker_get_issue').toString('base64')}?=`,
    });
    expect(encoded.body.result.isError).toBe(false);
  });

  it('refuses unsupported versions with 400 and -32022', async () => {
    const res = await post(
      { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32022, message: 'Unsupported protocol version: 2099-01-01', data: { supported: ['2026-07-28'], requested: '2099-01-01' } },
    });
  });

  it('requires the _meta envelope (400, -32602)', async () => {
    const res = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list' }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32602);
  });

  it('answers unknown methods, ping and initialize with HTTP 404 and -32601', async () => {
    for (const method of ['resources/list', 'ping', 'initialize']) {
      const res = await modern(method);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe(-32601);
    }
  });

  it('refuses batches that carry modern requests', async () => {
    const res = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } }]);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32600);
  });
});

describe('JSON-RPC errors', () => {
  it('parse error: 400 and -32700', async () => {
    const res = await post('{"jsonrpc": "2.0", ');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  it('invalid request: 400 and -32600', async () => {
    for (const bad of [{ id: 1, method: 'tools/list' }, { jsonrpc: '2.0', id: 1 }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: [1] }, 42]) {
      const res = await post(bad);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe(-32600);
    }
  });

  it('unknown method: in-band -32601 in the initialize era', async () => {
    const res = await post({ jsonrpc: '2.0', id: 3, method: 'resources/list' });
    expect(res.status).toBe(200);
    expect(res.body.error).toMatchObject({ code: -32601, message: 'Method not found: resources/list' });
  });

  it('unknown tool, missing tool name and a bad cursor: -32602', async () => {
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nope', arguments: {} } })).body.error).toMatchObject({
      code: -32602,
      message: 'Unknown tool: nope',
    });
    expect((await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} })).body.error.code).toBe(-32602);
    expect((await post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 'bogus' } })).body.error.code).toBe(-32602);
  });

  it('an answer that does not fit the output schema is an error result, and the credit comes back', async () => {
    const before = await balance();
    jira.faults.push({ pathPrefix: '/rest/api/3/issue/DEMO-1', status: 200, body: 'maintenance page' });
    const res = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } } },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(res.body.result.isError).toBe(true);
    expect(res.body.result.structuredContent.error).toEqual({
      code: 'unexpected_response',
      message: 'The provider\'s answer did not have the expected shape: "id" is required; "key" is required; "fields" is required',
      retryable: false,
      provider_status: 200,
    });
    expect(await balance()).toBe(before);
  });

  it('invalid arguments are a tool result naming each field, and nothing is charged', async () => {
    const before = await balance();
    const res = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { fields: 3, extra: true } } },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(res.body.result.isError).toBe(true);
    expect(res.body.result.content[0].text).toBe(
      'Invalid arguments: "issue_key" is required; "extra" is not a parameter of this tool; "fields" must be string',
    );
    expect(res.body.result.structuredContent.error).toEqual({
      code: 'invalid_arguments',
      message: res.body.result.content[0].text,
      retryable: false,
      provider_status: null,
    });
    expect(await balance()).toBe(before);
  });

  it('batches: answered for 2025-03-26, refused for later revisions', async () => {
    const ok = await post([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'nope' },
    ]);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not found: nope' } },
    ]);
    expect((await post([{ jsonrpc: '2.0', method: 'notifications/initialized' }])).status).toBe(202);
    const refused = await post([{ jsonrpc: '2.0', id: 1, method: 'ping' }], { 'mcp-protocol-version': '2025-06-18' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe(-32600);
  });
});

describe('HTTP errors before the MCP layer', () => {
  it('GET and DELETE: 405 with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${svc.url}/mcp/${serverId}`, { method, headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });

  it('finds the endpoint as a router would: a trailing slash, a percent-encoded id; other paths are not it', async () => {
    const list = (path: string) =>
      fetch(`${svc.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    for (const path of [`/mcp/${serverId}/`, `/mcp/%${serverId.charCodeAt(0).toString(16)}${serverId.slice(1)}`]) {
      const res = await list(path);
      expect(res.status, path).toBe(200);
      expect(((await res.json()) as any).result.tools[0].name).toBe('read_demo_issue');
    }
    // Another server's id (one the key is not for), a malformed escape, and a deeper path.
    expect((await list('/mcp/srv_other')).status).toBe(401);
    expect((await list('/mcp/%E0%A4%A')).status).toBe(401);
    expect((await list(`/mcp/${serverId}/more`)).status).toBe(404);
  });

  it('a body over the limit: 413', async () => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(5000) } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: 'Payload Too Large', message: 'The request body is larger than 4096 bytes' });
  });

  it('a wrong content type: 415; an Accept it cannot satisfy: 406; a foreign Origin: 403', async () => {
    expect((await post('{}', { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'text/html' })).status).toBe(406);
    const foreign = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
  });

  it('no key: 401 with WWW-Authenticate and the spec body', async () => {
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: '' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp\/[\w-]+", scope="mcp:tools"$/,
    );
    expect(res.body).toEqual({ error: 'Unauthorized', message: 'Invalid or expired API key' });
  });
});

describe('pagination of tools/list', () => {
  it('walks every page with an opaque cursor, in a stable order', async () => {
    const first = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(first.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['read_demo_issue']);
    const second = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: first.body.result.nextCursor } });
    expect(second.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['tracker_get_issue']);
    expect(second.body.result.nextCursor).toBeUndefined();
  });
});

describe('official SDK clients', () => {
  it('v1 client lists (all pages) and calls', async () => {
    const client = await connectV1(svc.url, serverId, key);
    const first = await client.listTools();
    const second = await client.listTools({ cursor: first.nextCursor });
    expect([...first.tools, ...second.tools].map((t) => t.name)).toEqual(['read_demo_issue', 'tracker_get_issue']);
    const result = await client.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' } });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({
      key: 'DEMO-1',
      fields: { status: { name: expect.any(String), statusCategory: { key: expect.any(String) } } },
    });
    const failed = await client.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-99999' } });
    expect(failed.isError).toBe(true);
    expect((failed.structuredContent as { error: { code: string } }).error.code).toBe('issue_not_found');
    await client.close();
  });

  it.each(['legacy', 'modern', 'auto'] as const)('v2 client (%s) lists and calls', async (era) => {
    const client = await connectV2(svc.url, serverId, key, era);
    expect(client.getProtocolEra()).toBe(era === 'legacy' ? 'legacy' : 'modern');
    const first = await client.listTools();
    expect(first.tools[0].name).toBe('read_demo_issue');
    const result = await client.callTool({ name: 'read_demo_issue', arguments: { issue_key: 'DEMO-3', fields: 'summary' } });
    expect(result.isError).toBe(false);
    expect((result.structuredContent as { key: string }).key).toBe('DEMO-3');
    await client.close();
  });
});

describe('progress and cancellation', () => {
  /** Waits until the Jira sandbox has received a request for `path` (after the first `seen` requests). */
  const providerGot = (path: string, seen: number) => expect.poll(() => jira.requests.slice(seen).some((r) => r.path === path), { timeout: 10_000 }).toBe(true);

  it('streams progress notifications over SSE before the answer when asked', async () => {
    const res = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 11,
        method: 'tools/call',
        params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1' }, _meta: { progressToken: 'p1' } },
      }),
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) =>
        JSON.parse(
          e
            .split('\n')
            .find((l) => l.startsWith('data: '))!
            .slice(6),
        ),
      );
    expect(events[0]).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'p1', progress: 1 } });
    expect(events.at(-1)).toMatchObject({ id: 11, result: { isError: false } });
  });

  // A cancelled call whose request reached the provider is paid for; one cancelled before sending is refunded
  // (test/attack-findings.test.ts, "a cancelled call is paid for once the provider got the request").
  it('notifications/cancelled stops the named call of the same key; the provider had the request, so the credit is kept', async () => {
    const before = await balance();
    // The provider would answer after 20 s: an answer before that is the cancellation's.
    jira.faults.push({ pathPrefix: '/rest/api/3/issue/DEMO-3', status: 200, body: {}, delayMs: 20_000 });
    const seen = jira.requests.length;
    const pending = post({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-3' } } });
    await providerGot('/rest/api/3/issue/DEMO-3', seen);
    const cancel = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'user changed their mind' } });
    expect(cancel.status).toBe(202);
    const res = await pending;
    expect(res.body.result).toMatchObject({
      isError: true,
      content: [{ text: 'The call was cancelled after the provider received the request (it may have acted on it), so its credits are kept' }],
    });
    expect(await balance()).toBe(before - 1);
  });

  it('a client that goes away aborts the upstream call; the provider had the request, so the credit is kept', async () => {
    const before = await balance();
    jira.faults.push({ pathPrefix: '/rest/api/3/issue/DEMO-2', status: 200, body: {}, delayMs: 20_000 });
    const seen = jira.requests.length;
    const controller = new AbortController();
    const pending = fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-2' } } }),
    }).catch((e: Error) => e);
    await providerGot('/rest/api/3/issue/DEMO-2', seen);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    // The charge is open while the call runs: wait for its record, then the balance is final.
    await expect
      .poll(async () => (await svc.call('GET', '/api/calls?limit=1', { token: owner.token })).body.calls[0], { timeout: 3000 })
      .toMatchObject({ tool: 'tracker_get_issue', code: 'cancelled', outcome: 'tool_error', credits: 1 });
    expect(await balance()).toBe(before - 1);
  });
});

describe('answers with pre-serialized parts (tools/list entries)', () => {
  const tool = {
    name: 'get_page',
    title: 'Get page',
    description: 'Reads a page. ',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    credits: 2,
  };

  it('put each part in as its JSON, exactly where the value was, and nothing else', () => {
    const forged = 'a string that looks like a part: \u0000deadbeefdeadbeef:0\u0000';
    const answer = { id: 1, result: { tools: new JsonText('[{"a":1}]'), note: forged, more: [new JsonText('2'), new JsonText('"x"')] } };
    const expected = { id: 1, result: { tools: [{ a: 1 }], note: forged, more: [2, 'x'] } };
    expect(JSON.parse(stringify(answer))).toEqual(expected);
    expect(stringify({ plain: true })).toBe('{"plain":true}');
    // As an answer's body: the same JSON as bytes, non-ASCII text included.
    const body = serialize({ ...answer, name: 'Überblick ✓', tail: new JsonText('"é"') });
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(JSON.parse(body.toString())).toEqual({ ...expected, name: 'Überblick ✓', tail: 'é' });
    expect(serialize({ plain: true })).toBe('{"plain":true}');
  });

  it('give the same entries as describing each tool anew, per protocol revision, also when served from the cache', () => {
    for (const version of ['2025-03-26', '2025-11-25']) {
      const expected = [describeTool(tool, version)];
      const list = [tool, { ...tool, name: 'second' }];
      for (let i = 0; i < 2; i++) {
        expect(JSON.parse(stringify({ tools: describedTools(list, 0, 1, version) })).tools).toEqual(expected);
        expect(JSON.parse(stringify({ tools: describedTools(list, 1, 2, version) })).tools).toEqual([describeTool(list[1]!, version)]);
      }
    }
    expect(describeTool(tool, '2025-03-26')).not.toHaveProperty('outputSchema');
  });
});
