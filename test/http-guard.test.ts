import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BadHeaderError, OutboundRefusedError, checkOutboundHeaders, checkUrl, guardedLookup, parseAllowList, refusalReason } from '../runtime/http/guard.ts';
import { listenOnLoopback, type RunningSandbox } from '../sandboxes/harness.ts';

// ---- Safety net -------------------------------------------------------------------------------
// Every socket connect in this file goes through this spy. It lets a socket reach only loopback
// addresses: literal hosts are judged before connecting, hostnames through a wrapper around the
// lookup that net would use, so a non-loopback address is refused before any packet is sent,
// even if the guard under test were broken. afterEach fails the test on any such attempt.
const loopbackOnly = new net.BlockList();
loopbackOnly.addSubnet('127.0.0.0', 8, 'ipv4');
loopbackOnly.addAddress('::1', 'ipv6');
const isLoopback = (ip: string) => loopbackOnly.check(ip, net.isIPv6(ip) ? 'ipv6' : 'ipv4');

/** Addresses the safety net refused (must stay empty) and addresses sockets were allowed to reach. */
const violations: string[] = [];
const reached: string[] = [];

type ConnectOptions = { host?: string; path?: string; lookup?: LookupFunction };
const realConnect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;

function safetyNetConnect(this: net.Socket, ...args: unknown[]): net.Socket {
  // net.connect passes [options, callback] as one array; users may pass options or (port, host).
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    args = [{ port: Number(args[0]), host: typeof args[1] === 'string' ? args[1] : 'localhost' }, ...args.filter((a) => typeof a === 'function')];
  }
  const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as ConnectOptions;
  if (!options.path) {
    const host = options.host ?? 'localhost';
    if (net.isIP(host)) {
      if (!isLoopback(host)) {
        violations.push(host);
        throw new Error(`test safety net: connection to ${host} blocked`);
      }
      reached.push(host);
    } else {
      const lookup: LookupFunction = options.lookup ?? (dns.lookup as LookupFunction);
      options.lookup = (hostname, lookupOptions, callback) =>
        lookup(hostname, lookupOptions, (err, address, family) => {
          if (err) return callback(err, address, family);
          const list = typeof address === 'string' ? [address] : address.map((a) => a.address);
          const outside = list.filter((ip) => !isLoopback(ip));
          if (outside.length > 0) {
            violations.push(...outside);
            return callback(new Error(`test safety net: connection to ${outside.join(', ')} blocked`), '', 0);
          }
          reached.push(...list);
          callback(null, address, family);
        });
    }
  }
  return realConnect.apply(this, args);
}

beforeAll(() => {
  vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(safetyNetConnect as typeof net.Socket.prototype.connect);
});
afterAll(() => {
  vi.restoreAllMocks();
});
afterEach(() => {
  const seen = violations.splice(0);
  reached.splice(0);
  expect(seen, 'a connection to a non-loopback address was attempted').toEqual([]);
});

// ---- Helpers ----------------------------------------------------------------------------------

/** A resolver that answers every name with the given addresses, like dns.lookup would. */
function resolvesTo(...addresses: string[]): LookupFunction {
  return (_hostname, options, callback) => {
    const list = addresses.map((address) => ({ address, family: net.isIP(address) }));
    if (options.all) callback(null, list);
    else callback(null, list[0].address, list[0].family);
  };
}

