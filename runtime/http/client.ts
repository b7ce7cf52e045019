// The ONE upstream HTTP client. Every provider request goes through here: keep-alive agents,
// timeouts, retries of idempotent methods only, the outbound guard (after DNS and on every redirect),
// a response size cap, and errors that never carry secrets.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import tls from 'node:tls';
import got, { type Got, type Method, type Response, RequestError } from 'got';
import type { SandboxLease, SandboxRouter } from '../sandbox/sandboxes.ts';
import { isSandboxHost } from '../../sandboxes/in-service.ts';
import type { Cancellation } from '../cancellation.ts';
import { ToolError } from '../tool-error.ts';
import { type OutboundTrace, attemptSpans } from '../tracing/outbound.ts';
import { type AllowList, BadHeaderError, OutboundRefusedError, checkOutboundHeaders, checkUrl, guardedLookup } from './guard.ts';

export interface UpstreamRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** JSON value to send; a string is sent as is (its content type must be in headers). */
  body?: unknown;
  timeoutMs?: number;
  /** Stops the request (got's cancel(): no AbortSignal needed, see runtime/cancellation.ts). */
  cancellation?: Cancellation;
  /** Allow got's retries (idempotent methods only); false for calls that must never repeat. */
  retry?: boolean;
  /** Follow redirects (each hop through the guard); false returns a 3xx answer as it is. Default true. */
  followRedirects?: boolean;
  /**
   * Set only for the accounts the service created as sandbox accounts: the owner whose own sandboxes a URL
   * under the sandbox domain reaches. Without it such a URL fails like any name that does not resolve.
   */
  sandboxOwner?: string;
  /** The call's trace: each attempt becomes a span and sends its traceparent (runtime/tracing/outbound.ts). */
  trace?: OutboundTrace;
  /** Answer with the body's bytes as they came (a Buffer), not parsed (a document that may be gzipped or YAML). */
  raw?: boolean;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON when the answer is JSON, else text; null when empty (a Buffer when the request asked for `raw`). */
  body: unknown;
}

export interface HttpClientOptions {
  /** Default timeout of one upstream request. */
  timeoutMs: number;
  maxResponseBytes: number;
  allow: AllowList;
  /** Retries of idempotent requests after a network error, 408, 429, 502, 503 or 504. */
  retries: number;
  /** Longest Retry-After we wait for ourselves; longer ones are reported to the caller. */
  maxRetryAfterMs: number;
  /** Extra certificate authorities (PEM) trusted besides Node's own list. */
  ca?: string;
  /** The service's own sandboxes (absent when SANDBOXES=off). */
  sandboxes?: SandboxRouter;
  /** Resolves host names (default: the system's resolver); the guard judges what it answers. */
  resolve?: LookupFunction;
}

export interface HttpClient {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): void;
}

