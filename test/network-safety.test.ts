// The suite's network safety net (test/support/loopback-only.ts) is really in place: a name is not
// resolved and a literal non-loopback address is not connected to, so no test can leak a packet.
import dns from 'node:dns';
import net from 'node:net';
import { createTransport } from 'nodemailer';
import { describe, expect, it } from 'vitest';

describe('network safety net of the test suite', () => {
  it('resolves no public host name (no DNS query leaves the machine)', async () => {
    await expect(fetch('http://api.atlassian.com/')).rejects.toMatchObject({ cause: { code: 'ENOTFOUND' } });
  });

  it('asks no DNS server through a resolver either (nodemailer resolves SMTP hosts that way)', async () => {
    await expect(dns.promises.resolve4('smtp.example.com')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(new dns.promises.Resolver().resolve6('smtp.example.com')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    const mailer = createTransport({ url: 'smtp://smtp.example.com:25', connectionTimeout: 2000 });
    await expect(mailer.sendMail({ from: 'a@example.com', to: 'b@example.com', text: 'x' })).rejects.toMatchObject({
      code: expect.stringMatching(/EDNS|ENOTFOUND/),
    });
  });

  it('connects to no literal address outside loopback', () => {
    expect(() => net.connect(80, '192.0.2.1')).toThrow(/safety net: connection to 192\.0\.2\.1 blocked/);
    expect(() => net.connect({ host: '2001:db8::1', port: 80 })).toThrow(/blocked/);
  });

  it('still reaches loopback', async () => {
    const server = net.createServer((s) => s.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const socket = net.connect((server.address() as net.AddressInfo).port, 'localhost');
    const text = await new Promise<string>((r) => socket.on('data', (d) => r(String(d))));
    expect(text).toBe('ok');
    server.close();
  });
});
