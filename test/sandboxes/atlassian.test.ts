import http from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AUDIENCE, startAtlassianSandbox, type AtlassianSandbox } from '../../sandboxes/atlassian/atlassian-sandbox.ts';
import { listenOnLoopback, type RunningSandbox } from '../../sandboxes/harness.ts';
import { SEED_USERS } from '../../sandboxes/jira/jira-sandbox.ts';
import { DAY, MINUTE, SECOND, SandboxClock } from '../../sandboxes/oauth/clock.ts';
import type { OAuthClient } from '../../sandboxes/oauth/oauth.ts';
import { chromiumAvailable, launchChromium } from '../browser/chromium.ts';
import { clickThrough, codeOf, consent, getPage, requestIdOf } from '../support/oauth-consent.ts';

const CALLBACK = 'https://tools.example.com/connect/callback';
const APP: OAuthClient = { clientId: 'tool-server-app', clientSecret: 'app-secret', redirectUris: [CALLBACK], name: 'Tool Server' };
const OTHER: OAuthClient = { clientId: 'other-app', clientSecret: 'other-secret', redirectUris: ['https://other.example.com/cb'], name: 'Other' };
const SCOPES = 'read:jira-work write:jira-work read:jira-user offline_access';
const INVALID_REFRESH = { error: 'invalid_grant', error_description: 'Unknown or invalid refresh token.' };

function authorizeUrl(sim: AtlassianSandbox, params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  const all = {
    audience: AUDIENCE,
    client_id: APP.clientId,
    scope: SCOPES,
    redirect_uri: CALLBACK,
    state: 's-123',
    response_type: 'code',
    prompt: 'consent',
    ...params,
  };
  for (const [name, value] of Object.entries(all)) if (value !== undefined) query.set(name, value);
  return `${sim.authUrl}/authorize?${query}`;
}

async function token(sim: AtlassianSandbox, body: unknown, contentType = 'application/json'): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const exchange = (sim: AtlassianSandbox, code: string, extra: Record<string, unknown> = {}) =>
  token(sim, { grant_type: 'authorization_code', client_id: APP.clientId, client_secret: APP.clientSecret, code, redirect_uri: CALLBACK, ...extra });

const refresh = (sim: AtlassianSandbox, refreshToken: string) =>
  token(sim, { grant_type: 'refresh_token', client_id: APP.clientId, client_secret: APP.clientSecret, refresh_token: refreshToken });

/** Consent, then the code exchange: the first token pair of a grant. */
async function connect(sim: AtlassianSandbox, scope = SCOPES): Promise<{ access: string; refresh: string }> {
  const answer = await exchange(sim, codeOf(await consent(authorizeUrl(sim, { scope })), 's-123'));
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return { access: answer.json.access_token, refresh: answer.json.refresh_token };
}