const IDEMPOTENT: Method[] = ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'];
const REDIRECT_SAFE_HEADERS = new Set(['accept', 'accept-encoding', 'content-type', 'user-agent']);

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 256, scheduling: 'lifo' }),
    https: new https.Agent({ keepAlive: true, maxSockets: 256, scheduling: 'lifo', ...(options.ca ? { ca: [...tls.rootCertificates, options.ca] } : {}) }),
  };
  const client: Got = got.extend({
    // Unfrozen only until the cache options are emptied below.
    mutableDefaults: true,
    agent: agents,
    dnsLookup: guardedLookup(options.allow, options.resolve) as never,
    throwHttpErrors: false,
    responseType: 'buffer',
    followRedirect: true,
    maxRedirects: 5,
    retry: {
      limit: options.retries,
      methods: IDEMPOTENT,
      statusCodes: [408, 429, 502, 503, 504],
      maxRetryAfter: options.maxRetryAfterMs,
      backoffLimit: 2000,
    },
    hooks: {
      beforeRedirect: [
        (next, response) => {
          // A sandbox's answer may send the request elsewhere on that sandbox only.
          const sandboxHost = (next.context as { sandboxHost?: string }).sandboxHost;
          if (sandboxHost && (next.url as URL).hostname !== sandboxHost) {
            throw new OutboundRefusedError((next.url as URL).hostname, undefined, `a redirect from the sandbox at ${sandboxHost} may not leave it`);
          }
          // Literal-IP hosts never reach the DNS lookup: check each hop's URL too.
          checkUrl(next.url as URL, options.allow);
          // Credentials and caller headers never follow a redirect to another origin.
          if (new URL(response.url).origin !== (next.url as URL).origin) {
            for (const name of Object.keys(next.headers)) if (!REDIRECT_SAFE_HEADERS.has(name.toLowerCase())) delete next.headers[name];
          }
        },
      ],
    },
  });
  // Speed: got builds node's request options with a literal that starts by spreading its cache options, whose four
  // keys exist (set to undefined) by default: on Node 20 that literal takes V8's slow path, ~65 µs of every request
  // (npm run bench:profile, createNativeRequestOptions). With no keys it takes ~1 µs. They only matter with got's
  // `cache` option, which we never set; the setter replaces the object (an extend would merge into it).
  client.defaults.options.cacheOptions = {};
  client.defaults.options.freeze();

  // The provider got the request and answered it: the call is paid for, however large the answer.
  const tooLarge = () =>
    new ToolError(
      'response_too_large',
      `The provider's answer is larger than ${options.maxResponseBytes} bytes and was cut off; the provider received the request, so its credits are kept`,
      { refund: false },
    );

  /** One request (and its redirects) through the guarded client, or through a sandbox's own connection. */
  async function exchange(req: UpstreamRequest, sandbox: SandboxLease | undefined): Promise<UpstreamResponse> {
    // DELETE may carry a body (GitHub's removal of assignees or labels takes one); GET never does.
    const hasBody = req.body !== undefined && req.method !== 'GET';
    const attempts = req.trace && attemptSpans(req.trace, req.method);
    const promise = client(req.url, {
      method: req.method as Method,
      headers: req.headers,
      ...(hasBody ? (typeof req.body === 'string' ? { body: req.body } : { json: req.body }) : {}),
      timeout: { request: req.timeoutMs ?? options.timeoutMs },
      ...(req.retry === false ? { retry: { limit: 0 } } : {}),
      ...(req.followRedirects === false ? { followRedirect: false } : {}),
      ...(sandbox ? { agent: sandbox.agents, context: { sandboxHost: req.url.hostname } } : {}),
      ...(attempts ? { hooks: attempts.hooks } : {}),
    });
    // The request counts as received by the provider once all of it was handed to the network (its
    // 'finish'): a cancellation after that is paid for, since the provider may act on it.
    let sent = false;
    (promise as unknown as { on(event: 'request', fn: (request: http.ClientRequest) => void): void }).on('request', (request) =>
      request.once('finish', () => {
        sent = true;
      }),
    );
    let cut = false;
    const cutOff = () => {
      cut = true;
      promise.cancel();
    };
    // A declared length is checked once; only answers without one are watched while they stream.
    // got's promise forwards the request's 'response' event; its types only list the progress events.
    (promise as unknown as { on(event: 'response', fn: (res: { headers: Record<string, string | undefined> }) => void): void }).on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (declared > options.maxResponseBytes) cutOff();
      else if (!res.headers['content-length']) {
        promise.on('downloadProgress', (p) => {
          if (p.transferred > options.maxResponseBytes && !cut) cutOff();
        });
      }
    });
    const forget = req.cancellation?.onAbort(() => promise.cancel());
    let res: Response<Buffer>;
    try {
      res = (await promise) as unknown as Response<Buffer>;
    } catch (err) {
      attempts?.done(cut ? 'response_too_large' : err);
      if (cut) throw tooLarge();
      throw networkFailure(err, req, sent);
    } finally {
      forget?.();
    }
    attempts?.done();
    if (res.body.length > options.maxResponseBytes) {
      throw tooLarge();
    }
    return { status: res.statusCode, headers: res.headers, body: req.raw ? res.body : parseBody(res.body, res.headers['content-type']) };
  }

  return {
    async send(req) {
      // A sandbox connection's requests to a provider go to the owner's sandbox standing for it.
      const diverted = req.sandboxOwner !== undefined ? options.sandboxes?.divert(req.url) : undefined;
      if (diverted) req = Object.assign({}, req, { url: diverted });
      try {
        checkUrl(req.url, options.allow);
        checkOutboundHeaders(req.headers);
      } catch (err) {
        if (err instanceof BadHeaderError) throw new ToolError('invalid_header', err.message, { refund: true });
        throw networkFailure(err, req);
      }
      let sandbox: SandboxLease | undefined;
      if (req.sandboxOwner !== undefined && isSandboxHost(req.url.hostname)) {
        if (!options.sandboxes) {
          throw new ToolError('sandbox_unavailable', 'Sandboxes are turned off on this service (SANDBOXES=off): this sandbox account no longer works', {
            refund: true,
          });
        }
        sandbox = await options.sandboxes.lease(req.sandboxOwner, req.url.hostname, bodyBytes(req));
      }
      try {
        return await exchange(req, sandbox);
      } finally {
        sandbox?.release();
      }
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** The size of what a request sends as its body (0 for none). */
function bodyBytes(req: UpstreamRequest): number {
  if (req.body === undefined || req.method === 'GET' || req.method === 'DELETE') return 0;
  return Buffer.byteLength(typeof req.body === 'string' ? req.body : JSON.stringify(req.body));
}

/** JSON when it says or looks like JSON (some APIs mislabel), else text; null when empty. */
export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return null;
  const text = raw.toString('utf8');
  const looksJson = /json/i.test(contentType ?? '') || /^\s*[[{]/.test(text);
  if (looksJson) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** How a failure after the whole request was sent says why its credits are kept. */
export const KEPT_AFTER_SENDING = '; the provider received the request and may have acted on it, so its credits are kept';

/**
 * The client cancelled the call. Before the request was sent the credits go back; after, they are kept: the
 * provider got a request it may act on (a webhook runs its workflow whether or not anyone waits for the answer).
 */
export function cancelled(sent: boolean): ToolError {
  return sent
    ? new ToolError('cancelled', 'The call was cancelled after the provider received the request (it may have acted on it), so its credits are kept', {
        refund: false,
      })
    : new ToolError('cancelled', 'The call was cancelled before the request reached the provider', { refund: true });
}

/**
 * A failure with no answer (timeout, broken connection, cancellation) of a call whose earlier request the provider
 * already answered: the call reached the provider, so its credits are kept. Anything else is returned as it is.
 */
export function paidAfterAnswer(failure: ToolError): ToolError {
  if (!failure.refund || !NO_ANSWER.has(failure.code)) return failure;
  if (failure.code === 'cancelled') return cancelled(true);
  return new ToolError(failure.code, `${failure.message}; an earlier request of this call reached the provider, so its credits are kept`, {
    retryable: failure.retryable,
    providerStatus: failure.providerStatus,
    refund: false,
  });
}

const NO_ANSWER = new Set(['timeout', 'network_error', 'cancelled']);

/**
 * Maps transport failures to tool errors; the text names the host, never the full URL (it may hold secrets).
 * Paid means paid: once all of the request was handed to the network (`sent`), the provider may act on it, so
 * no answer (a timeout, whoever chose it, or a connection that broke) keeps the credits; before that they go back.
 */
function networkFailure(err: unknown, req: UpstreamRequest, sent = false): ToolError {
  const host = req.url.host;
  const cause = err instanceof RequestError ? (err.cause ?? err) : err;
  if (cause instanceof OutboundRefusedError || err instanceof OutboundRefusedError) {
    const refused = (cause instanceof OutboundRefusedError ? cause : err) as OutboundRefusedError;
    return new ToolError('outbound_refused', refused.message, { refund: true });
  }
  if (err instanceof RequestError) {
    if (err.name === 'TimeoutError' || err.code === 'ETIMEDOUT') {
      const seconds = (req.timeoutMs ?? 0) / 1000;
      const late = `The provider at ${host} did not answer in time${seconds ? ` (${Number(seconds.toFixed(1))} s)` : ''}`;
      return new ToolError('timeout', sent ? `${late}${KEPT_AFTER_SENDING}` : late, { retryable: true, refund: !sent });
    }
    if (err.name === 'CancelError' || err.code === 'ERR_CANCELED' || err.name === 'AbortError' || err.code === 'ABORT_ERR') return cancelled(sent);
    const code = err.code ?? 'network error';
    if (sent) {
      return new ToolError('network_error', `The connection to the provider at ${host} broke after the request was sent (${code})${KEPT_AFTER_SENDING}`, {
        retryable: true,
        refund: false,
      });
    }
    return new ToolError('network_error', `Could not reach the provider at ${host} (${code})`, { retryable: true });
  }
  return new ToolError('network_error', `Could not reach the provider at ${host}`, { retryable: true });
}
