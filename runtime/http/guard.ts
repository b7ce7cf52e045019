// Outbound guard (docs/architecture.md, "Outbound safety"): tools call owner-supplied URLs, so every destination address
// is judged after DNS resolution, and headers supplied by callers are checked before they are sent.
import dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/** Parsed ALLOW_PRIVATE_NETWORKS: either everything, or a list of ranges that are opened. */
export interface AllowList {
  all: boolean;
  ranges: Cidr[];
}

/** Thrown (or passed to the lookup callback) when a destination must not be contacted. */
export class OutboundRefusedError extends Error {
  readonly code = 'ERR_OUTBOUND_REFUSED';
  constructor(
    readonly host: string,
    readonly address: string | undefined,
    readonly reason: string,
  ) {
    const target = address && address !== host ? `${host} (${address})` : host;
    const hint = address ? '; set ALLOW_PRIVATE_NETWORKS to allow it' : '';
    super(`Refused to connect to ${target}: ${reason}${hint}`);
    this.name = 'OutboundRefusedError';
  }
}

/** Thrown when a caller-supplied header must not be sent. The message names the header, never its value. */
export class BadHeaderError extends Error {
  readonly code = 'ERR_BAD_HEADER';
  constructor(
    readonly header: string,
    readonly reason: string,
  ) {
    super(`Header ${JSON.stringify(header)} is not allowed: ${reason}`);
    this.name = 'BadHeaderError';
  }
}

const cidr = (text: string): Cidr => ipaddr.parseCIDR(text);

const LOOPBACK = ['127.0.0.0/8', '::1/128'].map(cidr);
const PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7', 'fec0::/10'].map(cidr);

/**
 * Cloud metadata endpoints hand out the machine's own credentials: refused even when an allow-list range
 * (private, all, 0.0.0.0/0, 100.64.0.0/10...) covers them; only naming the exact address opens one.
 */
const METADATA = ['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254'].map((a) => ipaddr.parse(a));

// First match wins: specific ranges come before the wider ones that contain them.
const BLOCKED: Array<{ range: Cidr; reason: string }> = [
  { range: cidr('0.0.0.0/8'), reason: 'unspecified address' },
  { range: cidr('::/128'), reason: 'unspecified address' },
  ...LOOPBACK.map((range) => ({ range, reason: 'loopback address' })),
  { range: cidr('100.64.0.0/10'), reason: 'private network address (carrier-grade NAT)' },
  ...['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fec0::/10'].map((r) => ({ range: cidr(r), reason: 'private network address' })),
  { range: cidr('fc00::/7'), reason: 'unique-local IPv6 address' },
  { range: cidr('169.254.0.0/16'), reason: 'link-local address' },
  { range: cidr('fe80::/10'), reason: 'link-local address' },
  { range: cidr('224.0.0.0/4'), reason: 'multicast address' },
  { range: cidr('ff00::/8'), reason: 'multicast address' },
  { range: cidr('255.255.255.255/32'), reason: 'broadcast address' },
  ...[
    '240.0.0.0/4', // future use
    '192.0.0.0/24', // IETF protocol assignments
    '192.0.2.0/24', // TEST-NET-1
    '198.51.100.0/24', // TEST-NET-2
    '203.0.113.0/24', // TEST-NET-3
    '198.18.0.0/15', // benchmarking
    '192.88.99.0/24', // 6to4 relay anycast
    '::/96', // IPv4-compatible IPv6 (deprecated)
    '100::/64', // discard-only
    '2001:db8::/32', // documentation
  ].map((r) => ({ range: cidr(r), reason: 'reserved address' })),
];

const EMBEDDING = {
  translated: cidr('::ffff:0:0:0/96'),
  nat64: cidr('64:ff9b::/96'),
  nat64Local: cidr('64:ff9b:1::/48'),
  sixToFour: cidr('2002::/16'),
  teredo: cidr('2001::/32'),
};

/**
 * IPv6 forms that carry an IPv4 address are judged as that IPv4 address (a gateway on the way delivers them
 * there): IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::a.b.c.d and the
 * local-use 64:ff9b:1::/48 of RFC 8215, laid out as RFC 6052 says for a /48), 6to4 (2002:AABB:CCDD::) and
 * Teredo (2001:0::, the client's IPv4 in the last 32 bits, inverted).
 */
