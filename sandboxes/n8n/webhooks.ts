// Webhook endpoints (docs/provider-coverage.md): /webhook/<path> runs the published version of active workflows,
// /webhook-test/<path> runs the current version once after armTestWebhook(). The workflow is "executed"
// by walking its nodes: Wait sleeps, Stop and Error fails, Respond to Webhook answers.
import type http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sendJson } from '../harness.ts';
import { NODE_TYPES, safeDecode, type N8nConnections, type N8nNode, type N8nWorkflow } from './model.ts';

export type WebhookMode = 'production' | 'test';

/** One webhook call that reached a workflow (after the path, method and auth checks passed). */
export interface WebhookCall {
  mode: WebhookMode;
  workflowId: string;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  query: Record<string, string | string[]>;
  body: unknown;
}

export interface WebhookContext {
  baseUrl: string;
  workflows: N8nWorkflow[];
  /** Workflows whose test URL listens for exactly one call. */
  armedTests: Set<string>;
  credentialData: Record<string, Record<string, string>>;
  calls: WebhookCall[];
  /** Aborted when the sandbox closes, so slow webhooks stop waiting. */
  signal: AbortSignal;
}

interface Registration {
  workflow: N8nWorkflow;
  node: N8nNode;
  nodes: N8nNode[];
  connections: N8nConnections;
  methods: string[];
  path: string;
}

const PRODUCTION_HINT =
  "The workflow must be active for a production URL to run successfully. You can activate the workflow using the toggle in the top-right of the editor. Note that unlike test URL calls, production URL calls aren't shown on the canvas (only in the executions list)";
const TEST_HINT =
  "Click the 'Execute workflow' button on the canvas, then try again. (In test mode, the webhook only works for one call after you click this button)";

/** n8n stores webhook paths without surrounding slashes and ignores a trailing slash in requests. */
const trimSlashes = (path: string) => path.replace(/^\/+|\/+$/g, '');

function registrations(workflow: N8nWorkflow, version: { nodes: N8nNode[]; connections: N8nConnections }): Registration[] {
  return version.nodes
    .filter((node) => node.type === NODE_TYPES.webhook && !node.disabled)
    .map((node) => {
      const method = node.parameters.httpMethod ?? 'GET';
      return {
        workflow,
        node,
        nodes: version.nodes,
        connections: version.connections,
        methods: (Array.isArray(method) ? method : [method]).map(String),
        path: trimSlashes(String(node.parameters.path ?? '')),
      };
    });
}

function registered(ctx: WebhookContext, mode: WebhookMode): Registration[] {
  if (mode === 'production') {
    return ctx.workflows.flatMap((w) => (w.activeVersion ? registrations(w, w.activeVersion) : []));
  }
  return ctx.workflows.filter((w) => ctx.armedTests.has(w.id)).flatMap((w) => registrations(w, w));
}

function notRegistered(res: http.ServerResponse, method: string, path: string, mode: WebhookMode): void {
  sendJson(res, 404, {
    code: 404,
    message: `The requested webhook "${method} ${path}" is not registered.`,
    hint: mode === 'production' ? PRODUCTION_HINT : TEST_HINT,
  });
}

function wrongMethod(res: http.ServerResponse, method: string, methods: string[]): void {
  const listed = methods.length === 1 ? methods[0] : `${methods.slice(0, -1).join(', ')} or ${methods[methods.length - 1]}`;
  sendJson(res, 404, { code: 404, message: `This webhook is not registered for ${method} requests. Did you mean to make a ${listed} request?` });
}

/** Parses the body like n8n's webhook body parser; throws on malformed input. */
function parseBody(req: http.IncomingMessage, raw: string): unknown {
  if (raw.length === 0) return {};
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return JSON.parse(raw);
  if (type === 'application/x-www-form-urlencoded') return queryObject(new URLSearchParams(raw));
  if (type === 'text/plain') return raw;
  return {};
}

function queryObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    out[key] = values.length === 1 ? values[0] : values;
  }
  return out;
}

/** Checks the Webhook node's authentication option; answers and returns false when it fails. */
function authorized(ctx: WebhookContext, node: N8nNode, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const kind = node.parameters.authentication ?? 'none';
  if (kind === 'none') return true;
  const credentialType = kind === 'basicAuth' ? 'httpBasicAuth' : 'httpHeaderAuth';
  const expected = ctx.credentialData[node.credentials?.[credentialType]?.id ?? ''];
  const fail = (status: number, message?: string) => {
    res.writeHead(status, { 'WWW-Authenticate': 'Basic realm="Webhook"' });
    res.end(message ?? (status === 401 ? 'Authorization is required!' : 'Authorization data is wrong!'));
    return false;
  };
  if (!expected) return fail(500, 'No authentication data defined on node!');
  if (kind === 'basicAuth') {
    const match = /^basic +([A-Za-z0-9+/=._~-]+)$/i.exec(req.headers.authorization ?? '');
    if (!match) return fail(401);
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const [user, password] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    return (user === expected.user && password === expected.password) || fail(403);
  }
  // Header auth answers 403 whether the header is missing or wrong.
  return req.headers[expected.name.toLowerCase()] === expected.value || fail(403);
}

