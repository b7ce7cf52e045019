// The outbound guard's verdict for a table of literal addresses and host names under several allow-lists.
// Pure decisions: names resolve through a stub resolver, and nothing here opens a socket.
import type { LookupFunction } from 'node:net';
import { describe, expect, it } from 'vitest';
import { guardedLookup, parseAllowList, refusalReason } from '../runtime/http/guard.ts';

type Verdict = 'ok' | 'refused';
/** address -> expected verdict under: nothing allowed, `loopback`, `private`, `all`, `0.0.0.0/0,::/0`. */
type Row = [address: string, none: Verdict, loopback: Verdict, priv: Verdict, all: Verdict, wide: Verdict];

const R: Verdict = 'refused';
const O: Verdict = 'ok';

const TABLE: Row[] = [
  // Cloud metadata: refused whatever range covers it.
  ['169.254.169.254', R, R, R, R, R],
  ['169.254.170.2', R, R, R, R, R],
  ['100.100.100.200', R, R, R, R, R],
  ['fd00:ec2::254', R, R, R, R, R],
  ['::ffff:169.254.169.254', R, R, R, R, R],
  ['::ffff:a9fe:a9fe', R, R, R, R, R],
  ['::ffff:0:a9fe:a9fe', R, R, R, R, R],
  ['64:ff9b::a9fe:a9fe', R, R, R, R, R],
  ['64:ff9b::169.254.169.254', R, R, R, R, R],
  ['64:ff9b:1:a9fe:a9:fe00::', R, R, R, R, R],
  ['2002:a9fe:a9fe::', R, R, R, R, R],
  ['2001:0:4136:e378:8000:63bf:5601:5601', R, R, R, R, R],
  ['::ffff:100.100.100.200', R, R, R, R, R],
  ['64:ff9b::6464:64c8', R, R, R, R, R],
  ['2002:6464:64c8::1', R, R, R, R, R],
  ['::ffff:169.254.170.2', R, R, R, R, R],
  // Loopback, in every form.
  ['127.0.0.1', R, O, R, O, O],
  ['127.1.2.3', R, O, R, O, O],
  ['127.255.255.254', R, O, R, O, O],
  ['::1', R, O, R, O, O],
  ['::ffff:127.0.0.1', R, O, R, O, O],
  ['::ffff:7f00:1', R, O, R, O, O],
  ['::ffff:0:7f00:1', R, O, R, O, O],
  ['::ffff:0:127.0.0.1', R, O, R, O, O],
  ['64:ff9b::7f00:1', R, O, R, O, O],
  ['64:ff9b::127.0.0.1', R, O, R, O, O],
  ['64:ff9b:1:7f00:0:100::', R, O, R, O, O],
  ['2002:7f00:1::', R, O, R, O, O],
  ['2002:7f00:1:1::1', R, O, R, O, O],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', R, O, R, O, O],
  // Private networks.
  ['10.0.0.1', R, R, O, O, O],
  ['10.255.255.255', R, R, O, O, O],
  ['172.16.0.1', R, R, O, O, O],
  ['172.31.255.1', R, R, O, O, O],
  ['192.168.0.1', R, R, O, O, O],
  ['192.168.255.254', R, R, O, O, O],
  ['100.64.0.1', R, R, O, O, O],
  ['100.127.255.254', R, R, O, O, O],
  ['fd00::1', R, R, O, O, O],
  ['fc00::1', R, R, O, O, O],
  ['fdff:ffff::1', R, R, O, O, O],
  ['fec0::1', R, R, O, O, O],
  ['::ffff:10.0.0.1', R, R, O, O, O],
  ['::ffff:a00:1', R, R, O, O, O],
  ['::ffff:0:a00:1', R, R, O, O, O],
  ['::ffff:0:192.168.1.1', R, R, O, O, O],
  ['64:ff9b::a00:1', R, R, O, O, O],
  ['64:ff9b::192.168.1.1', R, R, O, O, O],
  ['64:ff9b:1:a00:0:100::', R, R, O, O, O],
  ['64:ff9b:1:c0a8:1:100::', R, R, O, O, O],
  ['2002:a00:1::', R, R, O, O, O],
  ['2002:c0a8:101::1', R, R, O, O, O],
  ['2001:0:4136:e378:8000:63bf:f5ff:fffe', R, R, O, O, O],
  ['2001:0:4136:e378:8000:63bf:3f57:fefe', R, R, O, O, O],
  // Link-local, unspecified, multicast, broadcast, reserved: never private, opened only by all.
  ['169.254.1.1', R, R, R, O, O],
  ['169.254.0.1', R, R, R, O, O],
  ['fe80::1', R, R, R, O, O],
  ['::ffff:169.254.1.1', R, R, R, O, O],
  ['64:ff9b::a9fe:101', R, R, R, O, O],
  ['0.0.0.0', R, R, R, O, O],
  ['0.1.2.3', R, R, R, O, O],
  ['::', R, R, R, O, O],
  ['224.0.0.1', R, R, R, O, O],
  ['239.255.255.250', R, R, R, O, O],
  ['ff02::1', R, R, R, O, O],
  ['255.255.255.255', R, R, R, O, O],
  ['240.0.0.1', R, R, R, O, O],
  ['192.0.2.1', R, R, R, O, O],
  ['198.51.100.7', R, R, R, O, O],
  ['203.0.113.9', R, R, R, O, O],
  ['198.18.0.1', R, R, R, O, O],
  ['192.88.99.1', R, R, R, O, O],
  ['192.0.0.8', R, R, R, O, O],
  ['2001:db8::1', R, R, R, O, O],
  ['100::1', R, R, R, O, O],
  ['2002:e000:1::', R, R, R, O, O],
  ['2001:0:4136:e378:8000:63bf:1fff:fffe', R, R, R, O, O],
  // Public addresses, in every form: always allowed.
  ['8.8.8.8', O, O, O, O, O],
  ['1.1.1.1', O, O, O, O, O],
  ['93.184.216.34', O, O, O, O, O],
  ['172.32.0.1', O, O, O, O, O],
  ['100.128.0.1', O, O, O, O, O],
  ['169.255.0.1', O, O, O, O, O],
  ['11.0.0.1', O, O, O, O, O],
  ['2606:4700:4700::1111', O, O, O, O, O],
  ['2a00:1450:4001::200e', O, O, O, O, O],
  ['::ffff:8.8.8.8', O, O, O, O, O],
  ['::ffff:0:808:808', O, O, O, O, O],
  ['64:ff9b::808:808', O, O, O, O, O],
  ['64:ff9b:1:808:8:800::', O, O, O, O, O],
  ['2002:808:808::', O, O, O, O, O],
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', O, O, O, O, O],
  ['[2606:4700:4700::1111]', O, O, O, O, O],
  ['[::1]', R, O, R, O, O],
  // The deprecated IPv4-compatible form is read as IPv4 by the parser, so it is judged by its IPv4 too.
  ['::1.2.3.4', O, O, O, O, O],
  ['::10.0.0.1', R, R, O, O, O],
];

