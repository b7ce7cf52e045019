// POST /mcp/:serverId — stateless Streamable HTTP, written by hand (see docs/mcp.md for why and for
// the behaviour per protocol revision). Order of checks: origin, content type, accept, authentication and
// authorization, rate limit, body size, JSON parse, protocol version, dispatch.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import { Cancellation } from '../cancellation.ts';
import { readBody, BodyTooLargeError } from '../http/body.ts';
import { MAX_ARGUMENT_DEPTH, nestedDeeperThan } from '../json-depth.ts';
import type { Logger } from '../log.ts';
import { ACCOUNT_NOT_CONNECTED, ToolError } from '../tool-error.ts';
import { RequestTrace, type SpanCallTrace } from '../tracing/spans.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { McpBackend, Principal, RateOutcome, Unavailable } from './backend.ts';
import {
  type Classified,
  ErrorCode,
  type JsonRpcRequest,
  type JsonRpcResponse,
  LATEST_LEGACY_VERSION,
  LEGACY_VERSIONS,
  MODERN_VERSIONS,
  RpcError,
  classify,
  rpcError,
} from './protocol.ts';
import { serialize, stringify } from './json-text.ts';
import { callResult, describedTools, errorResult } from './tool-wire.ts';
import { type Negotiated, META, modernResultFields, negotiate } from './negotiation.ts';

export interface McpEndpointOptions {
  backend: McpBackend;
  logger: Logger;
  maxBodyBytes: number;
  /** Browser origins allowed to call (exact origins, or '*'). */
  allowedOrigins: string[];
  pageSize: number;
  /** How long modern clients may cache tools/list. */
  toolsTtlMs: number;
  serverInfo: { name: string; title: string; version: string };
  /** Said to clients at initialize (read at each answer: it may name the providers of a reloaded catalog). */
  instructions?: () => string;
  /** The protected resource metadata URL of a server, named in every 401 (RFC 9728 section 5.1). */
  resourceMetadataUrl: (serverId: string) => string;
  /** The OAuth scope a client should ask for, named in every 401. */
  scope: string;
  /** Spans of tools/call requests (runtime/tracing/spans.ts); undefined when tracing is off. */
  tracing?: Tracing;
  /** Whether an error means the service cannot serve now (answered 503 with Retry-After), and what to say. */
  unavailable?: (err: unknown) => Unavailable | undefined;
}

const AUTH_BODIES = {
  401: { error: 'Unauthorized', message: 'Invalid or expired API key' },
  403: { error: 'Forbidden', message: 'Access denied to this resource' },
  429: { error: 'Rate Limit Exceeded', message: 'Too many requests. Please try again later.' },
} as const;

/** What one HTTP request is about, once its headers have been read. */
interface Exchange extends Negotiated {
  principal: Principal;
  /** The client accepts an SSE answer (needed for progress notifications). */
  acceptsSse: boolean;
  /** The client declared URL-mode elicitation (in this request's _meta, or at initialize: see URL_ELICITING_SESSION). */
  elicitsUrl: boolean;
  ctx: Context;
  trace?: RequestTrace;
  /** Set when a request of the exchange found the service unavailable: the HTTP answer is 503. */
  unavailable?: Unavailable;
}

/** Methods of each era; anything else is -32601 (HTTP 404 in the modern era). */
const LEGACY_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call']);
const MODERN_METHODS = new Set(['server/discover', 'tools/list', 'tools/call']);