function embeddedIPv4(address: Address): ipaddr.IPv4 | undefined {
  if (address.kind() === 'ipv4') return undefined;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  const p = v6.parts;
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  if (v6.match(EMBEDDING.translated) || v6.match(EMBEDDING.nat64)) return fromWords(p[6], p[7]);
  if (v6.match(EMBEDDING.nat64Local)) return new ipaddr.IPv4([p[3] >> 8, p[3] & 0xff, p[4] & 0xff, p[5] >> 8]);
  if (v6.match(EMBEDDING.sixToFour)) return fromWords(p[1], p[2]);
  if (v6.match(EMBEDDING.teredo)) return fromWords(p[6] ^ 0xffff, p[7] ^ 0xffff);
  return undefined;
}

function normalize(address: Address): Address {
  return embeddedIPv4(address) ?? address;
}

function inRange(address: Address, range: Cidr): boolean {
  return address.kind() === range[0].kind() && address.match(range);
}

const fullPrefix = (a: Address) => (a.kind() === 'ipv4' ? 32 : 128);
const sameAddress = (a: Address, b: Address) => a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString();

/** Parses ALLOW_PRIVATE_NETWORKS: comma-separated CIDRs or IPs, and the keywords loopback, private, all (or *). */
export function parseAllowList(value: string | undefined): AllowList {
  const allow: AllowList = { all: false, ranges: [] };
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    const keyword = entry.toLowerCase();
    if (keyword === 'all' || keyword === '*') allow.all = true;
    else if (keyword === 'loopback') allow.ranges.push(...LOOPBACK);
    else if (keyword === 'private') allow.ranges.push(...PRIVATE);
    else allow.ranges.push(parseRange(entry));
  }
  return allow;
}

function parseRange(entry: string): Cidr {
  const text = entry.replace(/^\[(.*)\](\/\d+)?$/, '$1$2'); // accept [::1] and [::1]/128
  const [ip, bits] = text.split('/');
  const isIp = (s: string) => ipaddr.IPv4.isValidFourPartDecimal(s) || ipaddr.IPv6.isValid(s);
  if (!isIp(ip) || (bits !== undefined && !ipaddr.isValidCIDR(text))) {
    throw new Error(`ALLOW_PRIVATE_NETWORKS: invalid entry "${entry}" (expected an IP, a CIDR, loopback, private or all)`);
  }
  const address = ipaddr.parse(ip);
  const prefix = bits === undefined ? (address.kind() === 'ipv4' ? 32 : 128) : Number(bits);
  const v4 = embeddedIPv4(address);
  // ::ffff:10.0.0.0/104 means 10.0.0.0/8: addresses are judged in their IPv4 form.
  if (v4 && address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) return [v4, Math.max(prefix - 96, 0)];
  return [address, prefix];
}

/**
 * Each allow list's verdicts on the addresses it has judged (an allow list is never changed once parsed): a
 * provider on a literal IP is judged on every call, and parsing and matching the address costs more than the
 * rest of the outbound checks. Emptied when it holds more than VERDICTS_KEPT addresses.
 */
const verdicts = new WeakMap<AllowList, Map<string, string | null>>();
const VERDICTS_KEPT = 1024;

/** Why this address must not be contacted, or null when it may be. */
export function refusalReason(ip: string, allow: AllowList): string | null {
  let known = verdicts.get(allow);
  if (!known) verdicts.set(allow, (known = new Map()));
  const verdict = known.get(ip);
  if (verdict !== undefined) return verdict;
  if (known.size >= VERDICTS_KEPT) known.clear();
  const reason = judge(ip, allow);
  known.set(ip, reason);
  return reason;
}

function judge(ip: string, allow: AllowList): string | null {
  const bare = ip.replace(/^\[(.*)\]$/, '$1');
  if (!ipaddr.isValid(bare)) return 'not a valid IP address';
  const address = normalize(ipaddr.parse(bare));
  if (METADATA.some((m) => sameAddress(m, address))) {
    return allow.ranges.some(([a, bits]) => bits === fullPrefix(a) && sameAddress(a, address)) ? null : 'cloud metadata address';
  }
  if (allow.all) return null;
  const blocked = BLOCKED.find((b) => inRange(address, b.range));
  if (!blocked) return null;
  return allow.ranges.some((r) => inRange(address, r)) ? null : blocked.reason;
}