async function api(sim: AtlassianSandbox, path: string, accessToken: string, init: RequestInit = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.apiUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'content-type': 'application/json', ...init.headers },
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe('Atlassian sandbox: authorize and consent', () => {
  let sim: AtlassianSandbox;
  beforeAll(async () => {
    sim = await startAtlassianSandbox({ clients: [APP, { ...OTHER, scopes: ['read:jira-work'] }] });
  });
  afterAll(() => sim.close());

  it('renders a consent page with the app, the scopes in words and the user’s two sites, under a strict CSP', async () => {
    const page = await getPage(authorizeUrl(sim));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.html).toContain('Tool Server is requesting access to your Atlassian account');
    expect(page.html).toContain('View Jira issue data');
    expect(page.html).toContain('Create and manage issues');
    expect(page.html).toContain('View user profiles');
    for (const site of sim.sites) expect(page.html).toContain(site.name);
    expect(sim.sites).toHaveLength(2);
    expect(page.html).toContain(`Signed in as ${SEED_USERS.alice.displayName}`);
    expect(page.html).toMatch(/<button[^>]*value="accept"[^>]*>Accept<\/button>/);
    expect(page.html).toMatch(/<button[^>]*value="cancel"[^>]*>Cancel<\/button>/);
    // No script and nothing fetched from anywhere.
    expect(page.html).not.toMatch(/<script|<link|src=/i);
  });

  it('shows an error page, never a redirect, for an unknown client or an unregistered redirect_uri', async () => {
    const unknown = await getPage(authorizeUrl(sim, { client_id: 'nobody' }));
    expect(unknown.status).toBe(400);
    expect(unknown.location).toBeNull();
    expect(unknown.html).toContain('invalid client_id');
    for (const redirect_uri of ['https://evil.example.com/cb', `${CALLBACK}/extra`, undefined]) {
      const wrong = await getPage(authorizeUrl(sim, { redirect_uri }));
      expect(wrong.status).toBe(400);
      expect(wrong.location).toBeNull();
      expect(wrong.html).toContain('does not match any callback URL registered for Tool Server');
    }
  });

  it('refuses scopes the app has not added, on the page, in Atlassian’s words', async () => {
    const page = await getPage(authorizeUrl(sim, { client_id: OTHER.clientId, redirect_uri: OTHER.redirectUris[0], scope: 'read:jira-work write:jira-work' }));
    expect(page.status).toBe(400);
    expect(page.html).toContain(
      'This app has requested scopes that have not been added to the app. Configure the app at https://developer.atlassian.com/apps and add the following scopes to the app: write:jira-work.',
    );
  });

  it('redirects the other request errors to the registered redirect_uri, with the state', async () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ audience: 'api.example.com' }, 'access_denied'],
      [{ audience: undefined }, 'access_denied'],
      [{ scope: undefined }, 'invalid_request'],
    ];
    for (const [params, error] of cases) {
      const page = await getPage(authorizeUrl(sim, params));
      expect(page.status).toBe(302);
      const to = new URL(page.location!);
      expect(to.origin + to.pathname).toBe(CALLBACK);
      expect(to.searchParams.get('error')).toBe(error);
      expect(to.searchParams.get('state')).toBe('s-123');
    }
  });

  it('Cancel sends the user back with error=access_denied and the state', async () => {
    const back = await consent(authorizeUrl(sim), 'cancel');
    expect(back.origin + back.pathname).toBe(CALLBACK);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('s-123');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('Accept sends the user back with a code and the state; the form can be answered once', async () => {
    const page = await getPage(authorizeUrl(sim));
    const post = () =>
      fetch(`${sim.authUrl}/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `request=${requestIdOf(page.html)}&decision=accept`,
      });
    const first = await post();
    expect(first.status).toBe(302);
    expect(codeOf(new URL(first.headers.get('location')!), 's-123')).toMatch(/.{20,}/);
    const again = await post();
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('expired or was already answered');
  });

  it('serves the consent pages from a handler mounted under any path of another server', async () => {
    const host: RunningSandbox = await listenOnLoopback((req, res) => {
      const prefix = '/sandbox-consent/tracker';
      if (!req.url?.startsWith(`${prefix}/`)) return void res.writeHead(404).end();
      req.url = req.url.slice(prefix.length);
      sim.pages(req, res);
    });
    try {
      const mounted = authorizeUrl(sim).replace(sim.authUrl, `${host.url}/sandbox-consent/tracker`);
      const back = await consent(mounted);
      const answer = await exchange(sim, codeOf(back, 's-123'));
      expect(answer.status).toBe(200);
      expect((await getPage(`${host.url}/sandbox-consent/tracker/oauth/token`)).status).toBe(404);
    } finally {
      await host.close();
    }
  });
});

describe('Atlassian sandbox: the token endpoint', () => {
  let sim: AtlassianSandbox;
  let clock: SandboxClock;
  beforeEach(async () => {
    clock = new SandboxClock(Date.UTC(2026, 0, 5, 9, 0));
    sim = await startAtlassianSandbox({ clients: [APP, OTHER], clock });
  });
  afterEach(() => sim.close());

  it('exchanges a code for an hour-long access token and a refresh token (offline_access)', async () => {
    const answer = await exchange(sim, codeOf(await consent(authorizeUrl(sim))));
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.json).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(answer.json).toMatchObject({ expires_in: 3600, token_type: 'Bearer', scope: SCOPES });
    expect(sim.tokenRequests).toEqual([{ at: clock.now(), grantType: 'authorization_code', clientId: APP.clientId, status: 200 }]);
    // A JWT, as Atlassian's access tokens are: a client may read its expiry.
    const claims = JSON.parse(Buffer.from(answer.json.access_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ sub: SEED_USERS.alice.accountId, aud: APP.clientId, scope: SCOPES, exp: claims.iat + 3600 });
  });

  it('gives no refresh token without offline_access', async () => {
    const answer = await exchange(sim, codeOf(await consent(authorizeUrl(sim, { scope: 'read:jira-work' }))));
    expect(answer.status).toBe(200);
    expect(answer.json.refresh_token).toBeUndefined();
    expect(answer.json.scope).toBe('read:jira-work');
  });

  it('takes a code once, within ten minutes, from its own client and with its redirect_uri', async () => {
    const bad = { error: 'invalid_grant', error_description: 'Invalid authorization code' };
    const code = codeOf(await consent(authorizeUrl(sim)));
    expect((await exchange(sim, code)).status).toBe(200);
    expect(await exchange(sim, code)).toEqual({ status: 403, json: bad });

    const late = codeOf(await consent(authorizeUrl(sim)));
    clock.advance(10 * MINUTE);
    expect(await exchange(sim, late)).toEqual({ status: 403, json: bad });

    const foreign = codeOf(await consent(authorizeUrl(sim)));
    const asOther = await token(sim, {
      grant_type: 'authorization_code',
      client_id: OTHER.clientId,
      client_secret: OTHER.clientSecret,
      code: foreign,
      redirect_uri: CALLBACK,
    });
    expect(asOther).toEqual({ status: 403, json: bad });
    expect((await exchange(sim, foreign)).status).toBe(200);

    const moved = codeOf(await consent(authorizeUrl(sim)));
    const wrongRedirect = await exchange(sim, moved, { redirect_uri: 'https://tools.example.com/other' });
    expect(wrongRedirect.status).toBe(403);
    expect(wrongRedirect.json.error).toBe('invalid_grant');
  });

  it('answers bad client credentials, bodies and grant types as Atlassian does', async () => {
    const code = codeOf(await consent(authorizeUrl(sim)));
    expect(await exchange(sim, code, { client_secret: 'wrong' })).toEqual({ status: 401, json: { error: 'access_denied', error_description: 'Unauthorized' } });
    expect(await exchange(sim, code, { client_id: 'nobody' })).toEqual({ status: 401, json: { error: 'access_denied', error_description: 'Unauthorized' } });
    // The secret goes in the JSON body: a form body is not what Atlassian documents.
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: APP.clientId,
      client_secret: APP.clientSecret,
      code,
      redirect_uri: CALLBACK,
    });
    expect((await token(sim, form.toString(), 'application/x-www-form-urlencoded')).json.error).toBe('invalid_request');
    expect(await token(sim, { client_id: APP.clientId, client_secret: APP.clientSecret })).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'Missing required parameter: grant_type' },
    });
    expect(await token(sim, { grant_type: 'client_credentials', client_id: APP.clientId, client_secret: APP.clientSecret })).toEqual({
      status: 403,
      json: { error: 'unsupported_grant_type', error_description: 'Unsupported grant type: client_credentials' },
    });
    // The code survived all of that.
    expect((await exchange(sim, code)).status).toBe(200);
    // Every request is counted, by the grant type it named ('' when it named none a JSON reader could see).
    expect(sim.tokenRequestCount('authorization_code')).toBe(3);
    expect(sim.tokenRequestCount('')).toBe(2);
    expect(sim.tokenRequests.filter((r) => r.status === 401).map((r) => r.error)).toEqual(['access_denied', 'access_denied']);
  });

  it('rotates the refresh token on every refresh and refuses refusals with 403 invalid_grant', async () => {
    const first = await connect(sim);
    const r1 = await refresh(sim, first.refresh);
    expect(r1.status).toBe(200);
    expect(r1.json).toMatchObject({ expires_in: 3600, token_type: 'Bearer', scope: SCOPES });
    expect(r1.json.refresh_token).not.toBe(first.refresh);
    expect(r1.json.access_token).not.toBe(first.access);
    const r2 = await refresh(sim, r1.json.refresh_token);
    expect(r2.status).toBe(200);
    expect(await refresh(sim, 'never-issued')).toEqual({ status: 403, json: INVALID_REFRESH });
    expect(sim.tokenRequestCount('refresh_token')).toBe(3);
  });

  it('tolerates the reuse of a spent refresh token for ten minutes (both edges)', async () => {
    const { refresh: spent } = await connect(sim);
    const rotated = await refresh(sim, spent);
    expect(rotated.status).toBe(200);
    clock.advance(9 * MINUTE + 59 * SECOND);
    const inside = await refresh(sim, spent);
    expect(inside.status).toBe(200);
    expect(inside.json.refresh_token).not.toBe(rotated.json.refresh_token);
    clock.advance(1 * SECOND); // exactly ten minutes after the first use
    expect((await refresh(sim, spent)).status).toBe(200);
    // Every token issued inside the leeway works.
    expect((await refresh(sim, rotated.json.refresh_token)).status).toBe(200);
    expect((await refresh(sim, inside.json.refresh_token)).status).toBe(200);
  });

  it('revokes every refresh token of the grant when a spent one comes back after the leeway', async () => {
    const { refresh: spent } = await connect(sim);
    const rotated = await refresh(sim, spent);
    // A second chain of the same grant (the user consented again).
    const second = await connect(sim);
    clock.advance(10 * MINUTE + 1 * SECOND);
    expect(await refresh(sim, spent)).toEqual({ status: 403, json: INVALID_REFRESH });
    expect(await refresh(sim, rotated.json.refresh_token)).toEqual({ status: 403, json: INVALID_REFRESH });
    expect(await refresh(sim, second.refresh)).toEqual({ status: 403, json: INVALID_REFRESH });
    expect(sim.grants()).toEqual([
      expect.objectContaining({ clientId: APP.clientId, subject: SEED_USERS.alice.accountId, revoked: false, liveRefreshTokens: 0 }),
    ]);
    // The user consents again: a new chain works.
    const fresh = await connect(sim);
    expect((await refresh(sim, fresh.refresh)).status).toBe(200);
  });

  it('expires a refresh token after 90 days without use; each use starts the 90 days again', async () => {
    let { refresh: current } = await connect(sim);
    for (let i = 0; i < 2; i++) {
      clock.advance(89 * DAY);
      const answer = await refresh(sim, current);
      expect(answer.status, `refresh after 89 days, round ${i + 1}`).toBe(200);
      current = answer.json.refresh_token;
    }
    clock.advance(90 * DAY + 1 * SECOND);
    expect(await refresh(sim, current)).toEqual({ status: 403, json: INVALID_REFRESH });
  });

  it('ends every chain 365 days after its authorization, however often it was used', async () => {
    let { refresh: current } = await connect(sim);
    for (let day = 80; day <= 320; day += 80) {
      clock.advance(80 * DAY);
      const answer = await refresh(sim, current);
      expect(answer.status, `refresh on day ${day}`).toBe(200);
      current = answer.json.refresh_token;
    }
    clock.advance(45 * DAY); // day 365: still inside
    const lastDay = await refresh(sim, current);
    expect(lastDay.status).toBe(200);
    clock.advance(1 * DAY); // day 366
    expect(await refresh(sim, lastDay.json.refresh_token)).toEqual({ status: 403, json: INVALID_REFRESH });
  });

  it('ends the grant when the user removes the app or changes their password', async () => {
    for (const act of [() => sim.revokeApp(APP.clientId), () => sim.changePassword()]) {
      const tokens = await connect(sim);
      expect((await api(sim, '/oauth/token/accessible-resources', tokens.access)).status).toBe(200);
      act();
      expect(await refresh(sim, tokens.refresh)).toEqual({ status: 403, json: INVALID_REFRESH });
      expect(await api(sim, '/oauth/token/accessible-resources', tokens.access)).toEqual({ status: 401, json: { code: 401, message: 'Unauthorized' } });
      expect(sim.grants().at(-1)?.revoked).toBe(true);
    }
  });

  it('answers scripted failures of the token endpoint (provider down, garbage)', async () => {
    const { refresh: current } = await connect(sim);
    sim.faults.push({ pathPrefix: '/oauth/token', status: 503, body: '<html>Service Unavailable</html>' });
    const res = await fetch(`${sim.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', client_id: APP.clientId, client_secret: APP.clientSecret, refresh_token: current }),
    });
    expect([res.status, await res.text()]).toEqual([503, '<html>Service Unavailable</html>']);
    // The failed request never reached the token endpoint: the refresh token is still unspent.
    expect((await refresh(sim, current)).status).toBe(200);
    expect(sim.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(3);
  });

  it('counts exactly the token requests that arrive, under concurrency', async () => {
    const { refresh: current } = await connect(sim);
    const answers = await Promise.all(Array.from({ length: 5 }, () => refresh(sim, current)));
    // One rotates, the four others reuse it inside the leeway.
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(sim.tokenRequestCount('refresh_token')).toBe(5);
    expect(sim.tokenRequestCount()).toBe(6);
  });
});

describe('Atlassian sandbox: sites and the API gateway', () => {
  let sim: AtlassianSandbox;
  let clock: SandboxClock;
  beforeAll(async () => {
    clock = new SandboxClock();
    sim = await startAtlassianSandbox({ clients: [APP], clock });
  });
  afterAll(() => sim.close());

  it('lists the two sites of the grant at accessible-resources', async () => {
    const { access } = await connect(sim);
    const answer = await api(sim, '/oauth/token/accessible-resources', access);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(
      sim.sites.map((s) => ({
        id: s.cloudId,
        name: s.name,
        url: s.url,
        scopes: ['read:jira-work', 'write:jira-work', 'read:jira-user'],
        avatarUrl: expect.any(String),
      })),
    );
    expect(await api(sim, '/oauth/token/accessible-resources', 'not-a-token')).toEqual({ status: 401, json: { code: 401, message: 'Unauthorized' } });
  });

  it('routes /ex/jira/<cloudId> to that site’s own data', async () => {
    const { access } = await connect(sim);
    const [a, b] = sim.sites;
    const me = await api(sim, `/ex/jira/${a.cloudId}/rest/api/3/myself`, access);
    expect(me.status).toBe(200);
    expect(me.json.accountId).toBe(SEED_USERS.alice.accountId);
    const created = await api(sim, `/ex/jira/${b.cloudId}/rest/api/3/issue`, access, {
      method: 'POST',
      body: JSON.stringify({ fields: { project: { key: 'DEMO' }, issuetype: { name: 'Task' }, summary: 'Made on the second site' } }),
    });
    expect(created.status).toBe(201);
    expect(b.jira.issue(created.json.key)?.summary).toBe('Made on the second site');
    expect(a.jira.issue(created.json.key)?.summary).not.toBe('Made on the second site');
    expect(b.jira.requests.at(-1)).toMatchObject({ method: 'POST', path: '/rest/api/3/issue', gateway: true });
    expect(await api(sim, `/ex/jira/00000000-0000-0000-0000-000000000000/rest/api/3/myself`, access)).toEqual({
      status: 404,
      json: { code: 404, message: 'Cannot find a site with this cloud id' },
    });
  });

  it('refuses a 3LO token at the site’s own URL', async () => {
    const { access } = await connect(sim);
    const res = await fetch(`${sim.sites[0].url}/rest/api/3/myself`, { headers: { authorization: `Bearer ${access}` } });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: 'Client must be authenticated to access this resource.', 'status-code': 401 });
  });

  it('refuses a token without the scope a route needs', async () => {
    const { access } = await connect(sim, 'read:jira-work offline_access');
    const cloud = sim.sites[0].cloudId;
    expect((await api(sim, `/ex/jira/${cloud}/rest/api/3/search/jql?jql=project%3DDEMO`, access)).status).toBe(200);
    const write = await api(sim, `/ex/jira/${cloud}/rest/api/3/issue/DEMO-1/comment`, access, { method: 'POST', body: '{}' });
    expect(write).toEqual({ status: 401, json: { code: 401, message: 'Unauthorized; scope does not match' } });
    expect((await api(sim, `/ex/jira/${cloud}/rest/api/3/myself`, access)).status).toBe(401);
  });

  it('answers an expired access token with the gateway’s 401, and a refreshed one works', async () => {
    const tokens = await connect(sim);
    const cloud = sim.sites[0].cloudId;
    clock.advance(60 * MINUTE);
    expect(await api(sim, `/ex/jira/${cloud}/rest/api/3/myself`, tokens.access)).toEqual({ status: 401, json: { code: 401, message: 'Unauthorized' } });
    const renewed = await refresh(sim, tokens.refresh);
    expect((await api(sim, `/ex/jira/${cloud}/rest/api/3/myself`, renewed.json.access_token)).status).toBe(200);
  });

  it('a site the user leaves is gone from accessible-resources and refused at the gateway', async () => {
    const own = await startAtlassianSandbox({ clients: [APP] });
    try {
      const { access } = await connect(own);
      const [kept, left] = own.sites;
      own.leaveSite(left.cloudId);
      const resources = await api(own, '/oauth/token/accessible-resources', access);
      expect(resources.json.map((r: { id: string }) => r.id)).toEqual([kept.cloudId]);
      expect((await api(own, `/ex/jira/${left.cloudId}/rest/api/3/myself`, access)).status).toBe(404);
      expect((await api(own, `/ex/jira/${kept.cloudId}/rest/api/3/myself`, access)).status).toBe(200);
      expect(own.sites.map((s) => s.cloudId)).toEqual([kept.cloudId]);
    } finally {
      await own.close();
    }
  });

  it('still takes scoped API tokens (Basic) through the gateway', async () => {
    const site = sim.sites[0];
    const bob = SEED_USERS.bob;
    const basic = `Basic ${Buffer.from(`${bob.email}:${bob.scopedApiToken}`).toString('base64')}`;
    const res = await fetch(`${sim.apiUrl}/ex/jira/${site.cloudId}/rest/api/3/myself`, { headers: { authorization: basic } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { accountId: string }).accountId).toBe(bob.accountId);
  });
});