/** Resolves "={{ $json.a.b }}" style expressions against the item (dotted paths only). */
function evaluate(template: unknown, json: Record<string, unknown>): unknown {
  if (typeof template !== 'string' || !template.startsWith('=')) return template;
  const text = template.slice(1);
  const lookup = (path: string): unknown =>
    path
      .replace(/^\$json\.?/, '')
      .split('.')
      .filter(Boolean)
      .reduce<unknown>((value, key) => (value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined), json);
  const whole = /^\{\{\s*(\$json[\w.]*)\s*\}\}$/.exec(text);
  if (whole) return lookup(whole[1]);
  return text.replace(/\{\{\s*(\$json[\w.]*)\s*\}\}/g, (_, path: string) => {
    const value = lookup(path);
    if (value === undefined || value === null) return '';
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

class WorkflowError extends Error {}

/** Runs the nodes after the webhook; returns the last item and the Respond node reached, if any. */
async function execute(reg: Registration, method: string, json: Record<string, unknown>, signal: AbortSignal) {
  const byName = new Map(reg.nodes.map((n) => [n.name, n]));
  let current = reg.node.name;
  let output = Math.max(reg.methods.indexOf(method), 0); // one output per method with multipleMethods
  for (;;) {
    const nextName = reg.connections[current]?.main[output]?.[0]?.node;
    const node = nextName ? byName.get(nextName) : undefined;
    if (!node) return { json, respond: undefined };
    current = node.name;
    output = 0;
    if (node.disabled) continue;
    if (node.type === NODE_TYPES.wait) {
      const unitMs = node.parameters.unit === 'minutes' ? 60_000 : node.parameters.unit === 'hours' ? 3_600_000 : 1000;
      await sleep(Number(node.parameters.amount ?? 1) * unitMs, undefined, { signal });
    } else if (node.type === NODE_TYPES.stopAndError) {
      throw new WorkflowError(String(node.parameters.errorMessage ?? 'Workflow stopped'));
    } else if (node.type === NODE_TYPES.respond) {
      return { json, respond: node };
    }
  }
}

function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

function respondNodeAnswer(res: http.ServerResponse, node: N8nNode, json: Record<string, unknown>): void {
  const options = (node.parameters.options ?? {}) as { responseCode?: number; responseHeaders?: { entries?: Array<{ name: string; value: string }> } };
  const headers = Object.fromEntries((options.responseHeaders?.entries ?? []).map((e) => [e.name.toLowerCase(), e.value]));
  const status = options.responseCode ?? 200;
  switch (node.parameters.respondWith) {
    case 'text':
      return send(res, status, String(evaluate(node.parameters.responseBody, json) ?? ''), { 'content-type': 'text/plain; charset=utf-8', ...headers });
    case 'json': {
      const body = evaluate(node.parameters.responseBody, json);
      return send(res, status, typeof body === 'string' ? body : JSON.stringify(body), { ...JSON_TYPE, ...headers });
    }
    case 'redirect':
      return send(res, options.responseCode ?? 307, '', { location: String(evaluate(node.parameters.redirectURL, json)), ...headers });
    case 'noData':
      return send(res, status, '', headers);
    case 'allIncomingItems':
      return send(res, status, JSON.stringify([json]), { ...JSON_TYPE, ...headers });
    default: // firstIncomingItem
      return send(res, status, JSON.stringify(json), { ...JSON_TYPE, ...headers });
  }
}

/** Handles a request under /webhook/ or /webhook-test/; `rawPath` is what follows the prefix. */
export async function handleWebhook(
  ctx: WebhookContext,
  mode: WebhookMode,
  rawPath: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  rawBody: string,
  query: URLSearchParams,
): Promise<void> {
  const method = req.method ?? 'GET';
  const path = trimSlashes(safeDecode(rawPath));
  const onPath = registered(ctx, mode).filter((r) => r.path === path);
  if (onPath.length === 0) return notRegistered(res, method, path, mode);
  const reg = onPath.find((r) => r.methods.includes(method));
  if (!reg) return wrongMethod(res, method, [...new Set(onPath.flatMap((r) => r.methods))]);
  if (mode === 'test') ctx.armedTests.delete(reg.workflow.id); // one call per click on "Execute workflow"

  let body: unknown;
  try {
    body = parseBody(req, rawBody);
  } catch (error) {
    return sendJson(res, 422, { code: 422, message: 'Failed to parse request body', hint: (error as Error).message });
  }
  if (!authorized(ctx, reg.node, req, res)) return;

  const prefix = mode === 'production' ? 'webhook' : 'webhook-test';
  const queryObj = queryObject(query);
  ctx.calls.push({ mode, workflowId: reg.workflow.id, method, path, headers: req.headers, query: queryObj, body });
  // The Webhook node's output item: what lastNode / Respond nodes give back.
  const item: Record<string, unknown> = {
    headers: req.headers,
    params: {},
    query: queryObj,
    body,
    webhookUrl: `${ctx.baseUrl}/${prefix}/${path}`,
    executionMode: mode === 'production' ? 'production' : 'test',
  };

  const params = reg.node.parameters as { responseMode?: string; responseData?: string; options?: { responseData?: string; noResponseBody?: boolean } };
  const responseMode = params.responseMode ?? 'onReceived';
  if (responseMode === 'onReceived') {
    if (params.options?.noResponseBody || params.responseData === 'noData') return send(res, 200, '', {});
    const custom = params.responseData ?? params.options?.responseData;
    if (custom) return send(res, 200, custom, { 'content-type': 'text/html; charset=utf-8' });
    return sendJson(res, 200, { message: 'Workflow was started' });
  }

  let result: Awaited<ReturnType<typeof execute>>;
  try {
    result = await execute(reg, method, item, ctx.signal);
  } catch (error) {
    if (ctx.signal.aborted) return;
    if (error instanceof WorkflowError) return sendJson(res, 500, { message: 'Error in workflow' });
    throw error;
  }
  if (responseMode === 'responseNode') {
    // A workflow that never reaches its Respond node fails like any other run.
    if (!result.respond) return sendJson(res, 500, { message: 'Error in workflow' });
    return respondNodeAnswer(res, result.respond, result.json);
  }
  // lastNode
  if (params.responseData === 'noData') return send(res, 200, '', {});
  const answer = params.responseData === 'allEntries' ? [result.json] : result.json;
  return send(res, 200, JSON.stringify(answer), JSON_TYPE);
}