/**
 * A dns.lookup replacement for http.request / net.connect: resolves with `resolve` (default dns.lookup)
 * and fails with OutboundRefusedError when ANY resolved address is refused, so no socket connects to it.
 */
export function guardedLookup(allow: AllowList, resolve: LookupFunction = dns.lookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    // RFC 6761: names under .invalid never resolve, so none is sent to a resolver (the service's own
    // sandboxes live there, reached only through their own connections: runtime/sandbox/sandboxes.ts).
    if (/(^|\.)invalid\.?$/i.test(hostname)) return process.nextTick(() => callback(notFound(hostname), '', 0));
    const wantsAll = typeof options === 'object' && options !== null && options.all === true;
    resolve(hostname, Object.assign({}, options, { all: true }), (err, result, family) => {
      if (err) return callback(err, '', 0);
      const addresses: LookupAddress[] = typeof result === 'string' ? [{ address: result, family: family || isIP(result) }] : result;
      if (addresses.length === 0) return callback(notFound(hostname), '', 0);
      for (const { address } of addresses) {
        const reason = refusalReason(address, allow);
        if (reason) return callback(new OutboundRefusedError(hostname, address, reason), '', 0);
      }
      if (wantsAll) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

const notFound = (hostname: string) => Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });

/**
 * Checks what lookup cannot see: the scheme, embedded credentials, and literal IP hosts
 * (Node connects to those without calling lookup). Throws OutboundRefusedError.
 */
export function checkUrl(url: URL, allow: AllowList): void {
  const host = url.hostname;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundRefusedError(host, undefined, `scheme "${url.protocol.replace(/:$/, '')}" is not allowed (only http and https)`);
  }
  if (url.username || url.password) {
    throw new OutboundRefusedError(host, undefined, 'URLs with embedded credentials are not allowed');
  }
  const literal = host.replace(/^\[(.*)\]$/, '$1');
  if (ipaddr.isValid(literal)) {
    const reason = refusalReason(literal, allow);
    if (reason) throw new OutboundRefusedError(host, literal, reason);
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Control characters except horizontal tab: CR/LF would split the header, NUL truncates it.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const BAD_VALUE_CHAR = /[\x00-\x08\x0a-\x1f\x7f]/;
// Past ASCII, Node refuses a value (from U+0100) or sends it as Latin-1 bytes the other side reads differently.
// eslint-disable-next-line no-control-regex -- every character from NUL to DEL is ASCII
const NOT_ASCII = /[^\x00-\x7f]/u;

/** Why a header value cannot be sent as given, in words ("contains ..."), or null. */
export function headerValueProblem(value: string): string | null {
  if (BAD_VALUE_CHAR.test(value)) return 'contains CR, LF, NUL or another control character';
  const other = NOT_ASCII.exec(value);
  if (other)
    return `contains ${JSON.stringify(other[0])} (U+${other[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}): header values must be ASCII`;
  return null;
}
const MANAGED: Record<string, string> = {
  host: 'the Host header comes from the URL',
  'content-length': 'the length is set by the HTTP client',
  connection: 'hop-by-hop header',
  'keep-alive': 'hop-by-hop header',
  te: 'hop-by-hop header',
  trailer: 'hop-by-hop header',
  'transfer-encoding': 'hop-by-hop header',
  upgrade: 'hop-by-hop header',
};

/** Throws BadHeaderError for a header that must not be sent as given. */
export function checkOutboundHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) throw new BadHeaderError(name, 'invalid characters in the header name');
    const lower = name.toLowerCase();
    const managed = MANAGED[lower] ?? (lower.startsWith('proxy-') ? 'hop-by-hop header' : undefined);
    if (managed) throw new BadHeaderError(name, managed);
    if (typeof value !== 'string') throw new BadHeaderError(name, 'the value must be a string');
    const problem = headerValueProblem(value);
    if (problem) throw new BadHeaderError(name, `the value ${problem}`);
  }
}
