// Spans of provider requests: one CLIENT span per attempt (a retry or a redirect hop is a new attempt), each
// attempt sending its own traceparent so that the provider's spans join the call's trace. Hooked into got by
// the one HTTP client (runtime/http/client.ts) only when the call is traced.
import { type Context, type Span, SpanKind, SpanStatusCode, type TextMapPropagator, type Tracer, trace } from '@opentelemetry/api';
import type { Hooks } from 'got';

/** What the HTTP client needs to trace the provider requests of one call. */
export interface OutboundTrace {
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** The call's span. */
  parent: Context;
  /** Path segments never shown in a span: the call's argument values. */
  hidden: ReadonlySet<string>;
}

export interface AttemptSpans {
  hooks: Partial<Hooks>;
  /** The request is over: ends the last attempt's span if got did not (a failure without an answer, a cut-off answer). */
  done(error?: unknown): void;
}

export function attemptSpans(t: OutboundTrace, method: string): AttemptSpans {
  let current: Span | undefined;
  let attempt = 0;
  const close = (status: number | undefined, error?: unknown) => {
    if (!current) return;
    if (status !== undefined) current.setAttribute('http.response.status_code', status);
    // A client span is an error from 400 on (OpenTelemetry's HTTP conventions), and when no answer came.
    const errorType = status !== undefined ? (status >= 400 ? String(status) : undefined) : error === undefined ? undefined : errorTypeOf(error);
    if (errorType) {
      current.setAttribute('error.type', errorType);
      current.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    }
    current.end();
    current = undefined;
  };
  return {
    hooks: {
      beforeRequest: [
        (options) => {
          close(undefined);
          const url = options.url instanceof URL ? options.url : new URL(String(options.url));
          current = t.tracer.startSpan(
            method,
            {
              kind: SpanKind.CLIENT,
              attributes: {
                'http.request.method': method,
                'url.full': traceUrl(url, t.hidden),
                'server.address': url.hostname,
                'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
                ...(attempt > 0 ? { 'http.request.resend_count': attempt } : {}),
              },
            },
            t.parent,
          );
          attempt++;
          t.propagator.inject(trace.setSpan(t.parent, current), options.headers, {
            set: (headers, name, value) => ((headers as Record<string, string>)[name] = value),
          });
        },
      ],
      beforeRedirect: [(_next, response) => close(response.statusCode)],
      afterResponse: [
        (response) => {
          close(response.statusCode);
          return response;
        },
      ],
      beforeRetry: [(error) => close(undefined, error)],
    },
    done: (error) => close(undefined, error),
  };
}

/** Segments that name the API's resources: words and short version numbers (`v1`, `3`). */
const PLAIN_SEGMENT = /^(?:v?\d{1,2}|[A-Za-z_.~-]+)$/;

/**
 * The URL as a span shows it: scheme, host and path, never credentials (user info) nor the query; a path
 * segment that carries an argument value or looks like an identifier (anything but a word or a short
 * version number) is shown as `{}`.
 */
export function traceUrl(url: URL, hidden: ReadonlySet<string>): string {
  const path = url.pathname
    .split('/')
    .map((segment) => {
      if (segment === '') return segment;
      let plain: string;
      try {
        plain = decodeURIComponent(segment);
      } catch {
        return '{}';
      }
      return PLAIN_SEGMENT.test(plain) && !hidden.has(plain) ? segment : '{}';
    })
    .join('/');
  return `${url.protocol}//${url.host}${path}`;
}

/** Every string and number among the arguments, and each `/`-separated piece of the strings (a path given as an argument). */
export function argumentSegments(args: Record<string, unknown>): Set<string> {
  const out = new Set<string>();
  const stack: unknown[] = [args];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === 'string') {
      out.add(value);
      if (value.includes('/')) for (const piece of value.split('/')) if (piece) out.add(piece);
    } else if (typeof value === 'number') out.add(String(value));
    else if (value !== null && typeof value === 'object') for (const child of Object.values(value)) stack.push(child);
  }
  return out;
}

/** A short, secret-free name of a failure: the system's error code (ECONNREFUSED, ETIMEDOUT) or the error's class. */
function errorTypeOf(error: unknown): string {
  if (typeof error === 'string') return error;
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'error';
}