describe('Atlassian sandbox: an account with one site, or none', () => {
  it('lists what the user has', async () => {
    for (const sites of [[{ name: 'solo' }], []]) {
      const sim = await startAtlassianSandbox({ clients: [APP], sites });
      try {
        const page = await getPage(authorizeUrl(sim));
        if (sites.length === 0) expect(page.html).toContain('You have no Jira site yet');
        const { access } = await connect(sim);
        const answer = await api(sim, '/oauth/token/accessible-resources', access);
        expect(answer.json.map((r: { name: string }) => r.name)).toEqual(sites.map((s) => s.name));
      } finally {
        await sim.close();
      }
    }
  });
});

describe.skipIf(!chromiumAvailable)('Atlassian sandbox: consent in Chromium', () => {
  let sim: AtlassianSandbox;
  let app: RunningSandbox;
  let browser: Browser;
  beforeAll(async () => {
    app = await listenOnLoopback((_req: http.IncomingMessage, res: http.ServerResponse) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Connected.'),
    );
    const callback = `${app.url}/connect/callback`;
    sim = await startAtlassianSandbox({ clients: [{ ...APP, redirectUris: [callback] }] });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([sim?.close(), app?.close()]);
  });

  it('a person reads the page and clicks Accept; the code it yields works', async () => {
    const callback = `${app.url}/connect/callback`;
    const { landed, heading, problems } = await clickThrough(browser, authorizeUrl(sim, { redirect_uri: callback }), callback, 'Accept');
    expect(heading).toBe('Tool Server is requesting access to your Atlassian account');
    expect(problems).toEqual([]);
    const answer = await exchange(sim, codeOf(landed, 's-123'), { redirect_uri: callback });
    expect(answer.status).toBe(200);
  }, 60_000);

  it('Cancel lands on the callback with access_denied', async () => {
    const callback = `${app.url}/connect/callback`;
    const { landed } = await clickThrough(browser, authorizeUrl(sim, { redirect_uri: callback }), callback, 'Cancel');
    expect(landed.searchParams.get('error')).toBe('access_denied');
  }, 60_000);
});
