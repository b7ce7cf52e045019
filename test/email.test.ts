// E-mail end to end against Mailpit (the SMTP peer, `npm run peer:mail`): the service sends through real SMTP,
// the tests read the messages from Mailpit's HTTP API and use their links. Address verification on open
// sign-up, password reset, the owners' alerts and their unsubscribe links, on the embedded store and on
// MongoDB; the outbox when the SMTP server is gone, stuck or refuses, and with two instances on one MongoDB;
// what e-mail off means; and that no link's token or SMTP password reaches a log or lies in the store.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../runtime/config.ts';
import { networkOf } from '../runtime/access/key-networks.ts';
import { sha256 } from '../runtime/secrets.ts';
import { MAIL_ENV, SMTP_URL, freshAddress, linkIn, mailHeaders, mailTo, mailpitAvailable, readMail, waitForMail } from './support/mailpit.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { Browser } from './support/session-client.ts';
import { type Owner, createOwner, createServer, startTestService, type TestService } from './support/service.ts';
import { startTcpRelay } from './support/tcp-relay.ts';
import { DEMO_SPECS, useDemoUpstream } from './support/upstream.ts';
import { APPS, APP_ENV, HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { failed, succeeded, type ToolResult } from './support/tool-calls.ts';

const PASSWORD = 'correct horse battery';
const STARTING = 50;
const HELP = { CREDITS_HELP_TEXT: 'Write to billing.', CREDITS_HELP_URL: 'mailto:billing@tool-server.test' };
const smtp = SMTP_URL ? new URL(SMTP_URL) : undefined;

const demo = useDemoUpstream();

/** A server with the fixture provider's demo_ping (1 credit) on the loopback upstream, and its key. */
async function pingServer(svc: TestService, owner: Owner) {
  const { serverId, key } = await createServer(svc, owner, { accounts: demo.account(), tools: [{ base_tool: 'demo_ping', account: 'demo' }] });
  const [listed] = (await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token: owner.token })).body.api_keys;
  return { key: { ...listed, key }, ping: (from = '127.0.0.1') => pingFrom(from, svc, serverId, key) };
}

/** A tools/call of demo_ping sent from a chosen loopback address (all of 127.0.0.0/8 is this machine). */
function pingFrom(from: string, svc: TestService, serverId: string, key: string): Promise<any> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'demo_ping', arguments: {} } });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${svc.url}/mcp/${serverId}`,
      {
        method: 'POST',
        localAddress: from,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk)).on('end', () => resolve(JSON.parse(text)));
      },
    );
    req.on('error', reject).end(body);
  });
}

/** The value of one series of /metrics (0 when absent). */
async function metric(svc: TestService, series: string): Promise<number> {
  const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.operatorToken}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** Polls `check` until it holds (a condition, never a fixed wait). */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const outbox = (svc: TestService, state?: string) =>
  svc.call('GET', `/api/admin/mail${state ? `?state=${state}` : ''}`, { token: svc.operatorToken }).then((r) => r.body.messages as any[]);

/** Signs up on the API and returns the browser-like client and the verification link's token. */
async function signUp(svc: TestService, email: string): Promise<{ browser: Browser; token: string }> {
  const browser = new Browser(svc);
  const res = await browser.send('POST', '/api/auth/signup', { email, password: PASSWORD });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const mail = await waitForMail(email, /Confirm your e-mail address/);
  return { browser, token: linkIn(mail, `${svc.url}/verify-email#`).split('#')[1] };
}

const stores = [
  { name: 'embedded store', enabled: true, env: (): Record<string, string> => ({}) },
  {
    name: 'MongoDB',
    enabled: Boolean(MONGODB_URL),
    env: (): Record<string, string> => ({ MONGODB_URL: mongoTestUrl('email').url, MASTER_KEY: randomBytes(32).toString('hex') }),
  },
];

