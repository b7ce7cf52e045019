// The audit trail over real HTTP: an owner does everything an owner can (sign-up, sign-in, accounts, servers,
// tools, scoped keys, a connected app, password change...), the operator grants credits, an OAuth client
// revokes its own token; every change is then in GET /api/audit with its actor, address and user agent, never
// with a secret; owners see only their own events, the operator all of them; paging, filters, exports and
// retention work.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s256 } from '../runtime/oauth/grants.ts';
import { type Owner, type TestService, createOwner, startTestService } from './support/service.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const USER_AGENT = 'audit-test/1.0 (loopback)';
const PASSWORD = 'first long passphrase';
const NEW_PASSWORD = 'second long passphrase';
const VERIFIER = 'v'.repeat(50);

let svc: TestService;
let upstream: DemoUpstream;
let other: Owner;
const email = `audited-${Date.now()}@example.com`;
/** Every secret the run handles: none may appear in the trail. */
const secrets: string[] = [PASSWORD, NEW_PASSWORD];
let ownerId = '';
let session = { cookie: '', csrf: '' };
let token = '';

/** A request as the dashboard (session cookie + CSRF) or a script (bearer token) sends it. */
async function api(method: string, p: string, o: { body?: unknown; bearer?: string; session?: boolean } = {}) {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  if (o.session) Object.assign(headers, { cookie: session.cookie, 'x-csrf-token': session.csrf, origin: svc.url });
  const res = await fetch(svc.url + p, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // CSV
  }
  if (res.status >= 400 && res.status !== 401) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return { status: res.status, body, headers: res.headers, text };
}

const form = (p: string, fields: Record<string, string>) =>
  fetch(svc.url + p, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': USER_AGENT },
    body: new URLSearchParams(fields),
  });

function signedIn(res: { headers: Headers; body: { csrf_token: string } }) {
  session = { cookie: res.headers.get('set-cookie')!.split(';')[0], csrf: res.body.csrf_token };
  secrets.push(session.cookie.split('=')[1], session.csrf);
}

/** Every event of the signed-in owner, page by page (5 a page, to exercise the cursor). */
async function allEvents(query = ''): Promise<Array<Record<string, any>>> {
  const events: Array<Record<string, any>> = [];
  let cursor: string | null = null;
  do {
    const page = await api('GET', `/api/audit?limit=5${query}${cursor ? `&cursor=${cursor}` : ''}`, { bearer: token });
    events.push(...page.body.events);
    cursor = page.body.next_cursor;
  } while (cursor);
  return events;
}

