// Owner accounts of the dashboard over real HTTP: sign-up, sign-in, sessions, CSRF, throttling,
// invitations, password change, management tokens, and what never reaches logs or data files.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, startTestService, type TestService } from './support/service.ts';

const PASSWORD = 'correct horse battery';

/** A browser-like client: keeps the session cookie and sends the page's Origin and CSRF token. */
class Browser {
  cookie = '';
  csrf = '';
  setCookies: string[] = [];
  constructor(
    private readonly svc: TestService,
    readonly origin = svc.url,
  ) {}

  async send(method: string, p: string, body?: unknown, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = { origin: this.origin, ...extra };
    if (this.cookie) headers.cookie = this.cookie;
    if (this.csrf && !('x-csrf-token' in extra)) headers['x-csrf-token'] = this.csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.svc.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    this.setCookies = res.headers.getSetCookie();
    const session = this.setCookies.find((c) => c.startsWith('ts_session='));
    if (session) this.cookie = session.split(';')[0];
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (json?.csrf_token) this.csrf = json.csrf_token;
    return { status: res.status, body: json, headers: res.headers };
  }
}

const email = () => `person-${Math.random().toString(36).slice(2)}@example.com`;

describe('owner accounts (SIGNUP=open, the default)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ STARTING_CREDITS: '100' });
  });
  afterAll(() => svc.close());

  it('signs up with a session cookie of the right flags, starting credits, and the session works on the API', async () => {
    const b = new Browser(svc);
    const address = email();
    const res = await b.send('POST', '/api/auth/signup', { email: ` ${address.toUpperCase()} `, password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^own_/), email: address, csrf_token: expect.any(String) });
    const cookie = b.setCookies.find((c) => c.startsWith('ts_session='))!;
    expect(cookie).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(cookie).not.toContain('Secure');
    const meRes = await b.send('GET', '/api/me');
    expect(meRes.body).toMatchObject({ email: address, balance: 100 });
    const created = await b.send('POST', '/api/servers', { name: 'From the browser' });
    expect(created.status).toBe(201);
  });

  it('refuses weak passwords, bad e-mails and a taken e-mail with words', async () => {
    const b = new Browser(svc);
    expect((await b.send('POST', '/api/auth/signup', { email: email(), password: 'short' })).body.message).toMatch(/at least 10 characters/);
    expect((await b.send('POST', '/api/auth/signup', { email: email(), password: 'x'.repeat(257) })).body.message).toMatch(/at most 256/);
    expect((await b.send('POST', '/api/auth/signup', { email: email(), password: 'Password123' })).body.message).toMatch(/most common/);
    expect((await b.send('POST', '/api/auth/signup', { email: 'not-an-email', password: PASSWORD })).body.message).toMatch(/"email" must be an e-mail address/);
    const address = email();
    expect((await new Browser(svc).send('POST', '/api/auth/signup', { email: address, password: PASSWORD })).status).toBe(201);
    const again = await b.send('POST', '/api/auth/signup', { email: address, password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already exists/);
  });

  it('gives a wrong password and an unknown e-mail the same answer, after the same scrypt work', async () => {
    const address = email();
    await new Browser(svc).send('POST', '/api/auth/signup', { email: address, password: PASSWORD });
    const timed = async (body: unknown) => {
      const t = performance.now();
      const res = await new Browser(svc).send('POST', '/api/auth/login', body);
      return { ...res, ms: performance.now() - t };
    };
    const wrong = await timed({ email: address, password: 'not the password' });
    const unknown = await timed({ email: email(), password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
    expect(wrong.body.message).toBe('Wrong e-mail or password');
    // Both ran a full scrypt (tens of ms); a shortcut for unknown e-mails would answer in about 1 ms.
    const right = await timed({ email: address, password: PASSWORD });
    expect(right.status).toBe(200);
    expect(unknown.ms).toBeGreaterThan(right.ms / 4);
  });

  it('refuses cookie-authenticated changes without the CSRF token or from another origin; bearer tokens are unaffected', async () => {
    const b = new Browser(svc);
    await b.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
    const noToken = await b.send('POST', '/api/servers', { name: 'x' }, { 'x-csrf-token': '' });
    expect(noToken.status).toBe(403);
    expect(noToken.body.message).toMatch(/CSRF token/);
    const evil = new Browser(svc, 'https://evil.example');
    Object.assign(evil, { cookie: b.cookie, csrf: b.csrf });
    const crossSite = await evil.send('POST', '/api/servers', { name: 'x' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.message).toMatch(/Cross-site request refused: https:\/\/evil.example/);
    // A form post from another site in a browser without Origin still says where it came from.
    const res = await fetch(`${svc.url}/api/servers`, {
      method: 'POST',
      headers: { cookie: b.cookie, 'x-csrf-token': b.csrf, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(res.status).toBe(403);
    // Reads need no token; the session's owner sees nothing created by the refused requests.
    expect((await b.send('GET', '/api/servers', undefined, { 'x-csrf-token': '' })).body.servers).toEqual([]);
    const owner = await createOwner(svc, 0);
    expect((await svc.call('POST', '/api/servers', { token: owner.token, body: { name: 'script' } })).status).toBe(201);
  });

  it('logout ends the session on the server, not only in the browser', async () => {
    const b = new Browser(svc);
    await b.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
    const stolen = b.cookie;
    expect((await b.send('POST', '/api/auth/logout')).status).toBe(204);
    expect(b.setCookies[0]).toMatch(/^ts_session=; .*Max-Age=0/);
    const replay = await fetch(`${svc.url}/api/me`, { headers: { cookie: stolen } });
    expect(replay.status).toBe(401);
  });

  it('a password change ends every other session; "sign out everywhere" ends all', async () => {
    const address = email();
    const first = new Browser(svc);
    await first.send('POST', '/api/auth/signup', { email: address, password: PASSWORD });
    const second = new Browser(svc);
    expect((await second.send('POST', '/api/auth/login', { email: address, password: PASSWORD })).status).toBe(200);
    const wrongCurrent = await first.send('POST', '/api/me/password', { current_password: 'nope nope nope', new_password: 'a new long passphrase' });
    expect(wrongCurrent.status).toBe(400);
    expect((await first.send('POST', '/api/me/password', { current_password: PASSWORD, new_password: 'a new long passphrase' })).status).toBe(204);
    expect((await first.send('GET', '/api/me')).status).toBe(200);
    expect((await second.send('GET', '/api/me')).status).toBe(401);
    expect((await new Browser(svc).send('POST', '/api/auth/login', { email: address, password: PASSWORD })).status).toBe(401);
    const third = new Browser(svc);
    expect((await third.send('POST', '/api/auth/login', { email: address, password: 'a new long passphrase' })).status).toBe(200);
    expect((await third.send('POST', '/api/me/sessions/revoke-all')).status).toBe(204);
    expect((await third.send('GET', '/api/me')).status).toBe(401);
    expect((await first.send('GET', '/api/me')).status).toBe(401);
  });

  it('management tokens are shown once, listed without their value, and revoked at once', async () => {
    const b = new Browser(svc);
    await b.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
    const created = await b.send('POST', '/api/me/tokens', { name: 'ci script' });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^mcpo_[A-Za-z0-9]{40,}$/);
    const token = created.body.token as string;
    expect((await svc.call('GET', '/api/servers', { token })).status).toBe(200);
    const list = await b.send('GET', '/api/me/tokens');
    expect(list.body.tokens).toEqual([
      { id: created.body.id, name: 'ci script', prefix: token.slice(0, 10), created_at: expect.any(String), last_used_at: expect.any(String) },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect((await b.send('DELETE', `/api/me/tokens/${created.body.id}`)).status).toBe(204);
    expect((await svc.call('GET', '/api/servers', { token })).status).toBe(401);
    const other = new Browser(svc);
    await other.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
    const mine = await b.send('POST', '/api/me/tokens', { name: 'mine' });
    expect((await other.send('DELETE', `/api/me/tokens/${mine.body.id}`)).status).toBe(404);
  });

  it('never writes a password, session id or token in plain text to logs or data files', async () => {
    const disk = await startTestService({ STARTING_CREDITS: '5' }, { onDisk: path.join(svc.config.dataDir, 'disk') });
    try {
      const b = new Browser(disk);
      const secret = 'a very particular passphrase';
      await b.send('POST', '/api/auth/signup', { email: email(), password: secret });
      const sessionId = b.cookie.split('=')[1];
      const token = (await b.send('POST', '/api/me/tokens', { name: 't' })).body.token;
      await disk.close();
      const dir = disk.config.dataDir;
      const files = await readdir(dir);
      const contents = (await Promise.all(files.map((f) => readFile(path.join(dir, f), 'utf8').catch(() => '')))).join('\n') + disk.logs.join('\n');
      expect(contents).toContain('scrypt$');
      for (const s of [secret, sessionId, token, b.csrf]) expect(contents).not.toContain(s);
    } finally {
      await disk.close();
    }
  });
});

describe('sign-in throttling', () => {
  let svc: TestService;
  beforeAll(async () => {
    // The service trusts X-Forwarded-For here, so each test can sign in from addresses of its own.
    svc = await startTestService({ TRUST_PROXY: 'true' });
  });
  afterAll(() => svc.close());

  const from = (address: string) => ({ 'x-forwarded-for': address });
  const signUp = async () => {
    const address = email();
    const b = new Browser(svc);
    expect((await b.send('POST', '/api/auth/signup', { email: address, password: PASSWORD }, from('192.0.2.200'))).status).toBe(201);
    return { address, deviceCookie: b.setCookies.find((c) => c.startsWith('ts_device='))! };
  };
  const login = (address: string, password: string, ip: string, cookie?: string) =>
    new Browser(svc).send('POST', '/api/auth/login', { email: address, password }, { ...from(ip), ...(cookie ? { cookie } : {}) });

  it('answers 429 with Retry-After after repeated failures for one e-mail from one address, also for the right password', async () => {
    const { address } = await signUp();
    for (let i = 0; i < 5; i++) expect((await login(address, `wrong ${i} password`, '192.0.2.1')).status).toBe(401);
    const blocked = await login(address, PASSWORD, '192.0.2.1');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.body.message).toMatch(/^Too many failed sign-ins for this e-mail from your address\. Try again in \d+ minutes?\.$/);
  });

  it("a stranger's wrong passwords do not keep the owner out: the right password from the owner's address still works", async () => {
    const { address } = await signUp();
    for (let i = 0; i < 10; i++) await login(address, `guess ${i} password`, '203.0.113.66');
    expect((await login(address, PASSWORD, '203.0.113.66')).status).toBe(429);
    expect((await login(address, PASSWORD, '198.51.100.7')).status).toBe(200);
  });

  // Every wrong password is a real scrypt check (32 MiB): these take seconds on a busy machine.
  it(
    "a guesser spread over many addresses locks out new browsers only; the owner's browser that signed in before still gets in",
    { timeout: 90_000 },
    async () => {
      const { address, deviceCookie } = await signUp();
      for (let i = 0; i < 20; i++) expect((await login(address, `guess ${i} password`, `203.0.113.${100 + i}`)).status).toBe(401);
      const newBrowser = await login(address, PASSWORD, '198.51.100.8');
      expect(newBrowser.status).toBe(429);
      expect(newBrowser.body.message).toMatch(
        /^Too many failed sign-ins for this account from browsers that never signed in to it: sign in from a browser you signed in with before/,
      );
      const cookie = deviceCookie.split(';')[0];
      expect(deviceCookie).toMatch(/^ts_device=[\w-]+\.[\w-]+; Path=\/api\/auth; HttpOnly; SameSite=Strict; Max-Age=31536000$/);
      // From anywhere: the device cookie is what counts, and its own count is untouched by the guesser.
      expect((await login(address, PASSWORD, '198.51.100.9', cookie)).status).toBe(200);
      // A device cookie of another e-mail, or a forged one, counts for nothing.
      const other = await signUp();
      expect((await login(address, PASSWORD, '198.51.100.9', other.deviceCookie.split(';')[0])).status).toBe(429);
      expect((await login(address, PASSWORD, '198.51.100.9', `${cookie}x`)).status).toBe(429);
    },
  );

  it("refused attempts are not counted against the address's budget", { timeout: 90_000 }, async () => {
    const { address } = await signUp();
    const ip = '192.0.2.77';
    for (let i = 0; i < 5; i++) expect((await login(address, `wrong ${i} password`, ip)).status).toBe(401);
    // 40 more for the locked e-mail: refused before any check, so the address (30 failures) has spent 5 so far.
    for (let i = 0; i < 40; i++) expect((await login(address, `wrong ${i} password`, ip)).status).toBe(429);
    for (let i = 0; i < 25; i++) expect((await login(`nobody-${i}@example.com`, 'some wrong password', ip)).status).toBe(401);
    expect((await login('nobody-else@example.com', 'some wrong password', ip)).status).toBe(429);
  });
});

describe('sessions expire', () => {
  it('ends a session after the idle time', async () => {
    const svc = await startTestService({ SESSION_IDLE_MINUTES: '1' });
    try {
      const b = new Browser(svc);
      await b.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
      expect((await b.send('GET', '/api/me')).status).toBe(200);
      // Age the stored session past its idle expiry, as a minute of silence would.
      await svc.store.collection('sessions').updateMany({}, { $set: { expires_at: new Date(Date.now() - 1000) } });
      expect((await b.send('GET', '/api/me')).status).toBe(401);
      expect(await svc.store.collection('sessions').countDocuments({})).toBe(0);
    } finally {
      await svc.close();
    }
  });
});

describe('invitations (SIGNUP=invite) and https', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ SIGNUP: 'invite', STARTING_CREDITS: '25', PUBLIC_URL: 'https://tools.example.com' });
  });
  afterAll(() => svc.close());

  it('refuses open sign-up, and lets an invited owner set a password once', async () => {
    const b = new Browser(svc, 'https://tools.example.com');
    const refused = await b.send('POST', '/api/auth/signup', { email: email(), password: PASSWORD });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/invitation/);
    const address = email();
    const invited = await svc.call('POST', '/api/admin/owners', { token: svc.operatorToken, body: { email: address } });
    expect(invited.body.invite_url).toMatch(/^https:\/\/tools\.example\.com\/invite#[A-Za-z0-9]{40,}$/);
    const token = invited.body.invite_url.split('#')[1];
    // No password yet: signing in is refused like any wrong password.
    expect((await b.send('POST', '/api/auth/login', { email: address, password: PASSWORD })).status).toBe(401);
    const accepted = await b.send('POST', '/api/auth/invitation', { token, password: PASSWORD });
    expect(accepted.status).toBe(200);
    expect(b.setCookies.find((c) => c.startsWith('ts_session='))).toMatch(/; Secure$/);
    expect((await b.send('GET', '/api/me')).body).toMatchObject({ email: address, balance: 25 });
    const reused = await new Browser(svc, 'https://tools.example.com').send('POST', '/api/auth/invitation', { token, password: 'another long passphrase' });
    expect(reused.status).toBe(400);
    expect(reused.body.message).toMatch(/used already or has expired/);
  });
});