function get(url: string, lookup?: LookupFunction): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { lookup, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const nothingAllowed = parseAllowList(undefined);

// ---- Tests ------------------------------------------------------------------------------------

describe('parseAllowList', () => {
  it('reads keywords, IPs and CIDRs, ignoring blanks and case', () => {
    expect(parseAllowList('')).toEqual({ all: false, ranges: [] });
    expect(parseAllowList(' , ')).toEqual({ all: false, ranges: [] });
    expect(parseAllowList('ALL').all).toBe(true);
    expect(parseAllowList('*').all).toBe(true);
    const allow = parseAllowList(' Loopback, 10.1.0.0/16 ,192.168.5.7, fd12::/16, [::2]');
    expect(allow.all).toBe(false);
    expect(allow.ranges.map(([ip, bits]) => `${ip.toString()}/${bits}`)).toEqual([
      '127.0.0.0/8',
      '::1/128',
      '10.1.0.0/16',
      '192.168.5.7/32',
      'fd12::/16',
      '::2/128',
    ]);
  });

  it('throws an error naming the first invalid entry', () => {
    expect(() => parseAllowList('loopback, intranet')).toThrow(/"intranet"/);
    expect(() => parseAllowList('10.0.0.0/33')).toThrow(/"10\.0\.0\.0\/33"/);
    expect(() => parseAllowList('10.0.0.0/')).toThrow(/"10\.0\.0\.0\/"/);
    expect(() => parseAllowList('300.1.1.1')).toThrow(/"300\.1\.1\.1"/);
    expect(() => parseAllowList('0x7f.1')).toThrow(/"0x7f\.1"/);
    expect(() => parseAllowList('fe80::/129')).toThrow(/"fe80::\/129"/);
  });
});

describe('refusalReason', () => {
  it.each([
    ['127.0.0.1', 'loopback address'],
    ['127.255.0.9', 'loopback address'],
    ['::1', 'loopback address'],
    ['10.0.0.1', 'private network address'],
    ['172.16.0.1', 'private network address'],
    ['172.31.255.255', 'private network address'],
    ['192.168.1.1', 'private network address'],
    ['100.64.0.1', 'private network address (carrier-grade NAT)'],
    ['169.254.1.1', 'link-local address'],
    ['fe80::1', 'link-local address'],
    ['fe80::1%eth0', 'link-local address'],
    ['169.254.169.254', 'cloud metadata address'],
    ['fd00:ec2::254', 'cloud metadata address'],
    ['100.100.100.200', 'cloud metadata address'],
    ['fd00::1', 'unique-local IPv6 address'],
    ['fc00::1', 'unique-local IPv6 address'],
    ['::ffff:10.0.0.1', 'private network address'],
    ['::ffff:127.0.0.1', 'loopback address'],
    ['::ffff:169.254.169.254', 'cloud metadata address'],
    ['64:ff9b::a00:1', 'private network address'], // NAT64 of 10.0.0.1
    ['2002:c0a8:101::1', 'private network address'], // 6to4 of 192.168.1.1
    ['0.0.0.0', 'unspecified address'],
    ['::', 'unspecified address'],
    ['224.0.0.1', 'multicast address'],
    ['ff02::1', 'multicast address'],
    ['255.255.255.255', 'broadcast address'],
    ['240.0.0.1', 'reserved address'],
    ['192.0.2.10', 'reserved address'],
    ['2001:db8::1', 'reserved address'],
    ['not-an-ip', 'not a valid IP address'],
  ])('refuses %s as %s', (ip, reason) => {
    expect(refusalReason(ip, nothingAllowed)).toBe(reason);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('lets the public address %s through', (ip) => {
    expect(refusalReason(ip, nothingAllowed)).toBeNull();
  });

  it('opens exactly what the allow-list names', () => {
    const loopback = parseAllowList('loopback');
    expect(refusalReason('127.0.0.1', loopback)).toBeNull();
    expect(refusalReason('::1', loopback)).toBeNull();
    expect(refusalReason('::ffff:127.0.0.1', loopback)).toBeNull();
    expect(refusalReason('10.0.0.1', loopback)).toBe('private network address');

    const privateNets = parseAllowList('private');
    for (const ip of ['10.0.0.1', '172.20.0.1', '192.168.0.1', '100.64.0.1', 'fd00::1']) expect(refusalReason(ip, privateNets)).toBeNull();
    expect(refusalReason('127.0.0.1', privateNets)).toBe('loopback address');
    expect(refusalReason('169.254.169.254', privateNets)).toBe('cloud metadata address');
    expect(refusalReason('169.254.1.1', privateNets)).toBe('link-local address');

    const oneNet = parseAllowList('10.1.0.0/16, ::ffff:192.168.7.0/120');
    expect(refusalReason('10.1.2.3', oneNet)).toBeNull();
    expect(refusalReason('::ffff:10.1.2.3', oneNet)).toBeNull();
    expect(refusalReason('10.2.0.1', oneNet)).toBe('private network address');
    expect(refusalReason('192.168.7.9', oneNet)).toBeNull();
    expect(refusalReason('192.168.8.9', oneNet)).toBe('private network address');

    const all = parseAllowList('all');
    for (const ip of ['127.0.0.1', '10.0.0.1', '169.254.1.1', 'fd00::1']) expect(refusalReason(ip, all)).toBeNull();
    // Metadata endpoints stay closed under every range; http-guard-table.test.ts has the full table.
    expect(refusalReason('169.254.169.254', all)).toBe('cloud metadata address');
  });
});

describe('guardedLookup with a real http.request', () => {
  it.each([
    ['10.0.0.1', 'private network address'],
    ['169.254.169.254', 'cloud metadata address'],
    ['fd00::1', 'unique-local IPv6 address'],
    ['::ffff:10.0.0.1', 'private network address'],
    ['127.0.0.1', 'loopback address'],
  ])('refuses a name resolving to %s before any socket connects', async (address, reason) => {
    const error = await get('http://internal.example/path', guardedLookup(nothingAllowed, resolvesTo(address))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error).toMatchObject({ host: 'internal.example', address, reason, code: 'ERR_OUTBOUND_REFUSED' });
    expect((error as Error).message).toBe(`Refused to connect to internal.example (${address}): ${reason}; set ALLOW_PRIVATE_NETWORKS to allow it`);
    expect(reached).toEqual([]);
  });

  it('refuses when any one of several resolved addresses is refused', async () => {
    const lookup = guardedLookup(nothingAllowed, resolvesTo('93.184.215.14', '10.0.0.1'));
    await expect(get('http://mixed.example/', lookup)).rejects.toMatchObject({ address: '10.0.0.1' });
    expect(reached).toEqual([]);
  });

  it('passes resolver errors through', async () => {
    const failing: LookupFunction = (hostname, _options, callback) =>
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
    await expect(get('http://nowhere.example/', guardedLookup(nothingAllowed, failing))).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('uses dns.lookup by default (localhost comes from /etc/hosts and is refused)', async () => {
    await expect(get('http://localhost:9/', guardedLookup(nothingAllowed))).rejects.toMatchObject({
      host: 'localhost',
      reason: 'loopback address',
    });
  });

  it('answers in the single-address form when options.all is not set', async () => {
    const lookup = guardedLookup(parseAllowList('all'), resolvesTo('192.0.2.1', '192.0.2.2'));
    const answer = await new Promise<unknown[]>((resolve) => lookup('x.example', { family: 4 }, (...args) => resolve(args)));
    expect(answer).toEqual([null, '192.0.2.1', 4]);
  });

  describe('against a real loopback listener', () => {
    let server: RunningSandbox;
    let port: string;
    let hits = 0;
    beforeAll(async () => {
      server = await listenOnLoopback((_req, res) => {
        hits++;
        res.end('served');
      });
      port = new URL(server.url).port;
    });
    afterAll(() => server.close());

    it('is blocked when loopback is not allow-listed', async () => {
      const before = hits;
      await expect(get(`http://app.internal.test:${port}/`, guardedLookup(nothingAllowed, resolvesTo('127.0.0.1')))).rejects.toBeInstanceOf(
        OutboundRefusedError,
      );
      await expect(get(`http://app.internal.test:${port}/`, guardedLookup(parseAllowList('10.0.0.0/8'), resolvesTo('127.0.0.1')))).rejects.toBeInstanceOf(
        OutboundRefusedError,
      );
      expect(hits).toBe(before);
      expect(reached).toEqual([]);
    });

    it.each(['loopback', '127.0.0.0/8', '127.0.0.1'])('is served when allow-listed as %s', async (entry) => {
      const allow = parseAllowList(entry);
      const url = `http://app.internal.test:${port}/`;
      checkUrl(new URL(url), allow);
      expect(await get(url, guardedLookup(allow, resolvesTo('127.0.0.1')))).toEqual({ status: 200, body: 'served' });
      expect(reached).toEqual(['127.0.0.1']);
    });

    it('judges a literal loopback URL with checkUrl (lookup is bypassed for literals)', async () => {
      const url = new URL(server.url);
      expect(() => checkUrl(url, nothingAllowed)).toThrow(OutboundRefusedError);
      checkUrl(url, parseAllowList('loopback'));
      expect(await get(server.url, guardedLookup(parseAllowList('loopback')))).toEqual({ status: 200, body: 'served' });
    });
  });
});

describe('checkUrl', () => {
  it.each([
    ['http://10.0.0.1/x', '10.0.0.1', 'private network address'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'cloud metadata address'],
    ['http://[::1]:8080/', '::1', 'loopback address'],
    ['http://[::ffff:a00:1]/', '::ffff:a00:1', 'private network address'],
    ['http://[fd00:ec2::254]/', 'fd00:ec2::254', 'cloud metadata address'],
    ['http://0x7f.1/', '127.0.0.1', 'loopback address'], // the URL parser normalizes odd IPv4 forms
    ['http://2130706433/', '127.0.0.1', 'loopback address'],
    ['http://0/', '0.0.0.0', 'unspecified address'],
  ])('refuses the literal host in %s', (url, address, reason) => {
    let error: unknown;
    try {
      checkUrl(new URL(url), nothingAllowed);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error).toMatchObject({ address, reason });
    expect((error as Error).message).toMatch(/set ALLOW_PRIVATE_NETWORKS to allow it$/);
  });

  it.each(['ftp://files.example/a', 'file:///etc/passwd', 'gopher://x.example/', 'ws://x.example/'])('refuses the scheme of %s', (url) => {
    expect(() => checkUrl(new URL(url), parseAllowList('all'))).toThrow(/scheme ".+" is not allowed/);
  });

  it('refuses embedded credentials without echoing them', () => {
    let message = '';
    try {
      checkUrl(new URL('https://admin:hunter2@n8n.example/webhook/x'), nothingAllowed);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/embedded credentials/);
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('admin');
  });

  it('lets public literals and host names through (names are judged at lookup time)', () => {
    for (const url of ['https://8.8.8.8/', 'http://[2606:4700::1111]/', 'https://internal.example/', 'http://localhost/']) {
      expect(() => checkUrl(new URL(url), nothingAllowed)).not.toThrow();
    }
  });
});

describe('checkOutboundHeaders', () => {
  it('accepts ordinary headers', () => {
    expect(() => checkOutboundHeaders({ 'X-Custom': 'a b\tc', Authorization: 'Bearer x', 'content-type': 'application/json' })).not.toThrow();
  });

  it.each([
    [{ 'X-Inject': 'ok\r\nX-Evil: 1' }, 'X-Inject', /control character/],
    [{ 'X-Lf': 'a\nb' }, 'X-Lf', /control character/],
    [{ 'X-Nul': 'a\0b' }, 'X-Nul', /control character/],
    [{ 'Bad Name': 'value-1' }, 'Bad Name', /invalid characters/],
    [{ 'X-A:b': 'value-2' }, 'X-A:b', /invalid characters/],
    [{ 'X-A\r\nHost': 'value-3' }, 'X-A\r\nHost', /invalid characters/],
    [{ '': 'value-4' }, '', /invalid characters/],
    [{ Host: 'evil.example' }, 'Host', /Host header/],
    [{ 'Content-Length': '5' }, 'Content-Length', /length/],
    [{ Connection: 'close' }, 'Connection', /hop-by-hop/],
    [{ 'keep-alive': 'timeout=5' }, 'keep-alive', /hop-by-hop/],
    [{ 'Proxy-Authorization': 'Basic eA==' }, 'Proxy-Authorization', /hop-by-hop/],
    [{ 'proxy-connection': 'keep-alive' }, 'proxy-connection', /hop-by-hop/],
    [{ TE: 'trailers' }, 'TE', /hop-by-hop/],
    [{ Trailer: 'Expires' }, 'Trailer', /hop-by-hop/],
    [{ 'Transfer-Encoding': 'chunked' }, 'Transfer-Encoding', /hop-by-hop/],
    [{ Upgrade: 'websocket' }, 'Upgrade', /hop-by-hop/],
  ])('refuses %j', (headers, name, reason) => {
    let error: unknown;
    try {
      checkOutboundHeaders(headers as Record<string, string>);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BadHeaderError);
    expect((error as BadHeaderError).header).toBe(name);
    const message = (error as Error).message;
    expect(message).toContain(JSON.stringify(name));
    expect(message).toMatch(reason);
    expect(message).not.toContain(Object.values(headers)[0]);
    expect(message).not.toMatch(/[\r\n\0]/);
  });

  it('refuses a non-string value', () => {
    expect(() => checkOutboundHeaders({ 'X-Num': 5 as unknown as string })).toThrow(BadHeaderError);
  });
});

describe('the safety net itself', () => {
  it('stops a socket from reaching a non-loopback address even when the guard lets it through', async () => {
    // The guard allows everything here; only the spy stands between the request and TEST-NET-1.
    const lookup = guardedLookup(parseAllowList('all'), resolvesTo('192.0.2.1'));
    await expect(get('http://leak.example:9/', lookup)).rejects.toThrow(/test safety net/);
    expect(() =>
      http
        .request('http://192.0.2.2:9/', { agent: false })
        .on('error', () => {})
        .end(),
    ).toThrow(/test safety net/);
    expect(violations.splice(0)).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(reached).toEqual([]);
  });
});