beforeAll(async () => {
  upstream = await startDemoUpstream();
  svc = await startTestService({ TOOL_SPECS_DIR: path.resolve('test/fixtures/specs'), KEY_CACHE_MS: '0' });
  secrets.push(svc.operatorToken, upstream.token);

  // Sign-up, sign-out, a wrong password, a sign-in: all as the dashboard does it.
  const signup = await api('POST', '/api/auth/signup', { body: { email, password: PASSWORD } });
  ownerId = signup.body.id;
  signedIn(signup);
  await api('POST', '/api/auth/logout', { session: true });
  expect((await api('POST', '/api/auth/login', { body: { email, password: 'not the password' } })).status).toBe(401);
  signedIn(await api('POST', '/api/auth/login', { body: { email, password: PASSWORD } }));
  token = (await api('POST', '/api/me/tokens', { session: true, body: { name: 'ci script' } })).body.token;
  secrets.push(token);

  // The operator grants credits; a script with the management token builds a server.
  await api('POST', `/api/admin/owners/${ownerId}/credits`, { bearer: svc.operatorToken, body: { amount: 500 } });
  const account = await api('POST', '/api/accounts', { bearer: token, body: { kind: 'demo', name: 'Demo', base_url: upstream.url, token: upstream.token } });
  await api('PATCH', `/api/accounts/${account.body.id}`, { bearer: token, body: { token: 'tok_rotated_secret_0001' } });
  secrets.push('tok_rotated_secret_0001');
  await api('PATCH', `/api/accounts/${account.body.id}`, { bearer: token, body: { token: upstream.token } });
  await api('POST', `/api/accounts/${account.body.id}/verify`, { bearer: token });
  const server = (await api('POST', '/api/servers', { bearer: token, body: { name: 'Audited', id: 'audited' } })).body.id;
  await api('PATCH', `/api/servers/${server}`, { bearer: token, body: { name: 'Audited server' } });
  const tool = await api('POST', `/api/servers/${server}/tools`, { bearer: token, body: { base_tool: 'demo_ping', account_id: account.body.id } });
  await api('PATCH', `/api/servers/${server}/tools/${tool.body.id}`, { bearer: token, body: { description: 'Pings' } });
  const echo = await api('POST', `/api/servers/${server}/tools`, { bearer: token, body: { base_tool: 'demo_echo', account_id: account.body.id } });

  // Keys: a scoped server key changed and revoked, a global key linked and unlinked, then revoke-all.
  const key = await api('POST', `/api/servers/${server}/api-keys`, {
    bearer: token,
    body: { name: 'reader', access: 'read', credit_limit: { credits: 5, per: 'day' } },
  });
  await api('PATCH', `/api/servers/${server}/api-keys/${key.body.id}`, { bearer: token, body: { tools: ['demo_ping'], access: 'all' } });
  await api('DELETE', `/api/servers/${server}/api-keys/${key.body.id}`, { bearer: token });
  const global = await api('POST', '/api/api-keys', { bearer: token, body: { name: 'global' } });
  await api('POST', `/api/api-keys/${global.body.id}/servers/${server}`, { bearer: token });
  await api('DELETE', `/api/api-keys/${global.body.id}/servers/${server}`, { bearer: token });
  const spare = await api('POST', `/api/servers/${server}/api-keys`, { bearer: token, body: { name: 'spare' } });
  secrets.push(key.body.key, global.body.key, spare.body.key);

  // A connected app: denied once, approved with restrictions, restricted again, revoked by its own client.
  const redirect = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${svc.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Audited app', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
  });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const request = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: s256(VERIFIER),
    code_challenge_method: 'S256',
    resource: `${svc.url}/mcp/${server}`,
  };
  await api('POST', '/api/oauth/authorize', { bearer: token, body: { ...request, decision: 'deny' } });
  const approved = await api('POST', '/api/oauth/authorize', { session: true, body: { ...request, decision: 'approve', tools: ['demo_ping'] } });
  const code = new URL(approved.body.redirect_to).searchParams.get('code')!;
  const tokens = (await (
    await form('/oauth/token', { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirect, code_verifier: VERIFIER })
  ).json()) as { access_token: string; refresh_token: string };
  secrets.push(code, tokens.access_token, tokens.refresh_token);
  const grant = (await api('GET', '/api/oauth/grants', { bearer: token })).body.grants[0];
  await api('PATCH', `/api/oauth/grants/${grant.id}`, { session: true, body: { credit_limit: { credits: 3, per: 'month' } } });
  expect((await form('/oauth/revoke', { client_id: clientId, token: tokens.refresh_token })).status).toBe(200);
  await api('POST', `/api/servers/${server}/api-keys/revoke-all`, { bearer: token });

  // Tear down, then the owner's own settings.
  await api('DELETE', `/api/servers/${server}/tools/${tool.body.id}`, { bearer: token });
  await api('DELETE', `/api/servers/${server}/tools/${echo.body.id}`, { bearer: token });
  await api('DELETE', `/api/accounts/${account.body.id}`, { bearer: token });
  await api('DELETE', `/api/servers/${server}`, { bearer: token });
  await api('POST', '/api/me/password', { session: true, body: { current_password: PASSWORD, new_password: NEW_PASSWORD, revoke_tokens: false } });
  const throwaway = await api('POST', '/api/me/tokens', { session: true, body: { name: 'throwaway' } });
  secrets.push(throwaway.body.token);
  await api('DELETE', `/api/me/tokens/${throwaway.body.id}`, { session: true });
  await api('POST', '/api/me/sessions/revoke-all', { session: true });

  other = await createOwner(svc, 10);
});

afterAll(async () => {
  await Promise.all([svc?.close(), upstream?.close()]);
});

