// OpenTelemetry traces: the service exports to an OTLP/HTTP receiver of this test's own on loopback, and we
// read what it sent (OTLP JSON). Calls come from the official MCP SDK client, with the caller's traceparent in
// `params._meta` or in the HTTP header, against the demo upstream of test/fixtures/specs.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../runtime/config.ts';
import { argumentSegments, traceUrl } from '../runtime/tracing/outbound.ts';
import { listenOnLoopback, readBody } from '../sandboxes/harness.ts';
import { type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  start: bigint;
  end: bigint;
  resource: Record<string, unknown>;
}

/** An OTLP/HTTP receiver: keeps every export's raw body and its spans; `hang` leaves requests unanswered. */
async function startReceiver(opts: { hang?: boolean } = {}) {
  const bodies: string[] = [];
  const spans: ExportedSpan[] = [];
  const contentTypes: string[] = [];
  const running = await listenOnLoopback(async (req, res) => {
    const body = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    bodies.push(body);
    contentTypes.push(String(req.headers['content-type']));
    spans.push(...parseOtlpJson(body));
    if (opts.hang) return;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  return { ...running, bodies, spans, contentTypes, inTrace: (traceId: string) => spans.filter((s) => s.traceId === traceId) };
}

function attributesOf(list: Array<{ key: string; value: Record<string, unknown> }> = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list) {
    if ('intValue' in value) out[key] = Number(value.intValue);
    else if ('stringValue' in value) out[key] = value.stringValue;
    else if ('boolValue' in value) out[key] = value.boolValue;
    else if ('doubleValue' in value) out[key] = value.doubleValue;
    else out[key] = value;
  }
  return out;
}

function parseOtlpJson(text: string): ExportedSpan[] {
  const doc = JSON.parse(text) as { resourceSpans: any[] };
  return doc.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss: any) =>
      ss.spans.map((s: any): ExportedSpan => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: attributesOf(s.attributes),
        status: s.status ?? {},
        start: BigInt(s.startTimeUnixNano),
        end: BigInt(s.endTimeUnixNano),
        resource: attributesOf(rs.resource?.attributes),
      })),
    ),
  );
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const SPECS = path.resolve('test/fixtures/specs');
/** An argument value that must never appear in a span. */
const SECRET_MESSAGE = `an argument value ${hex(8)}`;
const SERVER = 2;
const CLIENT = 3;

async function connect(svc: TestService, serverId: string, key: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'tracing-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } } }),
  );
  return client;
}