export function createMcpEndpoint(opts: McpEndpointOptions) {
  const { backend } = opts;
  /** tools/call requests in progress, by key and JSON-RPC id, so notifications/cancelled can stop them. */
  const inflight = new Map<string, Cancellation>();
  const inflightKey = (principal: Principal, id: unknown) => `${principal.keyId} ${principal.serverId} ${JSON.stringify(id)}`;

  /** notifications/cancelled names an earlier request of the same key; anything else needs no action. */
  function notified(exchange: Exchange, msg: Extract<Classified, { kind: 'notification' }>): void {
    if (msg.method !== 'notifications/cancelled') return;
    inflight.get(inflightKey(exchange.principal, msg.params?.requestId))?.abort();
  }

  return async function mcpEndpoint(ctx: Context): Promise<void> {
    try {
      await exchangeOf(ctx);
    } catch (err) {
      // Before any JSON-RPC request was read (authentication reads the store too).
      const unavailable = opts.unavailable?.(err);
      if (!unavailable || !ctx.respond) throw err;
      sendUnavailable(ctx, unavailable, rpcError(null, ErrorCode.Unavailable, unavailable.message, { retry_after_seconds: unavailable.retryAfterSeconds }));
    }
  };

  async function exchangeOf(ctx: Context): Promise<void> {
    const origin = header(ctx, 'origin');
    if (origin && !originAllowed(origin, ctx, opts.allowedOrigins)) {
      return sendHttpError(ctx, 403, { error: 'Forbidden', message: `Origin ${origin} is not allowed` });
    }
    // The exact type (what every client sends) is taken without parsing it; anything else is judged by type-is.
    if (header(ctx, 'content-type') !== 'application/json' && !ctx.is('application/json')) {
      return sendHttpError(ctx, 415, { error: 'Unsupported Media Type', message: 'Content-Type must be application/json' });
    }
    const accept = header(ctx, 'accept');
    if (accept && !/(application\/json|text\/event-stream|\*\/\*|application\/\*)/i.test(accept)) {
      return sendHttpError(ctx, 406, { error: 'Not Acceptable', message: 'Accept must allow application/json or text/event-stream' });
    }

    const trace = opts.tracing && new RequestTrace(opts.tracing, ctx.params.serverId, ctx.req.headers);
    const endUser = ctx.req.headers['x-end-user'] as string | undefined; // an empty header names no one, yet is not absent
    const auth = await backend.authenticate(ctx.params.serverId, header(ctx, 'authorization') || undefined, { endUser, address: ctx.ip });
    trace?.authenticated(auth);
    if (!auth.ok) {
      trace?.refused(auth.status);
      if (auth.status === 401) ctx.set('WWW-Authenticate', bearerChallenge(opts.resourceMetadataUrl(ctx.params.serverId), opts.scope, auth.tokenError));
      return sendHttpError(ctx, auth.status, auth.message ? Object.assign({}, AUTH_BODIES[auth.status], { message: auth.message }) : AUTH_BODIES[auth.status]);
    }
    const principal = auth.principal;
    ctx.state.keyId = principal.keyId;
    // A plain value (windows answered from memory) is not awaited: each await is a turn of the microtask queue.
    const limited = backend.rateLimit(principal);
    const rate = limited instanceof Promise ? await limited : limited;
    trace?.limited(rate.allowed);
    ctx.set(rate.headers);
    if (!rate.allowed) {
      trace?.refused(429);
      return sendRateLimited(ctx, rate);
    }

    let payload: unknown;
    try {
      const body = readBody(ctx.req, opts.maxBodyBytes);
      payload = JSON.parse(typeof body === 'string' ? body : await body);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        return sendHttpError(ctx, 413, { error: 'Payload Too Large', message: `The request body is larger than ${opts.maxBodyBytes} bytes` });
      }
      return sendJson(ctx, 400, rpcError(null, ErrorCode.ParseError, `Parse error: ${(err as Error).message}`));
    }

    let negotiated: Negotiated;
    try {
      negotiated = negotiate(
        {
          version: header(ctx, 'mcp-protocol-version') || undefined,
          method: header(ctx, 'mcp-method') || undefined,
          name: header(ctx, 'mcp-name') || undefined,
        },
        payload,
      );
    } catch (err) {
      if (!(err instanceof RpcError)) throw err;
      const id = (payload as { id?: unknown } | null)?.id;
      return sendJson(ctx, err.httpStatus, rpcError(typeof id === 'string' || typeof id === 'number' ? id : null, err.code, err.message, err.data));
    }
    const exchange: Exchange = {
      version: negotiated.version,
      modern: negotiated.modern,
      principal,
      acceptsSse: /text\/event-stream/i.test(accept),
      elicitsUrl: negotiated.modern ? declaresUrlElicitation(payload) : header(ctx, 'mcp-session-id').startsWith(URL_ELICITING_SESSION),
      ctx,
      trace,
    };

    if (Array.isArray(payload)) return handleBatch(exchange, payload);
    const msg = classify(payload);
    if (msg.kind === 'invalid') return sendJson(ctx, 400, rpcError(msg.id, ErrorCode.InvalidRequest, `Invalid request: ${msg.reason}`));
    if (msg.kind !== 'request') {
      if (msg.kind === 'notification') notified(exchange, msg);
      return accepted(ctx);
    }
    if (exchange.acceptsSse && msg.message.method === 'tools/call' && progressToken(msg.message) !== undefined) {
      return streamCall(exchange, msg.message);
    }
    const response = await answer(exchange, msg.message);
    if (exchange.unavailable) return sendUnavailable(ctx, exchange.unavailable, response);
    const status =
      'error' in response && exchange.modern && response.error.code === ErrorCode.MethodNotFound && !MODERN_METHODS.has(msg.message.method) ? 404 : 200;
    return sendJson(ctx, status, response);
  }

  async function handleBatch(exchange: Exchange, items: unknown[]): Promise<void> {
    const { ctx } = exchange;
    if (items.length === 0) return sendJson(ctx, 400, rpcError(null, ErrorCode.InvalidRequest, 'Invalid request: empty batch'));
    // The POST counted as one request; every further item of the batch counts too, invalid ones included.
    const extra = items.length - 1;
    if (extra > 0) {
      const rate = await backend.rateLimit(exchange.principal, extra);
      ctx.set(rate.headers);
      if (!rate.allowed) return sendRateLimited(ctx, rate);
    }
    const answers = await Promise.all(
      items.map(async (item): Promise<JsonRpcResponse | undefined> => {
        const msg: Classified = classify(item);
        if (msg.kind === 'invalid') return rpcError(msg.id, ErrorCode.InvalidRequest, `Invalid request: ${msg.reason}`);
        if (msg.kind === 'notification') notified(exchange, msg);
        if (msg.kind !== 'request') return undefined;
        return answer(exchange, msg.message);
      }),
    );
    const responses = answers.filter((a): a is JsonRpcResponse => a !== undefined);
    if (responses.length === 0) {
      return accepted(ctx);
    }
    if (exchange.unavailable) return sendUnavailable(ctx, exchange.unavailable, responses);
    sendJson(ctx, 200, responses);
  }

  /** Answers one request with a JSON-RPC result or error. */
  async function answer(exchange: Exchange, req: JsonRpcRequest, progress?: (message: string) => void): Promise<JsonRpcResponse> {
    try {
      const result = await dispatch(exchange, req, progress);
      return {
        jsonrpc: '2.0',
        id: req.id,
        // A result that asks for input first says so in its own resultType.
        result: exchange.modern
          ? Object.assign({}, result, modernResultFields(req.method, opts.serverInfo, opts.toolsTtlMs), pick(result, 'resultType'))
          : result,
      };
    } catch (err) {
      if (err instanceof RpcError) return rpcError(req.id, err.code, err.message, err.data);
      const unavailable = opts.unavailable?.(err);
      if (unavailable) {
        exchange.unavailable = unavailable;
        return unavailableError(req, unavailable);
      }
      opts.logger.error({ err, method: req.method }, 'MCP request failed');
      return rpcError(req.id, ErrorCode.InternalError, 'Internal error');
    }
  }

  async function dispatch(exchange: Exchange, req: JsonRpcRequest, progress?: (message: string) => void): Promise<Record<string, unknown>> {
    const params = req.params ?? {};
    if (!(exchange.modern ? MODERN_METHODS : LEGACY_METHODS).has(req.method)) {
      throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${req.method}${exchange.modern ? ` (protocol version ${exchange.version})` : ''}`);
    }
    switch (req.method) {
      case 'initialize': {
        // Never answer a modern version here: initialize-era clients cannot speak it.
        const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
        const version = (LEGACY_VERSIONS as readonly string[]).includes(asked) ? asked : LATEST_LEGACY_VERSION;
        // No sessions are kept: the session id is how the client's later requests say it can open a URL.
        const elicitation = (params.capabilities as { elicitation?: { url?: unknown } } | undefined)?.elicitation;
        if (version >= '2025-11-25' && elicitation?.url !== undefined) exchange.ctx.set('Mcp-Session-Id', `${URL_ELICITING_SESSION}${randomUUID()}`);
        return {
          protocolVersion: version,
          capabilities: CAPABILITIES,
          serverInfo: opts.serverInfo,
          ...(opts.instructions ? { instructions: opts.instructions() } : {}),
        };
      }
      case 'server/discover':
        return { supportedVersions: [...MODERN_VERSIONS], capabilities: CAPABILITIES, ...(opts.instructions ? { instructions: opts.instructions() } : {}) };
      case 'tools/list':
        return listTools(exchange, params);
      case 'tools/call':
        return callTool(exchange, req.id, params, progress);
      default: // ping
        return {};
    }
  }

  async function listTools(exchange: Exchange, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const tools = await backend.listTools(exchange.principal);
    const offset = params.cursor === undefined ? 0 : decodeCursor(params.cursor, tools.length);
    const next = Math.min(offset + opts.pageSize, tools.length);
    return {
      tools: describedTools(tools, offset, next, exchange.version),
      ...(next < tools.length ? { nextCursor: encodeCursor(next) } : {}),
    };
  }

  async function callTool(
    exchange: Exchange,
    id: JsonRpcRequest['id'],
    params: Record<string, unknown>,
    progress?: (message: string) => void,
  ): Promise<Record<string, unknown>> {
    const name = params.name;
    if (typeof name !== 'string' || name === '') throw new RpcError(ErrorCode.InvalidParams, 'Invalid params: "name" must be the name of a tool');
    // A retry after input (2026-07-28) is accepted only with the state this server gave this caller for this call.
    if (exchange.modern && params.requestState !== undefined) {
      const problem = await backend.openRequestState(exchange.principal, 'tools/call', params, params.requestState);
      if (problem) throw new RpcError(ErrorCode.InvalidParams, `Invalid params: "requestState" ${problem}`);
    }
    // The person declined or cancelled the input asked for: the call ends as a tool error, not another request.
    const responses = exchange.modern && isObject(params.inputResponses) ? Object.values(params.inputResponses) : [];
    const declined = responses.some((r) => !isObject(r) || r.action !== 'accept');
    const trace = exchange.trace?.call(name, params._meta, exchange.version);
    if (!trace) return runTool(exchange, id, name, params.arguments, declined, progress);
    try {
      return await runTool(exchange, id, name, params.arguments, declined, progress, trace);
    } finally {
      trace?.end();
    }
  }

  async function runTool(
    exchange: Exchange,
    id: JsonRpcRequest['id'],
    name: string,
    args: unknown,
    declined: boolean,
    progress?: (message: string) => void,
    trace?: SpanCallTrace,
  ): Promise<Record<string, unknown>> {
    const refuse = (error: ToolError) => {
      trace?.refuse(error.code);
      return errorResult(error, exchange.version);
    };
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
      // 2025-11-25 and later: input validation errors are tool results, so the model can correct itself.
      return refuse(new ToolError('invalid_arguments', 'Invalid arguments: "arguments" must be an object'));
    }
    // Checked before anything else (validation, charge, templates): deep values exhaust recursive code.
    if (args !== undefined && nestedDeeperThan(args, MAX_ARGUMENT_DEPTH)) {
      return refuse(new ToolError('invalid_arguments', `Invalid arguments: values are nested more than ${MAX_ARGUMENT_DEPTH} levels deep (the limit)`));
    }
    // The upstream call stops when the client goes away or cancels the request.
    const cancellation = new Cancellation();
    const res = exchange.ctx.res;
    const abort = () => {
      if (!res.writableFinished) cancellation.abort();
    };
    res.once('close', abort);
    const key = inflightKey(exchange.principal, id);
    inflight.set(key, cancellation);
    try {
      const outcome = await backend.callTool(exchange.principal, name, args ?? {}, { cancellation, progress: progress ?? (() => {}), trace });
      if (!outcome) {
        trace?.refuse('unknown_tool');
        throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      }
      exchange.ctx.state.tool = name;
      if (!outcome.ok && outcome.error.code === ACCOUNT_NOT_CONNECTED && !declined) return askToConnect(exchange, outcome.error, { name, arguments: args });
      return callResult(outcome, exchange.version);
    } finally {
      res.off('close', abort);
      if (inflight.get(key) === cancellation) inflight.delete(key);
    }
  }

  /**
   * The caller has no account of the tool's provider: a client that can open a URL is asked to open the connect
   * page (2026-07-28: an input_required result whose retry carries the requestState; 2025-11-25: error -32042);
   * any other gets the tool error, whose text carries the link.
   */
  async function askToConnect(exchange: Exchange, error: ToolError, params: { name: string; arguments: unknown }): Promise<Record<string, unknown>> {
    const url = String(error.details?.connect_url);
    if (!exchange.elicitsUrl) return errorResult(error, exchange.version);
    const message = error.message.replace(/: open \S+ to connect it, then/, ': connect it on the page that opens, then');
    if (exchange.modern) {
      return {
        resultType: 'input_required',
        inputRequests: { [`connect_${String(error.details?.provider)}`]: { method: 'elicitation/create', params: { mode: 'url', url, message } } },
        requestState: await backend.sealRequestState(exchange.principal, 'tools/call', params),
      };
    }
    if (exchange.version >= '2025-11-25')
      throw new RpcError(ErrorCode.UrlElicitationRequired, error.message, 200, { elicitations: [{ mode: 'url', elicitationId: randomUUID(), url, message }] });
    return errorResult(error, exchange.version);
  }

  /** tools/call with a progress token and an SSE-accepting client: progress events, then the answer. */
  async function streamCall(exchange: Exchange, req: JsonRpcRequest): Promise<void> {
    const { ctx } = exchange;
    const token = progressToken(req);
    ctx.respond = false;
    const res: ServerResponse = ctx.res;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let progress = 0;
    const send = (message: unknown) => {
      if (!res.writableEnded) res.write(`event: message\ndata: ${stringify(message)}\n\n`);
    };
    const notify = (message: string) =>
      send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } });
    // Long waits (webhooks, multi-step tools) keep reporting so clients can show life and reset timeouts.
    const heartbeat = setInterval(() => notify('waiting for the provider'), 5000);
    try {
      notify('started');
      send(await answer(exchange, req, notify));
    } finally {
      clearInterval(heartbeat);
      res.end();
    }
  }
}

/** The start of the session id given to a client that declared URL elicitation at initialize (it is no credential). */
const URL_ELICITING_SESSION = 'url-elicitation.';

/** Whether a 2026-07-28 request's _meta declares URL-mode elicitation among the client's capabilities. */
function declaresUrlElicitation(payload: unknown): boolean {
  const meta = (payload as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  const capabilities = meta?.[META.clientCapabilities] as { elicitation?: { url?: unknown } } | undefined;
  return capabilities?.elicitation?.url !== undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const pick = (o: Record<string, unknown>, key: string) => (o[key] === undefined ? {} : { [key]: o[key] });

/**
 * The JSON-RPC error of a request the service cannot serve now. A tools/call says whether it reached its
 * provider: one that did may have acted, and is not to be repeated blindly.
 */
function unavailableError(req: JsonRpcRequest, unavailable: Unavailable): JsonRpcResponse {
  const data: Record<string, unknown> = { retry_after_seconds: unavailable.retryAfterSeconds };
  if (req.method !== 'tools/call') return rpcError(req.id, ErrorCode.Unavailable, unavailable.message, data);
  data.provider_reached = unavailable.providerReached;
  const message = unavailable.providerReached ? unavailable.message : `${unavailable.message} The tool was not run and keeps no credits.`;
  return rpcError(req.id, ErrorCode.Unavailable, message, data);
}

/** HTTP 503 with Retry-After, the JSON-RPC answer in the body (an SSE answer has its status already). */
function sendUnavailable(ctx: Context, unavailable: Unavailable, body: unknown): void {
  ctx.set('Retry-After', String(unavailable.retryAfterSeconds));
  sendJson(ctx, 503, body);
}

/** Tools only; the list does not change during a connection, so no listChanged notifications. */
const CAPABILITIES = { tools: { listChanged: false } };

function progressToken(req: JsonRpcRequest): string | number | undefined {
  const meta = req.params?._meta as Record<string, unknown> | undefined;
  const token = meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

function decodeCursor(cursor: unknown, total: number): number {
  if (typeof cursor === 'string') {
    try {
      const { o } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o: unknown };
      if (typeof o === 'number' && Number.isInteger(o) && o >= 0 && o <= total) return o;
    } catch {
      // fall through
    }
  }
  throw new RpcError(ErrorCode.InvalidParams, 'Invalid params: unknown or expired cursor');
}

function originAllowed(origin: string, ctx: Context, allowed: string[]): boolean {
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  // Same origin as the request itself (a dashboard served by this service).
  return origin === `${ctx.protocol}://${ctx.host}`;
}

/** 202 with an empty body (Koa would otherwise write the status text). */
function accepted(ctx: Context): void {
  ctx.body = null;
  ctx.status = 202;
}

/**
 * RFC 6750 section 3 with RFC 9728's resource_metadata, from which an OAuth client discovers how to sign in.
 * An error code only when an OAuth token was presented and refused (a request without credentials gets none).
 */
function bearerChallenge(metadataUrl: string, scope: string, tokenError?: string): string {
  const quoted = (v: string) => `"${v.replace(/["\\]/g, '')}"`;
  const parts = [`resource_metadata=${quoted(metadataUrl)}`, `scope=${quoted(scope)}`];
  if (tokenError) parts.push('error="invalid_token"', `error_description=${quoted(tokenError)}`);
  return `Bearer ${parts.join(', ')}`;
}

/**
 * A request header, '' when absent: ctx.get() without its two delegations (it runs for eight headers of every call).
 * `name` is lower case and not set-cookie, so node gives one string.
 */
function header(ctx: Context, name: string): string {
  return (ctx.req.headers[name] as string | undefined) ?? '';
}

export function sendJson(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = serialize(body);
}

function sendHttpError(ctx: Context, status: number, body: { error: string; message: string; limit?: string }): void {
  sendJson(ctx, status, body);
}

/** The spec's 429 body, plus which limit refused when it is not the key's own (its owner's across all keys). */
function sendRateLimited(ctx: Context, rate: RateOutcome): void {
  sendHttpError(ctx, 429, rate.limit ? Object.assign({}, AUTH_BODIES[429], { limit: rate.limit }) : AUTH_BODIES[429]);
}