describe('GET /api/audit', () => {
  it('has every management change and sign-in event of the owner, newest first, with actor, address and user agent', async () => {
    const events = await allEvents();
    const actions = events.map((e) => e.action);
    for (const action of [
      'owner.create',
      'signout',
      'signin.fail',
      'signin.ok',
      'token.create',
      'credits.grant',
      'account.create',
      'account.update',
      'account.verify',
      'server.create',
      'server.update',
      'tool.create',
      'tool.update',
      'key.create',
      'key.update',
      'key.revoke',
      'key.link',
      'key.unlink',
      'grant.deny',
      'grant.approve',
      'grant.update',
      'grant.revoke',
      'key.revoke_all',
      'tool.delete',
      'account.delete',
      'server.delete',
      'password.change',
      'token.revoke',
      'session.revoke_all',
    ])
      expect(actions, action).toContain(action);
    // Newest first, and the first event is the sign-up.
    const times = events.map((e) => new Date(e.at).getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(actions.at(-1)).toBe('owner.create');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);

    /** The first event of an action (the trail is newest first). */
    const one = (action: string) => [...events].reverse().find((e) => e.action === action)!;
    expect(one('signin.fail')).toMatchObject({ owner_id: ownerId, actor: { type: 'anonymous' }, target: { type: 'owner', id: ownerId, name: email } });
    expect(one('signin.ok').actor.type).toBe('session');
    expect(events.find((e) => e.action === 'token.create' && e.target.name === 'ci script')).toMatchObject({ actor: { type: 'session' } });
    expect(one('server.create')).toMatchObject({ actor: { type: 'token', name: 'ci script' }, target: { type: 'server', id: 'audited', name: 'Audited' } });
    expect(one('server.update').changes).toEqual({ name: { from: 'Audited', to: 'Audited server' } });
    expect(one('credits.grant')).toMatchObject({ actor: { type: 'operator' }, changes: { amount: 500 } });
    expect(one('key.create')).toMatchObject({
      target: { type: 'key', name: 'reader' },
      changes: { kind: 'server', server_id: 'audited', access: 'read', credit_limit: { credits: 5, per: 'day' } },
    });
    expect(one('key.update').changes).toEqual({ tools: { from: null, to: ['demo_ping'] }, access: { from: 'read', to: 'all' } });
    expect(one('grant.approve')).toMatchObject({
      actor: { type: 'session' },
      target: { type: 'oauth_client', name: 'Audited app' },
      changes: { tools: ['demo_ping'] },
    });
    expect(one('grant.update').changes).toEqual({ credit_limit: { from: null, to: { credits: 3, per: 'month' } } });
    // The client's own revocation names the client as the actor.
    expect(events.find((e) => e.action === 'grant.revoke' && e.actor.type === 'oauth_client')).toMatchObject({
      actor: { name: 'Audited app' },
      changes: { reason: 'revoked by the client' },
    });
    expect(one('account.update').changes).toEqual({ token: '[redacted]' });
    expect(one('account.verify').changes).toEqual({ verified: true });
    for (const e of events) {
      expect(e.ip, e.action).toMatch(/127\.0\.0\.1$/);
      if (e.action !== 'grant.revoke' || e.actor.type !== 'oauth_client') expect(e.user_agent, e.action).toBe(USER_AGENT);
    }
  });

  it('never holds a secret: no password, key, token, code, session or account secret', async () => {
    const json = JSON.stringify(await allEvents());
    const csv = (await api('GET', '/api/audit?format=csv', { bearer: token })).text;
    const admin = JSON.stringify((await api('GET', '/api/admin/audit?limit=200', { bearer: svc.operatorToken })).body);
    for (const secret of secrets) {
      expect(json).not.toContain(secret);
      expect(csv).not.toContain(secret);
      expect(admin).not.toContain(secret);
    }
    expect(json).not.toMatch(/mcp(k|o|at|rt|ac|op)_[A-Za-z0-9]{8}/);
  });

  it('filters by action or family of actions and by time; refuses bad filters naming them', async () => {
    const keys = await allEvents('&action=key');
    expect(keys.length).toBeGreaterThanOrEqual(6);
    expect(keys.every((e) => e.action.startsWith('key.'))).toBe(true);
    const fails = await allEvents('&action=signin.fail,password.change');
    expect(fails.map((e) => e.action).sort()).toEqual(['password.change', 'signin.fail']);
    const all = await allEvents();
    const middle = all[Math.floor(all.length / 2)];
    const older = await allEvents(`&to=${encodeURIComponent(middle.at)}`);
    expect(older.every((e) => e.at <= middle.at)).toBe(true);
    expect(older.length).toBeLessThan(all.length);
    expect(await allEvents(`&from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    const bad = async (q: string) => {
      const res = await fetch(`${svc.url}/api/audit?${q}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, q).toBe(400);
      return ((await res.json()) as { message: string }).message;
    };
    expect(await bad('action=key.explode')).toMatch(/^"action": key.explode is not an action/);
    expect(await bad('from=yesterday')).toContain('"from" must be an ISO 8601 time');
    expect(await bad('limit=1000')).toBe('"limit" must be an integer from 1 to 200');
    expect(await bad('cursor=abc')).toContain('"cursor" is not a cursor of this list');
  });

  it('exports CSV and JSON downloads of every matching event', async () => {
    const all = await allEvents();
    const csv = await api('GET', '/api/audit?format=csv', { bearer: token });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-.+\.csv"$/);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('at,owner_id,actor_type,actor_id,actor_name,action,target_type,target_id,target_name,ip,user_agent,changes');
    expect(lines).toHaveLength(all.length + 1);
    expect(csv.text).toContain(',key.update,key,');
    const json = await api('GET', '/api/audit?format=json&action=grant', { bearer: token });
    expect(json.headers.get('content-disposition')).toMatch(/\.json"$/);
    expect(json.body.events.map((e: { action: string }) => e.action).sort()).toEqual(['grant.approve', 'grant.deny', 'grant.revoke', 'grant.update']);
  });

  it('shows an owner only their own events; the operator sees everyone’s', async () => {
    const theirs = (await api('GET', '/api/audit', { bearer: other.token })).body.events as Array<{ owner_id: string; action: string }>;
    expect(theirs.map((e) => e.action)).toEqual(['credits.grant', 'owner.create']);
    expect(theirs.every((e) => e.owner_id === other.id)).toBe(true);
    expect((await fetch(`${svc.url}/api/admin/audit`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    const admin = (await api('GET', '/api/admin/audit?limit=200', { bearer: svc.operatorToken })).body.events as Array<{ owner_id: string }>;
    expect(new Set(admin.map((e) => e.owner_id))).toEqual(new Set([ownerId, other.id]));
    const one = (await api('GET', `/api/admin/audit?owner=${other.id}`, { bearer: svc.operatorToken })).body.events as Array<{ owner_id: string }>;
    expect(one.map((e) => e.owner_id)).toEqual([other.id, other.id]);
  });

  it('forgets events older than AUDIT_RETENTION_DAYS at the hourly housekeeping', async () => {
    const [oldest] = (await allEvents()).slice(-1);
    await svc.store.collection('audit_events').updateOne({ _id: oldest.id }, { $set: { at: new Date(Date.now() - 366 * 86_400_000) } });
    const before = (await allEvents()).length;
    await svc.housekeeping();
    const after = await allEvents();
    expect(after).toHaveLength(before - 1);
    expect(after.map((e) => e.id)).not.toContain(oldest.id);
  });
  it('defuses formulas in what outsiders write (a failed sign-in’s user agent): after whitespace or invisible characters, and quotes ;-separated cells', async () => {
    const agents = ['\u00A0 =HYPERLINK("http://127.0.0.1:9/x","click")', '\u00AD@SUM(1+1)*cmd', '\u00A0-2+3', 'ok;=1+2;x', '+1\t2'];
    for (const ua of agents) {
      const res = await fetch(`${svc.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': ua },
        body: JSON.stringify({ email: `nobody-${agents.indexOf(ua)}@example.com`, password: 'a wrong password' }),
      });
      expect(res.status).toBe(401);
    }
    const csv = (await api('GET', '/api/admin/audit?format=csv&action=signin.fail', { bearer: svc.operatorToken })).text;
    expect(csv).toContain(',"\'\u00A0 =HYPERLINK(""http://127.0.0.1:9/x"",""click"")",');
    expect(csv).toContain(",'\u00AD@SUM(1+1)*cmd,");
    expect(csv).toContain(",'\u00A0-2+3,");
    expect(csv).toContain(',"ok;=1+2;x",');
    expect(csv).toContain(',"\'+1\t2",');
  });
});
