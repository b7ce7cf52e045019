// readBody against real requests on loopback: a body read as it arrives and one already received whole (taken
// from the stream's buffer), each within its limit and over it, declared or chunked, in one write or in pieces.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyTooLargeError, readBody } from '../runtime/http/body.ts';

const LIMIT = 64;
let server: http.Server;
let port: number;

beforeAll(async () => {
  // `/now` reads at once, while the parser may still be on the body; `/later` once the request is complete.
  server = http.createServer(async (req, res) => {
    const whole = req.url === '/later';
    // The parser sets `complete` once the last byte arrived; nothing reads the body meanwhile.
    if (whole) while (!req.complete) await new Promise((resolve) => setImmediate(resolve));
    let answer: string;
    try {
      const read = readBody(req, LIMIT);
      answer = JSON.stringify({ body: await read, atOnce: typeof read === 'string' });
    } catch (err) {
      answer = JSON.stringify({ error: err instanceof BodyTooLargeError ? 'too large' : String(err) });
    }
    res.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** Sends `pieces` as raw writes, each after the previous one was written, and returns the answer's body. */
function raw(pieces: string[]): Promise<{ body?: string; atOnce?: boolean; error?: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    socket.on('end', () => resolve(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ''))));
    socket.on('error', reject);
    const write = (i: number) => {
      if (i === pieces.length) return;
      socket.write(pieces[i], () => write(i + 1));
    };
    socket.once('connect', () => write(0));
  });
}

const head = (path: string, headers: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers}\r\n`;
const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`;

describe('readBody', () => {
  for (const path of ['/now', '/later']) {
    it(`${path}: reads a declared body, in one write and in pieces`, async () => {
      const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
      const one = await raw([head(path, `Content-Length: ${body.length}\r\n`) + body]);
      expect(one.body).toBe(body);
      const pieces = await raw([head(path, `Content-Length: ${body.length}\r\n`), body.slice(0, 10), body.slice(10)]);
      expect(pieces.body).toBe(body);
    });

    it(`${path}: reads a chunked body and an empty one`, async () => {
      const te = 'Transfer-Encoding: chunked\r\n';
      expect((await raw([head(path, te) + chunk('{"a":') + chunk('1}') + '0\r\n\r\n'])).body).toBe('{"a":1}');
      expect((await raw([head(path, te), chunk('{"a":'), chunk('1}') + '0\r\n\r\n'])).body).toBe('{"a":1}');
      expect((await raw([head(path, 'Content-Length: 0\r\n')])).body).toBe('');
    });

    it(`${path}: refuses a body over the limit, declared or not`, async () => {
      const big = 'x'.repeat(LIMIT + 1);
      expect((await raw([head(path, `Content-Length: ${big.length}\r\n`) + big])).error).toBe('too large');
      const te = 'Transfer-Encoding: chunked\r\n';
      expect((await raw([head(path, te) + chunk(big) + '0\r\n\r\n'])).error).toBe('too large');
      expect((await raw([head(path, te), chunk(big.slice(0, 40)), chunk(big.slice(40)) + '0\r\n\r\n'])).error).toBe('too large');
      // Exactly at the limit is within it.
      expect((await raw([head(path, te) + chunk(big.slice(1)) + '0\r\n\r\n'])).body).toBe(big.slice(1));
    });
  }

  it('takes a body received whole at once, without waiting for events', async () => {
    const body = '{"id":2}';
    expect(await raw([head('/later', `Content-Length: ${body.length}\r\n`) + body])).toEqual({ body, atOnce: true });
    expect((await raw([head('/now', `Content-Length: ${body.length}\r\n`) + body])).atOnce).toBe(false);
  });
});