// Each test waits for mail through real SMTP, on a machine that may be busy: generous, and never a fixed sleep.
describe.skipIf(!mailpitAvailable)('e-mail (Mailpit)', { timeout: 120_000 }, () => {
  afterAll(() => dropTestDatabases());

  describe.each(stores)('on the $name', ({ enabled, env }) => {
    let svc: TestService;
    beforeAll(async () => {
      if (enabled) svc = await startTestService({ ...MAIL_ENV, ...DEMO_SPECS, ...env(), ...HELP, STARTING_CREDITS: String(STARTING) });
    });
    afterAll(() => svc?.close());

    it.skipIf(!enabled)('verifies the address on open sign-up: nothing but verifying before, a single-use link, credits after', async () => {
      const email = freshAddress('signup');
      const { browser, token } = await signUp(svc, email);
      // Before: the account can say who it is, ask for a new link and sign out; nothing else.
      expect((await browser.send('GET', '/api/me')).body).toMatchObject({ email, email_verified: false, balance: 0, mail: 'on' });
      for (const [method, path, body] of [
        ['POST', '/api/me/tokens', { name: 'script' }],
        ['POST', '/api/api-keys', { name: 'agent' }],
        ['POST', '/api/servers', { name: 'Agents' }],
        ['POST', '/api/sandbox', undefined],
        ['GET', '/api/accounts', undefined],
      ] as const) {
        const refused = await browser.send(method, path, body);
        expect(refused.status, path).toBe(403);
        expect(refused.body.message).toBe(`Confirm your e-mail address first: open the link we sent to ${email} (the dashboard sends a new one)`);
      }
      const mail = await readMail((await mailTo(email))[0].ID);
      expect(mail.From).toMatchObject({ Name: 'Tool Server', Address: 'no-reply@tool-server.test' });
      expect(mail.Text).toContain(`created a Tool Server account with this address at ${svc.url}`);
      expect(mail.Text).toContain('The link works once, for 24 hours.');
      expect(mail.HTML).toContain(`href="${svc.url}/verify-email#${token}"`);
      // Stored as its hash only; the outbox keeps no content once sent; no log line has it.
      const ownerId = (await browser.send('GET', '/api/me')).body.id;
      await until('the outbox to mark it sent', async () => (await outbox(svc, 'sent')).some((m) => m.owner_id === ownerId));
      const links = await svc.store.collection('email_links').find({});
      expect(links.map((l) => l._id)).toContain(sha256(token));
      for (const name of ['email_links', 'mail_outbox', 'owners']) expect(JSON.stringify(await svc.store.collection(name).find({})), name).not.toContain(token);
      expect(svc.logs.join('\n')).not.toContain(token);

      // The link works without a session, once.
      const verified = await fetch(`${svc.url}/api/auth/verify-email`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      });
      expect(await verified.json()).toEqual({ email, verified: true });
      const again = await svc.call('POST', '/api/auth/verify-email', { body: { token } });
      expect(again.status).toBe(400);
      expect(again.body.message).toMatch(/^This verification link is not valid: it was used already/);
      expect((await browser.send('GET', '/api/me')).body).toMatchObject({ email_verified: true, balance: STARTING });
      expect((await browser.send('POST', '/api/me/tokens', { name: 'script' })).status).toBe(201);
      expect((await browser.send('POST', '/api/me/verification')).status).toBe(409);
    });

    it.skipIf(!enabled)('resets a password by a single-use link: the same answer for any address, other sessions and tokens end', async () => {
      const email = freshAddress('reset');
      // The owner signed up and verified, is signed in in two browsers, and a script has a management token.
      const { browser: first, token: verification } = await signUp(svc, email);
      expect((await svc.call('POST', '/api/auth/verify-email', { body: { token: verification } })).status).toBe(200);
      const second = new Browser(svc);
      expect((await second.send('POST', '/api/auth/login', { email, password: PASSWORD })).status).toBe(200);
      const script = (await first.send('POST', '/api/me/tokens', { name: 'script' })).body.token;
      const asked = await svc.call('POST', '/api/auth/password-reset', { body: { email } });
      const unknown = freshAddress('nobody');
      const other = await svc.call('POST', '/api/auth/password-reset', { body: { email: unknown } });
      expect(asked.status).toBe(202);
      expect(other.status).toBe(202);
      expect(asked.body.message.replace(email, 'X')).toBe(other.body.message.replace(unknown, 'X'));
      expect(asked.body.message).toBe(`If an account uses ${email}, a link to choose a new password is on its way. It works once, for 60 minutes.`);
      const mail = await waitForMail(email, /Reset your Tool Server password/);
      const link = linkIn(mail, `${svc.url}/reset-password#`);
      const token = link.split('#')[1];
      expect(mail.Text).toContain('It works once, for 60 minutes. Every browser signed in to the account is then signed out.');
      // A refused password leaves the link working.
      const weak = await svc.call('POST', '/api/auth/password-reset/confirm', { body: { token, password: 'short' } });
      expect(weak.body.message).toBe('The password must be at least 10 characters long');
      const mine = await svc.call('POST', '/api/auth/password-reset/confirm', { body: { token, password: email } });
      expect(mine.body.message).toBe('The password must not be your e-mail address');

      const browser = new Browser(svc);
      const reset = await browser.send('POST', '/api/auth/password-reset/confirm', { token, password: 'a brand new passphrase' });
      expect(reset.status, JSON.stringify(reset.body)).toBe(200);
      expect((await browser.send('GET', '/api/me')).body.email).toBe(email);
      // Both other browsers are signed out, the script's token is revoked (revoke_tokens defaults to true), the
      // old password no longer works and the link is spent.
      expect((await first.send('GET', '/api/me')).status).toBe(401);
      expect((await second.send('GET', '/api/me')).status).toBe(401);
      expect((await svc.call('GET', '/api/me', { token: script })).status).toBe(401);
      expect((await new Browser(svc).send('POST', '/api/auth/login', { email, password: PASSWORD })).status).toBe(401);
      expect((await svc.call('POST', '/api/auth/password-reset/confirm', { body: { token, password: 'another new passphrase' } })).status).toBe(400);
      const signIn = await new Browser(svc).send('POST', '/api/auth/login', { email, password: 'a brand new passphrase' });
      expect(signIn.status).toBe(200);
      const audit = await browser.send('GET', '/api/audit?action=password');
      expect(audit.body.events[0]).toMatchObject({ action: 'password.reset', changes: { sessions_ended: 2 } });
      expect(await mailTo(unknown)).toEqual([]);
      expect(svc.logs.join('\n')).not.toContain(token);
    });

    it.skipIf(!enabled)('tells an owner once when credits fall below the alert, again only after credits are added; unsubscribes in one click', async () => {
      const email = freshAddress('credits');
      // The operator's owner gets the starting credits and 7 more; the alert sits 2 credits below the balance.
      const owner = await createOwner(svc, 7, email);
      const alertAt = STARTING + 5;
      expect((await svc.call('PATCH', '/api/me', { token: owner.token, body: { credit_alert: alertAt } })).status).toBe(200);
      const { ping: read } = await pingServer(svc, owner);
      for (let i = 0; i < 4; i++) {
        const answer = await read();
        expect(answer.result.isError, JSON.stringify(answer)).toBe(false);
      }
      const below = new RegExp(`credits are below ${alertAt}`);
      const alert = await waitForMail(email, below);
      expect(alert.Text).toContain(`Your balance is ${alertAt - 1} credits, below your alert at ${alertAt} credits.`);
      expect(alert.Text).toContain(`${svc.url}/settings#credits`);
      // The operator's words and link, as on the dashboard's banner.
      expect(alert.Text).toContain(`Write to billing. Get more credits: ${HELP.CREDITS_HELP_URL}`);
      expect(alert.HTML).toContain(`<a href="${HELP.CREDITS_HELP_URL}" style="color:#1f5fbf">${HELP.CREDITS_HELP_URL}</a>`);
      // RFC 8058 one-click unsubscribe, as Mailpit reads it.
      expect(alert.ListUnsubscribe).toMatchObject({ Errors: '', HeaderPost: 'List-Unsubscribe=One-Click' });
      const oneClick = alert.ListUnsubscribe.Header.replace(/^<|>$/g, '');
      expect(oneClick).toMatch(new RegExp(`^${svc.url}/api/unsubscribe\\?token=${owner.id}\\.credits_low\\.`));
      expect(linkIn(alert, `${svc.url}/unsubscribe?token=`)).toBe(oneClick.replace('/api/unsubscribe', '/unsubscribe'));

      // Topped up above the alert, then below again: a second e-mail; never a third while it stays below.
      await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount: 3 } });
      for (let i = 0; i < 4; i++) await read();
      await waitForMail(email, below, { count: 2 });
      await until('the outbox to send', async () => (await outbox(svc, 'queued')).length === 0);
      expect((await mailTo(email)).length).toBe(2);

      // The mail program's one-click POST; then credits fall again and nothing is sent.
      const unsubscribed = await fetch(oneClick, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'List-Unsubscribe=One-Click',
      });
      expect(await unsubscribed.json()).toEqual({ unsubscribed: 'credits_low', alert: 'My credits fall below my alert', email });
      expect((await svc.call('GET', '/api/me', { token: owner.token })).body.email_alerts).toEqual({
        credits_low: false,
        account_reconnect: true,
        key_new_network: true,
      });
      await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount: 10 } });
      const sentBefore = (await outbox(svc)).length;
      for (let i = 0; i < 10; i++) await read();
      expect((await outbox(svc)).length).toBe(sentBefore);
    });
  });

  describe('on one service', () => {
    let svc: TestService;
    beforeAll(async () => {
      svc = await startTestService({ ...MAIL_ENV, ...DEMO_SPECS, STARTING_CREDITS: String(STARTING), TRUST_PROXY: 'true' });
    });
    afterAll(() => svc.close());

    it('sends a new verification link on request, a limited number of times; the earlier link stops working', async () => {
      const email = freshAddress('resend');
      const { browser, token } = await signUp(svc, email);
      const resent = await browser.send('POST', '/api/me/verification');
      expect(resent.status).toBe(202);
      expect(resent.body.message).toBe(`A new link is on its way to ${email}; the earlier ones no longer work.`);
      const second = linkIn(await waitForMail(email, /Confirm your e-mail address/, { count: 2 }), `${svc.url}/verify-email#`).split('#')[1];
      expect((await svc.call('POST', '/api/auth/verify-email', { body: { token } })).status).toBe(400);
      expect((await browser.send('POST', '/api/me/verification')).status).toBe(202);
      expect((await browser.send('POST', '/api/me/verification')).status).toBe(202);
      const limited = await browser.send('POST', '/api/me/verification');
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // An expired link does not verify either (its expiry moved into the past in the store).
      const newest = linkIn(await waitForMail(email, /Confirm your e-mail address/, { count: 4 }), `${svc.url}/verify-email#`).split('#')[1];
      expect(newest).not.toBe(second);
      await svc.store.collection('email_links').updateOne({ _id: sha256(newest) }, { $set: { expires_at: new Date(Date.now() - 1000) } });
      expect((await svc.call('POST', '/api/auth/verify-email', { body: { token: newest } })).status).toBe(400);
      expect((await browser.send('GET', '/api/me')).body.email_verified).toBe(false);
    });

    it('throttles password reset requests per address and per client, the same for unknown addresses', async () => {
      const email = freshAddress('throttle');
      const from = (ip: string) => ({ 'x-forwarded-for': ip });
      for (let i = 0; i < 3; i++)
        expect((await svc.call('POST', '/api/auth/password-reset', { body: { email }, headers: from(`203.0.113.${i}`) })).status).toBe(202);
      const perEmail = await svc.call('POST', '/api/auth/password-reset', { body: { email }, headers: from('203.0.113.9') });
      expect(perEmail.status).toBe(429);
      expect(perEmail.body.message).toMatch(/^Too many password reset requests for this address or from yours\. Try again in \d+ minutes\.$/);
      for (let i = 0; i < 10; i++)
        expect((await svc.call('POST', '/api/auth/password-reset', { body: { email: freshAddress('any') }, headers: from('198.51.100.7') })).status).toBe(202);
      expect((await svc.call('POST', '/api/auth/password-reset', { body: { email: freshAddress('any') }, headers: from('198.51.100.7') })).status).toBe(429);
      const bad = await svc.call('POST', '/api/auth/password-reset', { body: { email: 'not an address' } });
      expect(bad).toMatchObject({ status: 400, body: { message: '"email" must be an e-mail address' } });
    });

    it('tells the owner of a key used from a new /24, not from its first network nor twice from one', async () => {
      const email = freshAddress('network');
      const owner = await createOwner(svc, 100, email);
      const { key, ping: read } = await pingServer(svc, owner);
      await read('127.0.0.1'); // its first network: where its owner put it to work
      const networks = svc.store.collection('key_networks');
      await until('the first network to be recorded', async () => (await networks.countDocuments({ key_id: key.id })) === 1);
      await read('127.0.1.7');
      const alert = await waitForMail(email, /was used from a new network/);
      expect(alert.Subject).toBe(`Your API key "${key.name}" was used from a new network`);
      expect(alert.Text).toContain(`(${key.prefix}…) was used from a network it had not been used from before: 127.0.1.0/24`);
      expect(alert.Text).toContain('on the server "test server"');
      expect(alert.Text).toContain(`${svc.url}/keys`);
      await read('127.0.1.200'); // the same /24
      await read('127.0.0.9'); // the first one
      await read('127.0.2.1');
      await waitForMail(email, /was used from a new network/, { count: 2 });
      await until('the outbox to send', async () => (await outbox(svc, 'queued')).length === 0);
      const subjects = (await mailTo(email)).map((m) => m.Subject);
      expect(subjects.filter((s) => /new network/.test(s))).toHaveLength(2);
      expect((await readMail((await mailTo(email))[1].ID)).Text).toContain('127.0.2.0/24');
      // Turned off on Settings: nothing more.
      const off = await svc.call('PUT', '/api/me/email-alerts', { token: owner.token, body: { key_new_network: false } });
      expect(off.body).toEqual({ email_alerts: { credits_low: true, account_reconnect: true, key_new_network: false } });
      await read('127.0.3.1');
      await until('the outbox to settle', async () => (await outbox(svc, 'queued')).length === 0);
      expect((await mailTo(email)).length).toBe(2);
    });

    it('refuses bad alert settings and unsubscribe links that are not its own', async () => {
      const owner = await createOwner(svc, 0, freshAddress('settings'));
      const notBool = await svc.call('PUT', '/api/me/email-alerts', { token: owner.token, body: { credits_low: 'no' } });
      expect(notBool).toMatchObject({ status: 400, body: { message: '"credits_low" must be true (e-mail me) or false' } });
      expect((await svc.call('PUT', '/api/me/email-alerts', { token: owner.token, body: { weekly_digest: true } })).status).toBe(400);
      const token = svc.mail!.alerts.unsubscribeToken(owner.id, 'credits_low');
      for (const forged of [token.replace('credits_low', 'key_new_network'), token.slice(0, -1), `${owner.id}.credits_low`, 'x'.repeat(300)]) {
        const res = await svc.call('POST', `/api/unsubscribe?token=${encodeURIComponent(forged)}`);
        expect(res.status, forged).toBe(400);
      }
      const page = await fetch(`${svc.url}/unsubscribe?token=nonsense`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(400);
      expect(await page.text()).toContain('This unsubscribe link is not valid');
    });

    it('says what e-mail is at start, without the SMTP password', () => {
      const line = svc.logs.find((l) => l.includes('e-mail on'))!;
      expect(JSON.parse(line)).toMatchObject({ smtp: `smtp://${smtp!.host}`, from: 'Tool Server <no-reply@tool-server.test>' });
      expect(line).toContain('open sign-up: anyone may sign up, and the address is verified by e-mail');
    });
  });

  describe('when the SMTP server fails', () => {
    let svc: TestService | undefined;
    afterEach(async () => {
      await svc?.close();
      svc = undefined;
    });
    const throughRelay = async (mode: 'up' | 'down' | 'hang', env: Record<string, string> = {}) => {
      const relay = await startTcpRelay({ host: smtp!.hostname, port: Number(smtp!.port) }, mode);
      // A user and password in the URL: the peer accepts any, and no log may show it.
      svc = await startTestService({ ...MAIL_ENV, SMTP_URL: `smtp://tester:smtp-pass-${'s3cret'}@127.0.0.1:${relay.port}`, MAIL_RETRY_SECONDS: '1', ...env });
      return relay;
    };

    it('answers at once while the server is stuck, tries again while it is gone, and delivers once it is back', async () => {
      const relay = await throughRelay('hang');
      const email = freshAddress('stuck');
      const owner = await createOwner(svc!, 0, email);
      // The request only queues the message: it is answered while the server holds the connection silent.
      const asked = await svc!.call('POST', '/api/auth/password-reset', { body: { email } });
      expect(asked.status).toBe(202);
      await until('the outbox to connect', async () => relay.accepted() > 0);
      relay.set('down');
      await until('a failed attempt', async () => (await metric(svc!, 'tool_server_mail_total{kind="password_reset",result="failed_attempt"}')) >= 2);
      const [waiting] = await outbox(svc!, 'queued');
      expect(waiting).toMatchObject({ kind: 'password_reset', owner_id: owner.id, state: 'queued', attempts: expect.any(Number) });
      expect(waiting.last_error).toBeTruthy();
      relay.set('up');
      const mail = await waitForMail(email, /Reset your Tool Server password/);
      expect(await metric(svc!, 'tool_server_mail_total{kind="password_reset",result="sent"}')).toBe(1);
      const logs = svc!.logs.join('\n');
      expect(logs).toContain('mail not sent yet: will try again');
      expect(logs).not.toContain('s3cret');
      expect(logs).not.toContain(linkIn(mail, `${svc!.url}/reset-password#`).split('#')[1]);
      await relay.close();
    });

    it('gives a message up after MAIL_ATTEMPTS, or at once when the server refuses it for good, and counts it', async () => {
      const relay = await throughRelay('down', { MAIL_ATTEMPTS: '2' });
      const email = freshAddress('gone');
      const owner = await createOwner(svc!, 0, email);
      await svc!.call('POST', '/api/auth/password-reset', { body: { email } });
      await until('the message to be given up', async () => (await outbox(svc!, 'failed')).length === 1);
      const [failed] = await outbox(svc!, 'failed');
      expect(failed).toMatchObject({ kind: 'password_reset', owner_id: owner.id, attempts: 2, next_at: null });
      expect(Object.keys(failed).sort()).toEqual(['attempts', 'created_at', 'done_at', 'id', 'kind', 'last_error', 'next_at', 'owner_id', 'state']);
      expect(await metric(svc!, 'tool_server_mail_total{kind="password_reset",result="given_up"}')).toBe(1);
      expect(svc!.logs.find((l) => l.includes('mail given up'))).toContain(`"ownerId":"${owner.id}"`);
      // Its content is gone from the store.
      expect((await svc!.store.collection('mail_outbox').find({}))[0]).not.toHaveProperty('sealed');

      // A mailbox the server does not have (550): given up after one attempt.
      relay.set('up');
      const nowhere = await createOwner(svc!, 0, 'nobody@mailbox.invalid');
      await svc!.call('POST', '/api/auth/password-reset', { body: { email: 'nobody@mailbox.invalid' } });
      await until('the refusal', async () => (await outbox(svc!, 'failed')).length === 2);
      const refused = (await outbox(svc!, 'failed')).find((m) => m.owner_id === nowhere.id);
      expect(refused).toMatchObject({ attempts: 1, last_error: expect.stringContaining('550') });
      expect(await metric(svc!, 'tool_server_mail_total{kind="password_reset",result="given_up"}')).toBe(2);
      await relay.close();
    });
  });

  // The accounts code tells of an owner's account that needs reconnecting: a Jira account connected through the
  // Atlassian OAuth sandbox whose grant the user revokes there (its refresh is refused).
  describe.each(stores)('a connected account on the $name', ({ enabled, env }) => {
    let svc: TestService;
    let sandboxes: OAuthSandboxes;
    beforeAll(async () => {
      if (!enabled) return;
      sandboxes = await startOAuthSandboxes();
      svc = await startTestService({ ...MAIL_ENV, ...APP_ENV, ...env(), TOOL_SPECS_DIR: sandboxes.specsDir, KEY_CACHE_MS: '0' });
      sandboxes.register(svc.url);
    }, 180_000);
    afterAll(async () => {
      await svc?.close();
      await sandboxes?.close();
    });

    /** An owner signed up in a browser over HTTP, address confirmed through the e-mail. */
    async function verifiedOwner(email: string): Promise<HttpBrowser> {
      const browser = new HttpBrowser(svc.url);
      const id = await browser.signUp(email, PASSWORD);
      const link = linkIn(await waitForMail(email, /Confirm your e-mail address/), `${svc.url}/verify-email#`);
      expect((await svc.call('POST', '/api/auth/verify-email', { body: { token: link.split('#')[1] } })).status).toBe(200);
      await svc.call('POST', `/api/admin/owners/${id}/credits`, { token: svc.operatorToken, body: { amount: 100 } });
      return browser;
    }

    /** Connects Jira (its first site) through the sandbox's consent page and the site picker. */
    async function connectJira(b: HttpBrowser, accountId?: string): Promise<string> {
      const started = accountId
        ? await b.api('POST', `/api/accounts/${accountId}/reconnect`, {})
        : await b.api('POST', '/api/accounts/connect', { provider: 'tracker', name: 'Team Jira' });
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const consent = await b.follow(started.body.authorize_url);
      let page = await b.consent(consent.url, consent.html);
      if (new URL(page.url).pathname === '/connect/choose') {
        const flow = new URL(page.url).searchParams.get('flow');
        const chosen = await b.api('POST', `/api/connect/flows/${flow}/choose`, { choice: sandboxes.atlassian.sites[0].cloudId });
        expect(chosen.status, JSON.stringify(chosen.body)).toBe(200);
        page = await b.follow(new URL(chosen.body.redirect_to, svc.url).href);
      }
      expect(new URL(page.url).pathname, page.html.slice(0, 2000)).toBe('/accounts');
      return new URL(page.url).searchParams.get('connected')!;
    }

    it.skipIf(!enabled)('e-mails the owner once per move to needs_reauth, with the reason and the reconnect link', { timeout: 180_000 }, async () => {
      const email = freshAddress('reconnect');
      const b = await verifiedOwner(email);
      const id = await connectJira(b);
      const server = await b.api('POST', '/api/servers', { name: 'jira' });
      await b.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: 'tracker_search_issues', account_id: id });
      const key = await b.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'agent' });
      const client = await connectV1(svc.url, server.body.id, key.body.key);
      const search = () => client.callTool({ name: 'tracker_search_issues', arguments: { jql: 'project = DEMO', max_results: 1 } }) as Promise<ToolResult>;
      try {
        succeeded(await search());
        // The user revokes the app at Atlassian: the access token and the refresh are refused.
        sandboxes.atlassian.revokeApp(APPS.tracker.clientId);
        expect(failed(await search()).code).toBe('account_needs_reauth');
        const alert = await waitForMail(email, /Reconnect your Jira Cloud account/);
        expect(alert.Subject).toBe('Reconnect your Jira Cloud account "Team Jira"');
        expect(alert.Text).toContain('Your Jira Cloud account "Team Jira" needs you:');
        expect(alert.Text).toContain(`Reconnect the account:\n${svc.url}/accounts/${id}/reconnect`);
        expect((await mailHeaders(alert.ID))['List-Unsubscribe-Post']).toEqual(['List-Unsubscribe=One-Click']);
        // Still refused, still needs_reauth: no second e-mail.
        expect(failed(await search()).code).toBe('account_needs_reauth');
        expect((await b.api('POST', `/api/accounts/${id}/verify`)).body).toMatchObject({ verified: false, state: 'needs_reauth' });
        await until('the outbox to send', async () => (await outbox(svc, 'queued')).length === 0);
        expect((await mailTo(email)).filter((m) => /Reconnect your/.test(m.Subject))).toHaveLength(1);

        // Reconnected in place, then revoked again: a new change, a second e-mail.
        expect(await connectJira(b, id)).toBe(id);
        succeeded(await search());
        sandboxes.atlassian.revokeApp(APPS.tracker.clientId);
        expect(failed(await search()).code).toBe('account_needs_reauth');
        await waitForMail(email, /Reconnect your Jira Cloud account/, { count: 2 });

        // Turned off on Settings: the next change is not e-mailed.
        await b.api('PUT', '/api/me/email-alerts', { account_reconnect: false });
        expect(await connectJira(b, id)).toBe(id);
        succeeded(await search());
        sandboxes.atlassian.revokeApp(APPS.tracker.clientId);
        expect(failed(await search()).code).toBe('account_needs_reauth');
        await until('the outbox to send', async () => (await outbox(svc, 'queued')).length === 0);
        expect((await mailTo(email)).filter((m) => /Reconnect your/.test(m.Subject))).toHaveLength(2);
      } finally {
        await client.close();
      }
    });
  });

  it.skipIf(!MONGODB_URL)('sends each message once with two instances on one MongoDB', async () => {
    const { url } = mongoTestUrl('email_two');
    const env = { ...MAIL_ENV, MONGODB_URL: url, MASTER_KEY: randomBytes(32).toString('hex'), TRUST_PROXY: 'true' };
    const [a, b] = [await startTestService(env), await startTestService(env)];
    try {
      const owners = await Promise.all(Array.from({ length: 8 }, (_, i) => createOwner(a, 0, freshAddress(`twice${i}`))));
      const emails = await Promise.all(owners.map(async (o) => (await a.call('GET', '/api/me', { token: o.token })).body.email as string));
      // Half asked on each instance, at once; both instances' senders look for due messages all the while.
      await Promise.all(
        emails.map((email, i) => (i % 2 ? a : b).call('POST', '/api/auth/password-reset', { body: { email }, headers: { 'x-forwarded-for': `192.0.2.${i}` } })),
      );
      await Promise.all([a.mail!.outbox.kick(), b.mail!.outbox.kick(), a.mail!.outbox.kick(), b.mail!.outbox.kick()]);
      for (const email of emails) await waitForMail(email, /Reset your Tool Server password/);
      await until('both outboxes to be empty', async () => (await outbox(a, 'queued')).length === 0);
      for (const email of emails) expect((await mailTo(email)).length, email).toBe(1);
      expect((await outbox(a, 'sent')).map((m) => m.attempts)).toEqual(Array(8).fill(1));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('e-mail off (no SMTP_URL)', { timeout: 60_000 }, () => {
  it('keeps open sign-up for this machine only, says so at start, and turns off what needs e-mail', async () => {
    const local = await startTestService({ STARTING_CREDITS: '10', TRUST_PROXY: 'true' });
    try {
      expect(local.logs.find((l) => l.includes('e-mail off'))).toContain(
        'open sign-up is for local use only, since e-mail is off: only a browser on this machine may sign up, and only while PUBLIC_URL is a loopback address',
      );
      const here = await new Browser(local).send('POST', '/api/auth/signup', { email: freshAddress('local'), password: PASSWORD });
      expect(here.status).toBe(201);
      const far = await new Browser(local).send(
        'POST',
        '/api/auth/signup',
        { email: freshAddress('far'), password: PASSWORD },
        { 'x-forwarded-for': '203.0.113.5' },
      );
      expect(far.status).toBe(403);
      expect(far.body.message).toMatch(/^Sign-up on this service is for local use only: it has no e-mail to verify addresses/);
      const me = await new Browser(local).send('POST', '/api/auth/login', { email: here.body.email, password: PASSWORD });
      expect(me.status).toBe(200);
      const reset = await local.call('POST', '/api/auth/password-reset', { body: { email: here.body.email } });
      expect(reset).toMatchObject({ status: 403, body: { message: expect.stringMatching(/^Password reset by e-mail is off on this service/) } });
      const page = await (await fetch(`${local.url}/signup`, { headers: { 'x-forwarded-for': '203.0.113.5' } })).text();
      expect(page).toContain('Sign-up on this service is for local use only');
      expect(await (await fetch(`${local.url}/login`)).text()).toContain('Forgot your password? This service sends no e-mail: ask its operator.');
    } finally {
      await local.close();
    }
    const hosted = await startTestService({ PUBLIC_URL: 'https://tools.example.com' });
    try {
      const refused = await new Browser(hosted, 'https://tools.example.com').send('POST', '/api/auth/signup', {
        email: freshAddress('hosted'),
        password: PASSWORD,
      });
      expect(refused.status).toBe(403);
    } finally {
      await hosted.close();
    }
  });

  it('refuses half an e-mail configuration, never echoing the SMTP URL', () => {
    expect(() => loadConfig({ MAIL_FROM: 'a@b.example' })).toThrow(/MAIL_FROM is set but SMTP_URL is not/);
    expect(() => loadConfig({ SMTP_URL: 'smtp://127.0.0.1:1025' })).toThrow(/MAIL_FROM must be an e-mail address or "Name <address>" when SMTP_URL is set/);
    expect(() => loadConfig({ SMTP_URL: 'http://u:hunter2@mail.example', MAIL_FROM: 'a@b.example' })).toThrow(/SMTP_URL must be smtp:/);
    try {
      loadConfig({ SMTP_URL: 'http://u:hunter2@mail.example', MAIL_FROM: 'a@b.example' });
    } catch (err) {
      expect((err as Error).message).not.toContain('hunter2');
    }
    expect(loadConfig({ SMTP_URL: 'smtps://u:p@mail.example:465', MAIL_FROM: 'Tools <tools@example.com>' }).mail).toEqual({
      smtpUrl: 'smtps://u:p@mail.example:465',
      smtpShown: 'smtps://mail.example:465',
      from: 'Tools <tools@example.com>',
      retryMs: 10_000,
      attempts: 8,
    });
  });

  it('names the network of an address: a /24, a /48, an IPv4-mapped address as IPv4', () => {
    expect(networkOf('203.0.113.77')).toBe('203.0.113.0/24');
    expect(networkOf('::ffff:198.51.100.3')).toBe('198.51.100.0/24');
    expect(networkOf('2001:db8:abcd:12::1')).toBe('2001:db8:abcd::/48');
    expect(networkOf('not an address')).toBeNull();
  });
});
