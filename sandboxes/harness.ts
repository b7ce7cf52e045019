// Shared plumbing for the in-process provider sandboxes: listen on loopback (or on a unix socket for the
// service's own sandboxes), read bodies.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RunningSandbox {
  /** Base URL, e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  close(): Promise<void>;
}

/**
 * A unix socket to listen on instead of a TCP port, and the URL the sandbox calls itself in its answers
 * (self links, webhook URLs): the service serves its own sandboxes this way, under reserved host names.
 */
export interface SocketAddress {
  path: string;
  url: string;
}

/** What every sandbox's options share: where it listens, and whether it records the requests it sees. */
export interface ListenOptions {
  /** Loopback port (random unless given); ignored with `socket`. */
  port?: number;
  socket?: SocketAddress;
  /** Keep every request in `requests` (default true; tests assert on them). A long-lived sandbox turns it off. */
  record?: boolean;
}

/** `requests.push` unless recording is off. */
export function recorder(requests: RecordedRequest[], options: ListenOptions): (request: RecordedRequest) => void {
  return options.record === false ? () => undefined : (request) => void requests.push(request);
}

/** Listens on 127.0.0.1 (random port unless given) and tracks sockets so close() never hangs. */
export function listenOnLoopback(handler: http.RequestListener, port = 0): Promise<RunningSandbox> {
  return listen(handler, { port });
}

/** Listens where the options say: a unix socket, else 127.0.0.1 (random port unless given). */
export async function listen(handler: http.RequestListener, options: ListenOptions): Promise<RunningSandbox> {
  const server = http.createServer(handler);
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (options.socket) server.listen(options.socket.path, () => resolve());
    else server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    url: options.socket ? options.socket.url : `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Reads the whole request body as text. */
export async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Sends a JSON answer with the given status and extra headers. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** What a sandbox saw: tests assert on it (for example "no upstream call was made"). */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Came through a provider's API gateway rather than the site (Jira's /ex/jira/<cloudId>). */
  gateway?: boolean;
}

/**
 * A scripted failure: the next matching request(s) get this answer instead of the normal one
 * (provider 429 with Retry-After, 503, a slow answer...). Used to test retries and refunds.
 */
export interface Fault {
  method?: string;
  /** Applies when the request path starts with this. */
  pathPrefix?: string;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (timeouts). */
  delayMs?: number;
  /** How many requests it applies to (default 1). */
  times?: number;
}

/** Finds and consumes the first fault matching the request, if any. */
export function takeFault(faults: Fault[], method: string, path: string): Fault | undefined {
  const i = faults.findIndex((f) => (!f.method || f.method === method) && (!f.pathPrefix || path.startsWith(f.pathPrefix)));
  if (i < 0) return undefined;
  const fault = faults[i];
  fault.times = (fault.times ?? 1) - 1;
  if (fault.times <= 0) faults.splice(i, 1);
  return fault;
}

/** Answers with a fault: JSON for objects, text/plain for strings, after its delay. */
export async function sendFault(res: http.ServerResponse, fault: Fault): Promise<void> {
  if (fault.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
  if (res.destroyed) return;
  if (typeof fault.body === 'string') {
    res.writeHead(fault.status, { 'content-type': 'text/plain;charset=UTF-8', ...fault.headers });
    res.end(fault.body);
  } else if (fault.body === undefined) {
    res.writeHead(fault.status, fault.headers);
    res.end();
  } else {
    sendJson(res, fault.status, fault.body, fault.headers);
  }
}