describe('traces exported over OTLP/HTTP', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let upstream: DemoUpstream;
  let svc: TestService;
  let serverId: string;
  let key: string;
  let keyId: string;
  let owner: Awaited<ReturnType<typeof createOwner>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    upstream = await startDemoUpstream(`tok_${hex(16)}`);
    svc = await startTestService({
      TOOL_SPECS_DIR: SPECS,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'tool-server-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    owner = await createOwner(svc, 3);
    ({ serverId, key } = await createServer(svc, owner, {
      accounts: { demo: { kind: 'demo', name: 'Demo', base_url: upstream.url, token: upstream.token } },
      tools: [
        { base_tool: 'demo_echo', account: 'demo' },
        { base_tool: 'demo_ping', account: 'demo' },
      ],
    }));
    keyId = (await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token: owner.token })).body.api_keys[0].id;
  });
  afterAll(async () => {
    await svc?.close();
    await upstream?.close();
    await receiver?.close();
  });

  /** The spans of one trace once its tools/call span (which ends last) has arrived. */
  async function traceOf(traceId: string, root: string): Promise<ExportedSpan[]> {
    await vi.waitFor(() => expect(receiver.inTrace(traceId).map((s) => s.name)).toContain(root), { timeout: 10_000, interval: 50 });
    return receiver.inTrace(traceId);
  }

  it('a tools/call with a traceparent in _meta: one trace of the caller, the span tree and its attributes, the traceparent sent on to the provider', async () => {
    const traceId = hex(16);
    const callerSpan = hex(8);
    const client = await connect(svc, serverId, key);
    const result = await client.callTool({
      name: 'demo_echo',
      arguments: { message: SECRET_MESSAGE },
      _meta: { traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(result.isError).toBeFalsy();
    await client.close();

    const spans = await traceOf(traceId, 'tools/call demo_echo');
    const root = spans.find((s) => s.name === 'tools/call demo_echo')!;
    expect(root.parentSpanId).toBe(callerSpan);
    expect(root.kind).toBe(SERVER);
    expect(root.resource['service.name']).toBe('tool-server-under-test');
    const [call] = (await svc.call('GET', '/api/calls?limit=1', { token: owner.token })).body.calls;
    expect(root.attributes).toMatchObject({
      'toolserver.server.id': serverId,
      'toolserver.key.id': keyId,
      'toolserver.owner.id': owner.id,
      'toolserver.tool': 'demo_echo',
      'toolserver.call.id': call.id,
      'toolserver.outcome': 'ok',
      'toolserver.error.code': 'ok',
      'toolserver.credits.charged': 2,
      'toolserver.credits.kept': 2,
      'mcp.method.name': 'tools/call',
    });
    const children = spans.filter((s) => s.parentSpanId === root.spanId);
    expect(children.map((s) => s.name)).toEqual(expect.arrayContaining(['authenticate', 'rate limit', 'charge', 'POST', 'ledger record']));
    expect(children).toHaveLength(5);
    expect(spans).toHaveLength(6);
    // Each child lies within the call, in the pipeline's order.
    const byName = Object.fromEntries(children.map((s) => [s.name, s]));
    const order = ['authenticate', 'rate limit', 'charge', 'POST', 'ledger record'].map((n) => byName[n]);
    // (The SDK anchors each span to the millisecond clock: allow that much.)
    const ms = 1_000_000n;
    for (const s of order) expect(s.start >= root.start - ms && s.end <= root.end + ms).toBe(true);
    for (let i = 1; i < order.length; i++) expect(order[i].start >= order[i - 1].end - ms).toBe(true);
    expect(byName.charge.attributes).toMatchObject({ 'toolserver.credits.cost': 2, 'toolserver.charge.accepted': true });
    expect(byName['rate limit'].attributes).toMatchObject({ 'toolserver.rate_limit.allowed': true });

    // The provider request: method, URL without query and with the argument-carrying segment hidden, status.
    const provider = byName.POST;
    expect(provider.kind).toBe(CLIENT);
    expect(provider.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.full': `${upstream.url}/echo/{}`,
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
    });
    const sent = upstream.requests.filter((r) => r.path === '/echo/200');
    expect(sent).toHaveLength(1);
    expect(sent[0].headers.traceparent).toBe(`00-${traceId}-${provider.spanId}-01`);

    // Nothing secret in any export: no key, token or argument value.
    const exported = receiver.bodies.join('\n');
    for (const secret of [key, upstream.token, owner.token, svc.operatorToken, SECRET_MESSAGE, 'argument value']) {
      expect(exported).not.toContain(secret);
    }
  });

  it('a traceparent in the HTTP header, a provider retry as two attempts each with its own traceparent, a refused charge', async () => {
    const traceId = hex(16);
    const callerSpan = hex(8);
    const client = await connect(svc, serverId, key, { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'caller=1' });
    upstream.failNext = 1;
    const before = upstream.requests.length;
    const result = await client.callTool({ name: 'demo_ping', arguments: {} });
    expect(result.isError).toBeFalsy();

    const spans = await traceOf(traceId, 'tools/call demo_ping');
    // The header went with every request of the client (initialize too): only the tools/call made spans.
    const roots = spans.filter((s) => s.parentSpanId === callerSpan);
    expect(roots.map((s) => s.name)).toEqual(['tools/call demo_ping']);
    const root = roots[0];
    expect(root.attributes).toMatchObject({ 'toolserver.outcome': 'ok', 'toolserver.credits.charged': 1, 'toolserver.credits.kept': 1 });
    const attempts = spans.filter((s) => s.parentSpanId === root.spanId && s.name === 'GET').sort((a, b) => Number(a.start - b.start));
    expect(attempts.map((s) => s.attributes['http.response.status_code'])).toEqual([503, 200]);
    expect(attempts[0].attributes['error.type']).toBe('503');
    expect(attempts[0].status.code).toBe(2);
    expect(attempts[0].attributes['http.request.resend_count']).toBeUndefined();
    expect(attempts[1].attributes['http.request.resend_count']).toBe(1);
    const pings = upstream.requests.slice(before).filter((r) => r.path === '/ping');
    expect(pings.map((r) => r.headers.traceparent)).toEqual(attempts.map((a) => `00-${traceId}-${a.spanId}-01`));
    expect(pings.every((r) => r.headers.tracestate === 'caller=1')).toBe(true);

    // The balance is now 0: the next call is refused before the provider, and its span says so.
    const refused = await client.callTool({ name: 'demo_ping', arguments: {} });
    expect(refused.isError).toBe(true);
    await vi.waitFor(() => expect(receiver.inTrace(traceId).filter((s) => s.name === 'tools/call demo_ping')).toHaveLength(2), {
      timeout: 10_000,
      interval: 50,
    });
    const second = receiver.inTrace(traceId).filter((s) => s.name === 'tools/call demo_ping' && s.spanId !== root.spanId)[0];
    expect(second.attributes).toMatchObject({
      'toolserver.outcome': 'rejected',
      'toolserver.error.code': 'insufficient_credits',
      'toolserver.credits.charged': 0,
      'toolserver.credits.kept': 0,
    });
    expect(second.status.code).toBe(2);
    const secondChildren = receiver.inTrace(traceId).filter((s) => s.parentSpanId === second.spanId);
    expect(secondChildren.map((s) => s.name).sort()).toEqual(['authenticate', 'charge', 'ledger record', 'rate limit']);
    expect(secondChildren.find((s) => s.name === 'charge')!.attributes['toolserver.charge.accepted']).toBe(false);
    await client.close();
  });

  it('a request refused before its body is read is one span with its outcome, and no key', async () => {
    const traceId = hex(16);
    const res = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer mcpk_notarealkeyatall', traceparent: `00-${traceId}-${hex(8)}-01` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } }),
    });
    expect(res.status).toBe(401);
    const spans = await traceOf(traceId, 'POST /mcp');
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /mcp', 'authenticate']);
    const span = spans.find((s) => s.name === 'POST /mcp')!;
    expect(span.attributes).toMatchObject({ 'toolserver.outcome': 'unauthorized', 'http.response.status_code': 401, 'toolserver.server.id': serverId });
    expect(span.attributes['toolserver.key.id']).toBeUndefined();
    expect(receiver.bodies.join('\n')).not.toContain('mcpk_notarealkeyatall');
  });

  it('an unsampled caller (flags 00) gets no spans exported, and the provider still gets the trace, unsampled', async () => {
    const traceId = hex(16);
    const before = upstream.requests.length;
    const client = await connect(svc, serverId, key);
    await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount: 1 } });
    const result = await client.callTool({ name: 'demo_ping', arguments: {}, _meta: { traceparent: `00-${traceId}-${hex(8)}-00` } });
    expect(result.isError).toBeFalsy();
    await client.close();
    const ping = upstream.requests.slice(before).find((r) => r.path === '/ping')!;
    expect(ping.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    // A sampled call made after it is exported; by then the unsampled one would have been too.
    const marker = hex(16);
    const again = await connect(svc, serverId, key);
    await again.callTool({ name: 'demo_nope', arguments: {}, _meta: { traceparent: `00-${marker}-${hex(8)}-01` } }).catch(() => undefined);
    await again.close();
    const spans = await traceOf(marker, 'tools/call demo_nope');
    expect(spans.find((s) => s.name === 'tools/call demo_nope')!.attributes).toMatchObject({
      'toolserver.outcome': 'rejected',
      'toolserver.error.code': 'unknown_tool',
    });
    expect(receiver.inTrace(traceId)).toEqual([]);
  });
});

