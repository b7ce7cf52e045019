// The spans of an MCP request. One SERVER span per tools/call, `tools/call <tool>`, continuing the caller's
// trace (the request's `params._meta.traceparent`, else the HTTP `traceparent` header), with children for
// authentication, rate limit, charge, each provider request (outbound.ts) and the ledger record. Spans carry
// ids, names, outcomes, codes and counts: never a key, a token, an argument value or an error message (which
// may quote the provider or the arguments).
import type { IncomingHttpHeaders } from 'node:http';
import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace } from '@opentelemetry/api';
import type { AuthOutcome, Principal } from '../mcp/backend.ts';
import { type OutboundTrace, argumentSegments } from './outbound.ts';
import type { Tracing } from './tracing.ts';

/** What a call's span says of its end (also in its ledger record). */
export interface CallSettlement {
  callId: string;
  outcome: 'ok' | 'tool_error' | 'refunded' | 'rejected';
  code: string;
  charged: number;
  kept: number;
}

/** What the call pipeline sees of a call's trace; UNTRACED when tracing is off. */
export interface CallTrace {
  /** Runs `work` as a child span named `name`; `describe` adds attributes from its result. */
  step<T>(name: string, work: () => Promise<T>, describe?: (result: T) => Attributes): Promise<T>;
  settle(settlement: CallSettlement): void;
  /** For the provider requests of the call; `args` are the validated arguments, whose values no span shows. */
  outbound(args: Record<string, unknown>): OutboundTrace | undefined;
}

export const UNTRACED: CallTrace = {
  step: (_name, work) => work(),
  settle() {},
  outbound: () => undefined,
};

const getter: TextMapGetter<Record<string, unknown>> = {
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === 'string' || Array.isArray(value) ? (value as string | string[]) : undefined;
  },
  keys: (carrier) => Object.keys(carrier),
};

/** MCP tool names are at most 128 characters; a longer name from a client is cut there. */
const MAX_NAME = 128;

const REFUSALS: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 429: 'rate_limited' };

/** One POST /mcp: its authentication and rate limit are timed as they happen and become spans once the body says what was asked. */
export class RequestTrace {
  private readonly start = performance.now();
  private authEnd = 0;
  private limitEnd = 0;
  private allowed = true;
  private principal?: Principal;

  constructor(
    private readonly tracing: Tracing,
    private readonly serverId: string,
    private readonly headers: IncomingHttpHeaders,
  ) {}

  authenticated(outcome: AuthOutcome): void {
    this.authEnd = performance.now();
    if (outcome.ok) this.principal = outcome.principal;
  }

  limited(allowed: boolean): void {
    this.limitEnd = performance.now();
    this.allowed = allowed;
  }

  /** A request refused before its body was read (401, 403, 429): its method is unknown, so one span for the request. */
  refused(status: 401 | 403 | 429): void {
    const span = this.tracing.tracer.startSpan(
      'POST /mcp',
      {
        kind: SpanKind.SERVER,
        startTime: this.start,
        attributes: { 'http.response.status_code': status, 'toolserver.outcome': REFUSALS[status], ...this.principalAttributes() },
      },
      this.parent(undefined),
    );
    this.phases(trace.setSpan(ROOT_CONTEXT, span));
    span.end(performance.now());
  }

  /** The span of one tools/call of this request; the request's authentication and rate limit are its first children. */
  call(name: string, meta: unknown, protocolVersion: string): SpanCallTrace {
    const tool = name.slice(0, MAX_NAME);
    const span = this.tracing.tracer.startSpan(
      `tools/call ${tool}`,
      {
        kind: SpanKind.SERVER,
        startTime: this.start,
        attributes: { 'mcp.method.name': 'tools/call', 'mcp.protocol.version': protocolVersion, 'toolserver.tool': tool, ...this.principalAttributes() },
      },
      this.parent(meta),
    );
    const context = trace.setSpan(ROOT_CONTEXT, span);
    this.phases(context);
    return new SpanCallTrace(this.tracing, span, context);
  }

  private principalAttributes(): Attributes {
    const p = this.principal;
    return { 'toolserver.server.id': this.serverId, ...(p ? { 'toolserver.key.id': p.keyId, 'toolserver.owner.id': p.ownerId } : {}) };
  }

  private phases(context: Context): void {
    const { tracer } = this.tracing;
    tracer
      .startSpan('authenticate', { startTime: this.start, attributes: { 'toolserver.authenticated': this.principal !== undefined } }, context)
      .end(this.authEnd);
    if (this.limitEnd) {
      tracer.startSpan('rate limit', { startTime: this.authEnd, attributes: { 'toolserver.rate_limit.allowed': this.allowed } }, context).end(this.limitEnd);
    }
  }

  /** The caller's trace: the MCP request's `_meta` (traceparent, tracestate) when it has one, else the HTTP headers. */
  private parent(meta: unknown): Context {
    const { propagator } = this.tracing;
    if (meta !== null && typeof meta === 'object' && typeof (meta as Record<string, unknown>).traceparent === 'string') {
      const context = propagator.extract(ROOT_CONTEXT, meta as Record<string, unknown>, getter);
      if (trace.getSpanContext(context)) return context;
    }
    return propagator.extract(ROOT_CONTEXT, this.headers as Record<string, unknown>, getter);
  }
}

export class SpanCallTrace implements CallTrace {
  private settled = false;

  constructor(
    private readonly tracing: Tracing,
    private readonly span: Span,
    private readonly context: Context,
  ) {}

  async step<T>(name: string, work: () => Promise<T>, describe?: (result: T) => Attributes): Promise<T> {
    const span = this.tracing.tracer.startSpan(name, undefined, this.context);
    try {
      const result = await work();
      if (describe) span.setAttributes(describe(result));
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
      throw err;
    } finally {
      span.end();
    }
  }

  settle(s: CallSettlement): void {
    this.settled = true;
    this.span.setAttributes({
      'toolserver.call.id': s.callId,
      'toolserver.outcome': s.outcome,
      'toolserver.error.code': s.code,
      'toolserver.credits.charged': s.charged,
      'toolserver.credits.kept': s.kept,
    });
    if (s.outcome !== 'ok') this.span.setStatus({ code: SpanStatusCode.ERROR, message: s.code });
  }

  /** A call refused before the pipeline (unknown tool, malformed arguments): no ledger record, nothing charged. */
  refuse(code: string): void {
    this.settled = true;
    this.span.setAttributes({ 'toolserver.outcome': 'rejected', 'toolserver.error.code': code, 'toolserver.credits.charged': 0, 'toolserver.credits.kept': 0 });
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  }

  outbound(args: Record<string, unknown>): OutboundTrace {
    return { tracer: this.tracing.tracer, propagator: this.tracing.propagator, parent: this.context, hidden: argumentSegments(args) };
  }

  /** Ends the span; a call that ended without a settlement failed inside the service. */
  end(): void {
    if (!this.settled) {
      this.span.setAttributes({ 'toolserver.outcome': 'error', 'toolserver.error.code': 'internal_error' });
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: 'internal_error' });
    }
    this.span.end(performance.now());
  }
}
