// The test suite's network safety net, loaded before every test file (vitest setupFiles) and into the
// service processes tests start: no test may send a packet anywhere but loopback, even when the code under
// test is broken. Host names other than localhost fail to resolve at once (no DNS query leaves the machine),
// and a socket to a literal address outside 127.0.0.0/8 and ::1 is refused before it connects.
import dns from 'node:dns';
import net from 'node:net';

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
const isLoopback = (ip: string) => loopback.check(ip, net.isIPv6(ip) ? 'ipv6' : 'ipv4');
const LOCAL_NAMES = new Set(['localhost', 'localhost.']);

function refusedName(hostname: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`test network safety net: ${hostname} is not resolved (tests reach loopback only)`);
  err.code = 'ENOTFOUND';
  return err;
}

const realLookup = dns.lookup;
// dns.lookup has overloads; the stub forwards every form for local names and numeric hosts.
dns.lookup = function lookup(hostname: string, ...rest: unknown[]) {
  const callback = rest[rest.length - 1] as (err: Error | null, address?: unknown, family?: number) => void;
  if (!LOCAL_NAMES.has(hostname.toLowerCase()) && !net.isIP(hostname)) {
    process.nextTick(() => callback(refusedName(hostname)));
    return;
  }
  return (realLookup as (...a: unknown[]) => void)(hostname, ...rest);
} as typeof dns.lookup;
const realPromiseLookup = dns.promises.lookup;
dns.promises.lookup = (async (hostname: string, options?: unknown) => {
  if (!LOCAL_NAMES.has(hostname.toLowerCase()) && !net.isIP(hostname)) throw refusedName(hostname);
  return (realPromiseLookup as (h: string, o?: unknown) => Promise<unknown>)(hostname, options);
}) as typeof dns.promises.lookup;

// Resolvers that ask DNS servers themselves (nodemailer resolves an SMTP host with resolve4/resolve6 before it
// falls back to dns.lookup) never ask: they answer ENOTFOUND at once, for every name (even localhost would be
// a query to a DNS server), so the lookup above decides.
for (const method of ['resolve', 'resolve4', 'resolve6', 'resolveAny'] as const) {
  const refuse = (hostname: string, ...rest: unknown[]) => {
    const callback = rest[rest.length - 1] as (err: Error) => void;
    process.nextTick(() => callback(refusedName(hostname)));
  };
  dns.Resolver.prototype[method] = refuse as never;
  (dns as unknown as Record<string, unknown>)[method] = refuse;
  (dns.promises as unknown as Record<string, unknown>)[method] = async (hostname: string) => {
    throw refusedName(hostname);
  };
  (dns.promises.Resolver.prototype as unknown as Record<string, unknown>)[method] = async (hostname: string) => {
    throw refusedName(hostname);
  };
}

const realConnect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;
net.Socket.prototype.connect = function connect(this: net.Socket, ...args: unknown[]) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const host =
    typeof first === 'object' && first !== null ? (first as { host?: string; path?: string }).host : typeof args[1] === 'string' ? args[1] : undefined;
  const isPipe = typeof first === 'object' && first !== null && Boolean((first as { path?: string }).path);
  if (!isPipe && host && net.isIP(host) && !isLoopback(host))
    throw new Error(`test network safety net: connection to ${host} blocked (tests reach loopback only)`);
  return realConnect.apply(this, args);
} as typeof net.Socket.prototype.connect;