/** Host names and what they resolve to (through the stub), with the verdicts of the table. */
const NAMES: Array<[name: string, addresses: string[], ...verdicts: Verdict[]]> = [
  ['metadata.google.internal', ['169.254.169.254'], R, R, R, R, R],
  ['instance-data.ec2.internal', ['169.254.169.254'], R, R, R, R, R],
  ['ecs-agent.local', ['169.254.170.2'], R, R, R, R, R],
  ['aliyun-metadata.example', ['100.100.100.200'], R, R, R, R, R],
  ['v6-metadata.example', ['fd00:ec2::254'], R, R, R, R, R],
  ['nat64-metadata.example', ['64:ff9b::a9fe:a9fe'], R, R, R, R, R],
  ['teredo-metadata.example', ['2001:0:4136:e378:8000:63bf:5601:5601'], R, R, R, R, R],
  ['localhost', ['127.0.0.1', '::1'], R, O, R, O, O],
  ['mapped-loopback.example', ['::ffff:7f00:1'], R, O, R, O, O],
  ['translated-loopback.example', ['::ffff:0:7f00:1'], R, O, R, O, O],
  ['intranet.example', ['10.1.2.3'], R, R, O, O, O],
  ['mixed.example', ['93.184.216.34', '10.0.0.5'], R, R, O, O, O],
  ['mixed-metadata.example', ['93.184.216.34', '169.254.169.254'], R, R, R, R, R],
  ['public.example', ['93.184.216.34', '2606:2800:220:1::1'], O, O, O, O, O],
];

const LISTS = ['', 'loopback', 'private', 'all', '0.0.0.0/0,::/0'].map((text) => ({ text: text || '(empty)', allow: parseAllowList(text) }));

describe('outbound guard verdicts', () => {
  it('has a table of at least 100 literals and names', () => {
    expect(TABLE.length + NAMES.length).toBeGreaterThanOrEqual(100);
  });

  describe.each(LISTS.map((l, i) => ({ ...l, i })))('ALLOW_PRIVATE_NETWORKS=$text', ({ allow, i }) => {
    it.each(TABLE)('%s', (address, ...verdicts) => {
      const reason = refusalReason(address, allow);
      expect(reason === null ? 'ok' : 'refused', `${address}: ${reason}`).toBe(verdicts[i]);
    });

    it.each(NAMES)('the name %s', async (name, addresses, ...verdicts) => {
      const stub: LookupFunction = (_host, _options, callback) =>
        (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(
          null,
          addresses.map((a) => ({ address: a, family: a.includes(':') ? 6 : 4 })),
        );
      const verdict = await new Promise<Verdict>((resolve) => guardedLookup(allow, stub)(name, { all: true }, (err) => resolve(err ? 'refused' : 'ok')));
      expect(verdict).toBe(verdicts[i]);
    });
  });

  it('opens a metadata address only when it is named exactly', () => {
    expect(refusalReason('169.254.169.254', parseAllowList('169.254.169.254'))).toBeNull();
    expect(refusalReason('169.254.169.254', parseAllowList('169.254.169.254/32'))).toBeNull();
    expect(refusalReason('fd00:ec2::254', parseAllowList('fd00:ec2::254'))).toBeNull();
    expect(refusalReason('100.100.100.200', parseAllowList('100.100.100.200, private'))).toBeNull();
    for (const wide of ['169.254.0.0/16', '169.254.169.0/24', '100.64.0.0/10', 'fd00::/8', 'private', 'all', '*']) {
      for (const ip of ['169.254.169.254', '100.100.100.200', 'fd00:ec2::254'])
        expect(refusalReason(ip, parseAllowList(wide)), `${ip} under ${wide}`).toBe('cloud metadata address');
    }
    // Naming one metadata address opens that one only.
    expect(refusalReason('169.254.170.2', parseAllowList('169.254.169.254'))).toBe('cloud metadata address');
  });
});
