import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { listenOnLoopback, type RunningSandbox } from '../../sandboxes/harness.ts';
import { startNotionSandbox, type NotionSandbox } from '../../sandboxes/notion/notion-sandbox.ts';
import { MINUTE, SandboxClock } from '../../sandboxes/oauth/clock.ts';
import type { OAuthClient } from '../../sandboxes/oauth/oauth.ts';
import { NOTION } from '../../sandboxes/oauth/unverified.ts';
import { chromiumAvailable, launchChromium } from '../browser/chromium.ts';
import { clickThrough, codeOf, consent, getPage } from '../support/oauth-consent.ts';

const CALLBACK = 'https://tools.example.com/connect/callback';
/** An integration with one redirect URI, and one with two. */
const APP: OAuthClient = { clientId: 'notion-app', clientSecret: 'notion-secret', redirectUris: [CALLBACK], name: 'Tool Server' };
const TWO: OAuthClient = { clientId: 'two-uris', clientSecret: 'two-secret', redirectUris: [CALLBACK, 'https://tools.example.com/other'], name: 'Two' };

const basic = (client: OAuthClient, secret = client.clientSecret) => `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}`;

function authorizeUrl(sim: NotionSandbox, params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  const all = { client_id: APP.clientId, redirect_uri: CALLBACK, response_type: 'code', owner: 'user', state: 'n-1', ...params };
  for (const [name, value] of Object.entries(all)) if (value !== undefined) query.set(name, value);
  return `${sim.url}/v1/oauth/authorize?${query}`;
}

