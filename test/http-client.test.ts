// The one upstream client against real loopback servers: retries only where allowed, the size cap,
// timeouts, and no credentials following a redirect to another origin.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../runtime/http/client.ts';
import { parseAllowList } from '../runtime/http/guard.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

async function listen(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen[]) => void) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    handler(req, res, seen);
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  return { server, seen, url: `http://${host}:${(server.address() as AddressInfo).port}` };
}

const client = createHttpClient({ timeoutMs: 2000, maxResponseBytes: 1000, allow: parseAllowList('loopback'), retries: 2, maxRetryAfterMs: 100 });
let flaky: Awaited<ReturnType<typeof listen>>;
let other: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  other = await listen('127.0.0.2', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"moved":true}');
  });
  flaky = await listen('127.0.0.1', (req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    if (path === '/unavailable') {
      res.writeHead(503, { 'retry-after': '0' });
      res.end('busy');
    } else if (path === '/big') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.end('x'.repeat(5000));
    } else if (path === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (let i = 0; i < 10; i++) res.write('y'.repeat(500));
      res.end();
    } else if (path === '/slow') {
      setTimeout(() => res.end('late'), 1500);
    } else if (path === '/stall') {
      // Never reads the body: a large one cannot be handed to the network in full.
      req.pause();
    } else if (path === '/hang-up') {
      req.resume();
      req.on('end', () => req.socket.destroy());
    } else if (path === '/away') {
      res.writeHead(307, { location: `${other.url}/landing` });
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('plain text');
    }
  });
});

afterAll(() => {
  flaky.server.close();
  other.server.close();
  client.close();
});

const send = (path: string, extra: Partial<Parameters<typeof client.send>[0]> = {}) =>
  client.send({ method: 'GET', url: new URL(flaky.url + path), headers: { accept: 'application/json' }, ...extra });

describe('upstream client', () => {
  it('retries an idempotent request after a 503, at most twice', async () => {
    flaky.seen.length = 0;
    const res = await send('/unavailable');
    expect(res.status).toBe(503);
    expect(flaky.seen.length).toBe(3);
  });

  it('never retries a POST, nor a request that asks not to be retried', async () => {
    flaky.seen.length = 0;
    await send('/unavailable', { method: 'POST', body: { a: 1 } });
    expect(flaky.seen.length).toBe(1);
    await send('/unavailable', { retry: false });
    expect(flaky.seen.length).toBe(2);
  });

  it('cuts off answers over the size cap, declared or streamed, keeping the credits (the provider answered)', async () => {
    await expect(send('/big')).rejects.toMatchObject({ code: 'response_too_large', refund: false });
    await expect(send('/big-chunked')).rejects.toMatchObject({ code: 'response_too_large', refund: false });
  });

  it('times out with a clear error naming the host only; the request reached the provider, so its credits are kept', async () => {
    const err = await send('/slow?token=secret', { timeoutMs: 300, retry: false }).catch((e) => e);
    expect(err).toMatchObject({ code: 'timeout', retryable: true, refund: false });
    expect(err.message).toBe(
      `The provider at ${new URL(flaky.url).host} did not answer in time (0.3 s); the provider received the request and may have acted on it, so its credits are kept`,
    );
  });

  it('refunds a timeout that came before the request was handed to the network in full', async () => {
    const body = 'x'.repeat(32 * 1024 * 1024);
    const err = await send('/stall', { method: 'POST', body, headers: { 'content-type': 'text/plain' }, timeoutMs: 500 }).catch((e) => e);
    expect(err).toMatchObject({ code: 'timeout', refund: true });
    expect(err.message).toBe(`The provider at ${new URL(flaky.url).host} did not answer in time (0.5 s)`);
  });

  it('keeps the credits when the connection breaks after the whole request was sent', async () => {
    const err = await send('/hang-up', { method: 'POST', body: { a: 1 } }).catch((e) => e);
    expect(err).toMatchObject({ code: 'network_error', refund: false });
    expect(err.message).toMatch(/^The connection to the provider at 127\.0\.0\.1:\d+ broke after the request was sent \(\w+\); the provider received/);
  });

  it('parses JSON answers and keeps text answers as text', async () => {
    expect((await send('/text')).body).toBe('plain text');
  });

  it('drops credentials and custom headers when a redirect leaves the origin', async () => {
    const res = await send('/away', { headers: { accept: 'application/json', authorization: 'Bearer secret', 'x-n8n-api-key': 'k', 'x-custom': 'c' } });
    expect(res.body).toEqual({ moved: true });
    const landed = other.seen.at(-1)!;
    expect(landed.url).toBe('/landing');
    expect(landed.headers.authorization).toBeUndefined();
    expect(landed.headers['x-n8n-api-key']).toBeUndefined();
    expect(landed.headers['x-custom']).toBeUndefined();
    expect(landed.headers.accept).toBe('application/json');
  });
});