describe('tracing at shutdown and when off', () => {
  let upstream: DemoUpstream;
  beforeAll(async () => {
    upstream = await startDemoUpstream(`tok_${hex(16)}`);
  });
  afterAll(async () => {
    await upstream?.close();
  });

  async function oneCall(svc: TestService, traceId: string): Promise<void> {
    const owner = await createOwner(svc, 10);
    const { serverId, key } = await createServer(svc, owner, {
      accounts: { demo: { kind: 'demo', name: 'Demo', base_url: upstream.url, token: upstream.token } },
      tools: [{ base_tool: 'demo_ping', account: 'demo' }],
    });
    const client = await connect(svc, serverId, key);
    const result = await client.callTool({ name: 'demo_ping', arguments: {}, _meta: { traceparent: `00-${traceId}-${hex(8)}-01` } });
    expect(result.isError).toBeFalsy();
    await client.close();
  }

  it('close() sends the spans still buffered', async () => {
    const receiver = await startReceiver();
    // Nothing would be sent for a minute but for the shutdown.
    const svc = await startTestService({
      TOOL_SPECS_DIR: SPECS,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    });
    const traceId = hex(16);
    await oneCall(svc, traceId);
    expect(receiver.inTrace(traceId)).toEqual([]);
    await svc.close();
    expect(receiver.inTrace(traceId).map((s) => s.name)).toContain('tools/call demo_ping');
    expect(receiver.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
    await receiver.close();
  });

  it('close() waits for a collector that does not answer no longer than the export timeout', async () => {
    const receiver = await startReceiver({ hang: true });
    const svc = await startTestService({
      TOOL_SPECS_DIR: SPECS,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '60000',
      OTEL_EXPORTER_OTLP_TIMEOUT: '300',
    });
    const traceId = hex(16);
    await oneCall(svc, traceId);
    const started = performance.now();
    await svc.close();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(receiver.inTrace(traceId).length).toBeGreaterThan(0);
    expect(svc.logs.some((l) => /the last traces were not exported in time|exporting traces failed/.test(l))).toBe(true);
    await receiver.close();
  });

  it('without an endpoint (or with OTEL_SDK_DISABLED) nothing is sent and no traceparent goes to the provider', async () => {
    const receiver = await startReceiver();
    const envs: Array<Record<string, string>> = [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' }];
    for (const env of envs) {
      const svc = await startTestService({ TOOL_SPECS_DIR: SPECS, OTEL_BSP_SCHEDULE_DELAY: '10', ...env });
      const before = upstream.requests.length;
      await oneCall(svc, hex(16));
      await svc.close();
      const pings = upstream.requests.slice(before).filter((r) => r.path === '/ping');
      expect(pings).toHaveLength(1);
      expect(pings[0].headers.traceparent).toBeUndefined();
    }
    expect(receiver.bodies).toEqual([]);
    await receiver.close();
  });
});

describe('tracing configuration', () => {
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadConfig(env);
      return '';
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
  };

  it('reads the endpoint, service name, sampler, headers and timeouts', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    const config = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s%3Dcret,tenant=a',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=ignored',
      OTEL_SERVICE_NAME: 'tools-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing!;
    expect(config).toMatchObject({
      url: 'http://collector.internal:4318/v1/traces',
      headers: { 'x-api-key': 's=cret', tenant: 'a' },
      resource: { 'deployment.environment': 'prod', 'service.name': 'tools-eu' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      timeoutMs: 10_000,
      scheduleDelayMs: 5000,
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example/otlp/traces' }).tracing).toMatchObject({
      url: 'https://c.example/otlp/traces',
      resource: { 'service.name': 'tool-server' },
      sampler: 'parentbased_always_on',
    });
  });

  it('a malformed value is a start-up error naming the variable; secret values are not repeated', () => {
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toContain('OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL');
    expect(problemsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/v1/traces' })).toContain(
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http or https URL',
    );
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(problemsOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toContain('OTEL_EXPORTER_OTLP_PROTOCOL: only http/json is supported');
    expect(problemsOf({ ...base, OTEL_TRACES_SAMPLER: 'sometimes' })).toContain('OTEL_TRACES_SAMPLER must be one of');
    expect(problemsOf({ ...base, OTEL_TRACES_SAMPLER_ARG: '2' })).toContain('OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1');
    expect(problemsOf({ ...base, OTEL_BSP_SCHEDULE_DELAY: 'soon' })).toContain('OTEL_BSP_SCHEDULE_DELAY must be an integer');
    const headers = problemsOf({ ...base, OTEL_EXPORTER_OTLP_HEADERS: 'authorization-Bearer-s3cr3t-token' });
    expect(headers).toContain('OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value pairs');
    expect(headers).not.toContain('s3cr3t');
    // Tracing off: the other OTEL_* variables are not read.
    expect(problemsOf({ OTEL_TRACES_SAMPLER: 'sometimes' })).toBe('');
  });

  it('a span shows a URL without credentials, query or argument values', () => {
    const hidden = argumentSegments({ table: 'todos', nested: [{ hook: 'orders/new' }], limit: 5 });
    expect(traceUrl(new URL('https://user:pw@db.example:8443/rest/v1/todos?select=*&apikey=x'), hidden)).toBe('https://db.example:8443/rest/v1/{}');
    expect(traceUrl(new URL('https://n8n.example/webhook/orders/new'), hidden)).toBe('https://n8n.example/webhook/{}/{}');
    // Identifiers the arguments led to are hidden too; API words and versions stay.
    expect(traceUrl(new URL('https://x.atlassian.net/rest/api/3/issue/PROJ-12/transitions'), hidden)).toBe(
      'https://x.atlassian.net/rest/api/3/issue/{}/transitions',
    );
    expect(traceUrl(new URL('https://api.notion.com/v1/blocks/1f2e3d4c5b6a79880123456789abcdef/children'), hidden)).toBe(
      'https://api.notion.com/v1/blocks/{}/children',
    );
  });
});