async function post(sim: NotionSandbox, path: string, body: unknown, authorization: string | undefined = basic(APP)): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.url}/v1/oauth/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'notion-version': '2025-09-03', ...(authorization ? { authorization } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const exchange = (sim: NotionSandbox, code: string, extra: Record<string, unknown> = { redirect_uri: CALLBACK }, auth?: string) =>
  post(sim, 'token', { grant_type: 'authorization_code', code, ...extra }, auth);
const refresh = (sim: NotionSandbox, refreshToken: string) => post(sim, 'token', { grant_type: 'refresh_token', refresh_token: refreshToken });

/** Consent sharing the given pages, then the code exchange. */
async function connect(sim: NotionSandbox, pages: string[] = [sim.ids.welcomePage]): Promise<{ access: string; refresh: string; json: any }> {
  const back = await consent(
    authorizeUrl(sim),
    'accept',
    pages.map((id) => ['page', id]),
  );
  const answer = await exchange(sim, codeOf(back, 'n-1'));
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return { access: answer.json.access_token, refresh: answer.json.refresh_token, json: answer.json };
}

async function api(sim: NotionSandbox, path: string, accessToken: string, init: RequestInit = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.url}/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${accessToken}`, 'notion-version': '2025-09-03', 'content-type': 'application/json' },
  });
  return { status: res.status, json: await res.json() };
}

const UNAUTHORIZED = { object: 'error', status: 401, code: 'unauthorized', message: 'API token is invalid.' };

describe('Notion OAuth: authorize and consent', () => {
  let sim: NotionSandbox;
  beforeAll(async () => {
    sim = await startNotionSandbox({ oauth: { clients: [APP, TWO] } });
  });
  afterAll(() => sim.close());

  it('renders a consent page where the user picks the workspace’s pages to share', async () => {
    const page = await getPage(authorizeUrl(sim));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.html).toContain('Tool Server would like to access Simulated Workspace');
    expect(page.html).toContain('<legend>Pages Tool Server can access</legend>');
    const checkbox = (id: string, label: string) => new RegExp(`<label\\s*><input\\s+type="checkbox"\\s+name="page"\\s+value="${id}"\\s*/>${label}</label`);
    expect(page.html).toMatch(checkbox(sim.ids.welcomePage, 'Welcome'));
    expect(page.html).toMatch(checkbox(sim.ids.privatePage, 'Private notes'));
    // Only top-level pages are offered: their children come with them.
    expect(page.html).not.toContain(sim.ids.gettingStartedPage);
    expect(page.html).toMatch(/<button[^>]*value="accept"[^>]*>Allow access<\/button>/);
  });

  it('applies the redirect_uri rules at authorize', async () => {
    const pageOf = async (params: Record<string, string | undefined>) => {
      const page = await getPage(authorizeUrl(sim, params));
      expect(page.location).toBeNull();
      return page;
    };
    expect((await pageOf({ client_id: 'nobody' })).html).toContain('invalid client_id');
    expect((await pageOf({ redirect_uri: 'https://evil.example.com/cb' })).html).toContain('is not one of the redirect URIs of Tool Server');
    expect((await pageOf({ client_id: TWO.clientId, redirect_uri: undefined })).html).toContain('has several redirect URIs');
    expect((await pageOf({ owner: undefined })).html).toContain('owner must be user');
    // With one registered URI the request may leave it out: the user goes back there.
    const back = await consent(authorizeUrl(sim, { redirect_uri: undefined }));
    expect(back.origin + back.pathname).toBe(CALLBACK);
  });

  it('Cancel sends the user back with error=access_denied and the state', async () => {
    const back = await consent(authorizeUrl(sim), 'cancel');
    expect(back.origin + back.pathname).toBe(CALLBACK);
    expect(Object.fromEntries(back.searchParams)).toEqual({ error: 'access_denied', state: 'n-1' });
  });
});

describe('Notion OAuth: the token endpoint', () => {
  let sim: NotionSandbox;
  let clock: SandboxClock;
  beforeEach(async () => {
    clock = new SandboxClock(Date.UTC(2026, 2, 1));
    sim = await startNotionSandbox({ oauth: { clients: [APP, TWO], clock } });
  });
  afterEach(() => sim.close());

  it('answers a code with the token, the bot, the workspace and the owner, exactly as Notion does', async () => {
    const { json } = await connect(sim);
    expect(Object.keys(json).sort()).toEqual(
      [
        'access_token',
        'bot_id',
        'duplicated_template_id',
        'owner',
        'refresh_token',
        'request_id',
        'token_type',
        'workspace_icon',
        'workspace_id',
        'workspace_name',
      ].sort(),
    );
    expect(json).toMatchObject({
      token_type: 'bearer',
      workspace_name: 'Simulated Workspace',
      workspace_id: sim.oauth.workspace.id,
      workspace_icon: sim.oauth.workspace.icon,
      duplicated_template_id: null,
      owner: { type: 'user', user: { object: 'user', id: sim.oauth.user.id, type: 'person', person: { email: 'ada@example.com' } } },
    });
    expect(typeof json.refresh_token).toBe('string');
    const me = await api(sim, '/users/me', json.access_token);
    expect(me.json).toMatchObject({ object: 'user', id: json.bot_id, type: 'bot', name: 'Tool Server', bot: { owner: { type: 'user' } } });
  });

  it('requires HTTP Basic client credentials', async () => {
    const code = codeOf(await consent(authorizeUrl(sim)));
    const invalidClient = { status: 401, json: { error: 'invalid_client', error_description: 'Invalid client credentials.' } };
    expect(await exchange(sim, code, { redirect_uri: CALLBACK }, basic(APP, 'wrong'))).toEqual(invalidClient);
    expect(
      await post(
        sim,
        'token',
        { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, client_id: APP.clientId, client_secret: APP.clientSecret },
        '',
      ),
    ).toEqual(invalidClient);
    expect((await exchange(sim, code)).status).toBe(200);
    expect(sim.oauth.tokenRequests.map((r) => r.status)).toEqual([401, 401, 200]);
  });

  it('takes a code once and within ten minutes', async () => {
    const code = codeOf(await consent(authorizeUrl(sim)));
    expect((await exchange(sim, code)).status).toBe(200);
    const spent = await exchange(sim, code);
    expect(spent.status).toBe(400);
    expect(spent.json.error).toBe('invalid_grant');
    expect((await exchange(sim, 'never-issued')).json.error).toBe('invalid_grant');
    const late = codeOf(await consent(authorizeUrl(sim)));
    clock.advance(10 * MINUTE);
    expect((await exchange(sim, late)).json.error).toBe('invalid_grant');
  });

  it('applies the redirect_uri rules at the token endpoint', async () => {
    // The authorize URL carried one: the token request must carry the same.
    const missing = await exchange(sim, codeOf(await consent(authorizeUrl(sim))), {});
    expect(missing.status).toBe(400);
    expect(missing.json.error).toBe('invalid_request');
    const other = await exchange(sim, codeOf(await consent(authorizeUrl(sim))), { redirect_uri: 'https://tools.example.com/other' });
    expect(other.status).toBe(400);
    expect(other.json.error).toBe('invalid_grant');
    // It had none (the integration has exactly one): the token request must not carry one.
    const extra = await exchange(sim, codeOf(await consent(authorizeUrl(sim, { redirect_uri: undefined }))), { redirect_uri: CALLBACK });
    expect(extra.status).toBe(400);
    expect(extra.json.error).toBe('invalid_request');
    expect((await exchange(sim, codeOf(await consent(authorizeUrl(sim, { redirect_uri: undefined }))), {})).status).toBe(200);
    // An integration with several: required, and it must match.
    const twoCode = codeOf(await consent(authorizeUrl(sim, { client_id: TWO.clientId, redirect_uri: 'https://tools.example.com/other' })));
    expect((await exchange(sim, twoCode, { redirect_uri: 'https://tools.example.com/other' }, basic(TWO))).status).toBe(200);
  });

  it('rotates the refresh token: each refresh gives a new pair and ends the previous refresh token', async () => {
    const first = await connect(sim);
    const renewed = await refresh(sim, first.refresh);
    expect(renewed.status).toBe(200);
    expect(renewed.json.refresh_token).not.toBe(first.refresh);
    expect(renewed.json.access_token).not.toBe(first.access);
    expect(renewed.json.bot_id).toBe(first.json.bot_id);
    expect(await refresh(sim, first.refresh)).toEqual({ status: 400, json: { error: 'invalid_grant', error_description: 'Invalid refresh token.' } });
    expect((await refresh(sim, 'nrt_unknown')).json.error).toBe('invalid_grant');
    expect((await refresh(sim, renewed.json.refresh_token)).status).toBe(200);
    expect(sim.oauth.tokenRequestCount('refresh_token')).toBe(4);
  });

  it('expires the access token after its lifetime (a test control) with Notion’s 401; a refreshed one works', async () => {
    const tokens = await connect(sim);
    clock.advance(NOTION.accessTokenTtlMs - 1);
    expect((await api(sim, '/users/me', tokens.access)).status).toBe(200);
    clock.advance(1);
    expect(await api(sim, '/users/me', tokens.access)).toEqual({ status: 401, json: { ...UNAUTHORIZED, request_id: expect.any(String) } });
    const renewed = await refresh(sim, tokens.refresh);
    expect((await api(sim, '/users/me', renewed.json.access_token)).status).toBe(200);

    const short = await startNotionSandbox({ oauth: { clients: [APP], clock, accessTokenTtlMs: 5 * MINUTE } });
    try {
      const pair = await connect(short);
      clock.advance(5 * MINUTE);
      expect((await api(short, '/users/me', pair.access)).status).toBe(401);
    } finally {
      await short.close();
    }
  });

  it('introspects and revokes; revoking ends the authorization', async () => {
    const tokens = await connect(sim);
    const active = await post(sim, 'introspect', { token: tokens.access });
    expect(active).toEqual({
      status: 200,
      json: { active: true, scope: expect.any(String), iat: Math.floor(clock.now() / 1000), request_id: expect.any(String) },
    });
    expect((await post(sim, 'introspect', { token: tokens.refresh })).json.active).toBe(true);
    expect((await post(sim, 'introspect', { token: 'nope' })).json.active).toBe(false);
    expect((await post(sim, 'introspect', { token: tokens.access }, basic(APP, 'wrong'))).status).toBe(401);

    expect(await post(sim, 'revoke', { token: tokens.access })).toEqual({ status: 200, json: { request_id: expect.any(String) } });
    expect((await post(sim, 'introspect', { token: tokens.access })).json.active).toBe(false);
    expect((await post(sim, 'introspect', { token: tokens.refresh })).json.active).toBe(false);
    expect((await api(sim, '/users/me', tokens.access)).status).toBe(401);
    expect((await refresh(sim, tokens.refresh)).json.error).toBe('invalid_grant');
    // Revoke and introspect are not token requests.
    expect(sim.oauth.tokenRequestCount()).toBe(2);
  });

  it('a new authorization mints a new pair and ends the earlier one', async () => {
    const first = await connect(sim);
    const second = await connect(sim);
    expect(second.json.bot_id).toBe(first.json.bot_id);
    expect((await api(sim, '/users/me', first.access)).status).toBe(401);
    expect((await refresh(sim, first.refresh)).json.error).toBe('invalid_grant');
    expect((await api(sim, '/users/me', second.access)).status).toBe(200);
  });
});

describe('Notion OAuth: the API behind the token', () => {
  let sim: NotionSandbox;
  beforeEach(async () => {
    sim = await startNotionSandbox({ oauth: { clients: [APP] } });
  });
  afterEach(() => sim.close());

  it('sees exactly the pages the user picked (and what is inside them)', async () => {
    const { access } = await connect(sim, [sim.ids.privatePage]);
    expect((await api(sim, `/pages/${sim.ids.privatePage}`, access)).status).toBe(200);
    expect((await api(sim, `/databases/${sim.ids.privateDatabase}`, access)).status).toBe(200);
    const welcome = await api(sim, `/pages/${sim.ids.welcomePage}`, access);
    expect(welcome.status).toBe(404);
    expect(welcome.json.code).toBe('object_not_found');
    // The internal integration's sharing is its own.
    expect((await api(sim, `/pages/${sim.ids.privatePage}`, sim.token)).status).toBe(404);
    expect((await api(sim, `/pages/${sim.ids.welcomePage}`, sim.token)).status).toBe(200);
  });

  it('may create a page at the workspace level, shared with it', async () => {
    const { access } = await connect(sim, []);
    const created = await api(sim, '/pages', access, {
      method: 'POST',
      body: JSON.stringify({ parent: { workspace: true }, properties: { title: { title: [{ text: { content: 'From the app' } }] } } }),
    });
    expect(created.status).toBe(200);
    expect((await api(sim, `/pages/${created.json.id}`, access)).status).toBe(200);
  });

  it('loses everything when the user removes the integration; consenting again starts from nothing', async () => {
    const tokens = await connect(sim, [sim.ids.welcomePage]);
    sim.oauth.revokeApp();
    expect((await api(sim, '/users/me', tokens.access)).status).toBe(401);
    expect((await refresh(sim, tokens.refresh)).json.error).toBe('invalid_grant');
    expect(sim.oauth.grants()).toEqual([expect.objectContaining({ revoked: true, liveAccessTokens: 0, liveRefreshTokens: 0 })]);
    const page = await getPage(authorizeUrl(sim));
    expect(page.html).not.toContain('checked');
    const again = await connect(sim, []);
    expect((await api(sim, `/pages/${sim.ids.welcomePage}`, again.access)).status).toBe(404);
  });
});

describe.skipIf(!chromiumAvailable)('Notion OAuth: consent in Chromium', () => {
  let sim: NotionSandbox;
  let app: RunningSandbox;
  let browser: Browser;
  beforeAll(async () => {
    app = await listenOnLoopback((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('Connected.'));
    sim = await startNotionSandbox({ oauth: { clients: [{ ...APP, redirectUris: [`${app.url}/connect/callback`] }] } });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([sim?.close(), app?.close()]);
  });

  it('a person ticks a page and allows access; the token reaches that page', async () => {
    const callback = `${app.url}/connect/callback`;
    const { landed, heading, problems } = await clickThrough(browser, authorizeUrl(sim, { redirect_uri: callback }), callback, 'Allow access', (page) =>
      page.getByLabel('Private notes').check(),
    );
    expect(heading).toBe('Tool Server would like to access Simulated Workspace');
    expect(problems).toEqual([]);
    const answer = await exchange(sim, codeOf(landed, 'n-1'), { redirect_uri: callback });
    expect(answer.status).toBe(200);
    expect((await api(sim, `/pages/${sim.ids.privatePage}`, answer.json.access_token)).status).toBe(200);
    expect((await api(sim, `/pages/${sim.ids.welcomePage}`, answer.json.access_token)).status).toBe(404);
  }, 60_000);
});
