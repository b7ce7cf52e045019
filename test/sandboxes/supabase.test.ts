import { createHash } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback, type RunningSandbox } from '../../sandboxes/harness.ts';
import { SandboxClock } from '../../sandboxes/oauth/clock.ts';
import type { OAuthClient } from '../../sandboxes/oauth/oauth.ts';
import { SUPABASE } from '../../sandboxes/oauth/unverified.ts';
import { SharedDatabase } from '../../sandboxes/postgrest/postgrest-sandbox.ts';
import { startSupabaseSandbox, type SupabaseSandbox } from '../../sandboxes/supabase/supabase-sandbox.ts';
import { chromiumAvailable, launchChromium } from '../browser/chromium.ts';
import { clickThrough, codeOf, consent, getPage } from '../support/oauth-consent.ts';

const CALLBACK = 'https://tools.example.com/connect/callback';
const APP: OAuthClient = { clientId: '3f9b8c1e-0d2a-4b6f-9e7c-5a4d3c2b1a00', clientSecret: 'sba_secret', redirectUris: [CALLBACK], name: 'Tool Server' };
const VERIFIER = 'v'.repeat(20) + 'erifier-of-forty-three-characters-or-more';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
const basic = (id = APP.clientId, secret = APP.clientSecret) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

// One Postgres for every sandbox of this file (each project is a tenant of it): a Postgres takes seconds to start.
let database: SharedDatabase;
beforeAll(async () => {
  database = await SharedDatabase.start();
}, 120_000);
afterAll(() => database?.close());

function authorizeUrl(sim: SupabaseSandbox, params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  const all = {
    client_id: APP.clientId,
    redirect_uri: CALLBACK,
    response_type: 'code',
    state: 'sb-1',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...params,
  };
  for (const [name, value] of Object.entries(all)) if (value !== undefined) query.set(name, value);
  return `${sim.url}/v1/oauth/authorize?${query}`;
}

async function token(
  sim: SupabaseSandbox,
  fields: Record<string, string>,
  init: { authorization?: string; contentType?: string } = {},
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.url}/v1/oauth/token`, {
    method: 'POST',
    headers: {
      'content-type': init.contentType ?? 'application/x-www-form-urlencoded',
      ...(init.authorization === '' ? {} : { authorization: init.authorization ?? basic() }),
    },
    body: init.contentType === 'application/json' ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
  });
  return { status: res.status, json: await res.json() };
}

const exchange = (sim: SupabaseSandbox, code: string, extra: Record<string, string> = {}) =>
  token(sim, { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: VERIFIER, ...extra });

/** Consent for an organization (by name), then the exchange. */
async function connect(sim: SupabaseSandbox, organization = 'Acme'): Promise<{ access: string; refresh: string }> {
  const slug = sim.organizations.find((o) => o.name === organization)!.slug;
  const answer = await exchange(sim, codeOf(await consent(authorizeUrl(sim), 'accept', [['organization', slug]]), 'sb-1'));
  expect(answer.status, JSON.stringify(answer.json)).toBe(201);
  return { access: answer.json.access_token, refresh: answer.json.refresh_token };
}

async function management(sim: SupabaseSandbox, path: string, accessToken: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sim.url}${path}`, { headers: { authorization: `Bearer ${accessToken}` } });
  return { status: res.status, json: await res.json() };
}

describe('Supabase OAuth: authorize, consent and tokens', () => {
  let sim: SupabaseSandbox;
  let clock: SandboxClock;
  beforeAll(async () => {
    clock = new SandboxClock(Date.UTC(2026, 4, 4, 12));
    sim = await startSupabaseSandbox({ clients: [APP], clock, database });
  }, 60_000);
  afterAll(() => sim?.close());

  it('renders a consent page where the user picks an organization', async () => {
    const page = await getPage(authorizeUrl(sim));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.html).toContain('<h1>Authorize Tool Server</h1>');
    expect(page.html).toContain('<legend>Organization</legend>');
    const [acme, side] = sim.organizations;
    expect(page.html).toMatch(new RegExp(`type="radio" name="organization" value="${acme.slug}" required />Acme\\s*<span class="muted">\\(1 project\\)`));
    expect(page.html).toMatch(new RegExp(`value="${side.slug}" required />Side projects\\s*<span class="muted">\\(0 projects\\)`));
    const preselected = await getPage(authorizeUrl(sim, { organization_slug: side.slug }));
    expect(preselected.html).toContain(`value="${side.slug}" required checked />`);
  });

  it('shows an error page for an unknown client, an unregistered redirect_uri, or more than 4 kB of redirect_uri and state', async () => {
    expect((await getPage(authorizeUrl(sim, { client_id: 'nobody' }))).html).toContain('invalid client_id');
    const wrong = await getPage(authorizeUrl(sim, { redirect_uri: 'https://evil.example.com/cb' }));
    expect([wrong.status, wrong.location]).toEqual([400, null]);
    const fits = 'x'.repeat(4096 - CALLBACK.length);
    expect((await getPage(authorizeUrl(sim, { state: fits }))).status).toBe(200);
    const tooLong = await getPage(authorizeUrl(sim, { state: `${fits}x` }));
    expect([tooLong.status, tooLong.location]).toEqual([400, null]);
    expect(tooLong.html).toContain('must not exceed 4 kB');
  });

  it('redirects the other request errors back with the state', async () => {
    for (const [params, error] of [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
    ] as const) {
      const page = await getPage(authorizeUrl(sim, params));
      expect(page.status).toBe(302);
      const to = new URL(page.location!);
      expect([to.searchParams.get('error'), to.searchParams.get('state')]).toEqual([error, 'sb-1']);
    }
    // Older docs spell the method in lower case.
    expect((await getPage(authorizeUrl(sim, { code_challenge_method: 's256' }))).status).toBe(200);
  });

  it('Cancel sends the user back with access_denied; Authorize without an organization asks for one', async () => {
    const back = await consent(authorizeUrl(sim), 'cancel');
    expect(Object.fromEntries(back.searchParams)).toEqual({ error: 'access_denied', state: 'sb-1' });
    const page = await getPage(authorizeUrl(sim));
    const request = /name="request" value="([^"]+)"/.exec(page.html)![1];
    const res = await fetch(`${sim.url}/v1/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `request=${request}&decision=accept`,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Choose the organization the app may manage.');
  });

  it('exchanges a code (form body, HTTP Basic, PKCE) for a 201 token pair', async () => {
    const slug = sim.organizations[0].slug;
    const answer = await exchange(sim, codeOf(await consent(authorizeUrl(sim), 'accept', [['organization', slug]])));
    expect(answer.status).toBe(201);
    expect(answer.json).toEqual({
      access_token: expect.stringMatching(/^sbp_oauth_[0-9a-f]{40}$/),
      refresh_token: expect.any(String),
      expires_in: SUPABASE.accessTokenTtlMs / 1000,
      token_type: 'Bearer',
    });
  });

  it('verifies PKCE: a missing or wrong verifier is refused and the code is spent', async () => {
    const slug = sim.organizations[0].slug;
    const code = () => consent(authorizeUrl(sim), 'accept', [['organization', slug]]).then((u) => codeOf(u));
    const missing = await token(sim, { grant_type: 'authorization_code', code: await code(), redirect_uri: CALLBACK });
    expect(missing).toEqual({ status: 400, json: { error: 'invalid_grant', error_description: 'code_verifier is required' } });
    const spentByWrong = await code();
    const wrong = await exchange(sim, spentByWrong, { code_verifier: `${VERIFIER}x` });
    expect(wrong).toEqual({ status: 400, json: { error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' } });
    expect((await exchange(sim, spentByWrong)).json.error).toBe('invalid_grant');
    // Without a challenge at authorize, no verifier is needed.
    const plain = codeOf(await consent(authorizeUrl(sim, { code_challenge: undefined, code_challenge_method: undefined }), 'accept', [['organization', slug]]));
    expect((await token(sim, { grant_type: 'authorization_code', code: plain, redirect_uri: CALLBACK })).status).toBe(201);
  });

  it('takes a code once, with its redirect_uri, from an authenticated client only', async () => {
    const slug = sim.organizations[0].slug;
    const code = codeOf(await consent(authorizeUrl(sim), 'accept', [['organization', slug]]));
    expect(await exchange(sim, code, {}).then((a) => a.status)).toBe(201);
    expect((await exchange(sim, code)).json.error).toBe('invalid_grant');
    const other = codeOf(await consent(authorizeUrl(sim), 'accept', [['organization', slug]]));
    expect(
      await token(
        sim,
        { grant_type: 'authorization_code', code: other, redirect_uri: CALLBACK, code_verifier: VERIFIER },
        { authorization: basic(APP.clientId, 'wrong') },
      ),
    ).toEqual({
      status: 401,
      json: { error: 'invalid_client', error_description: 'Invalid client credentials' },
    });
    expect((await exchange(sim, other, { redirect_uri: 'https://tools.example.com/else' })).json.error).toBe('invalid_grant');
    // A JSON body is not what the token endpoint takes.
    expect((await token(sim, { grant_type: 'refresh_token', refresh_token: 'x' }, { contentType: 'application/json' })).json.error).toBe('invalid_request');
    // The client may also authenticate in the form (RFC 6749 §2.3.1).
    const inForm = codeOf(await consent(authorizeUrl(sim), 'accept', [['organization', slug]]));
    const answer = await token(
      sim,
      {
        grant_type: 'authorization_code',
        code: inForm,
        redirect_uri: CALLBACK,
        code_verifier: VERIFIER,
        client_id: APP.clientId,
        client_secret: APP.clientSecret,
      },
      { authorization: '' },
    );
    expect(answer.status).toBe(201);
  });

  it('rotates the refresh token and refuses a spent one', async () => {
    const first = await connect(sim);
    const before = sim.tokenRequestCount('refresh_token');
    const renewed = await token(sim, { grant_type: 'refresh_token', refresh_token: first.refresh });
    expect(renewed.status).toBe(201);
    expect(renewed.json.refresh_token).not.toBe(first.refresh);
    expect(await token(sim, { grant_type: 'refresh_token', refresh_token: first.refresh })).toEqual({
      status: 400,
      json: { error: 'invalid_grant', error_description: 'Invalid refresh token' },
    });
    expect((await token(sim, { grant_type: 'refresh_token', refresh_token: renewed.json.refresh_token })).status).toBe(201);
    expect(sim.tokenRequestCount('refresh_token') - before).toBe(3);
  });

  it('answers an expired access token with 401; the refreshed one works', async () => {
    const tokens = await connect(sim);
    clock.advance(SUPABASE.accessTokenTtlMs);
    expect(await management(sim, '/v1/projects', tokens.access)).toEqual({ status: 401, json: { message: 'Unauthorized' } });
    const renewed = await token(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh });
    expect((await management(sim, '/v1/projects', renewed.json.access_token)).status).toBe(200);
  });
});

describe('Supabase OAuth: projects, keys and their Data API', () => {
  let sim: SupabaseSandbox;
  let access = '';
  beforeAll(async () => {
    sim = await startSupabaseSandbox({ clients: [APP], database });
    ({ access } = await connect(sim));
  }, 60_000);
  afterAll(() => sim?.close());

  it('lists the projects of the organization the user picked', async () => {
    const answer = await management(sim, '/v1/projects', access);
    expect(answer.status).toBe(200);
    const [project] = sim.projects;
    expect(answer.json).toEqual([
      {
        id: project.ref,
        ref: project.ref,
        organization_id: project.organizationSlug,
        organization_slug: project.organizationSlug,
        name: 'todo-app',
        region: 'eu-central-1',
        created_at: expect.any(String),
        status: 'ACTIVE_HEALTHY',
        database: expect.objectContaining({ host: `db.${project.ref}.supabase.co` }),
      },
    ]);
    expect(project.ref).toMatch(/^[a-z]{20}$/);
    expect((await management(sim, '/v1/organizations', access)).json).toEqual([{ id: project.organizationSlug, slug: project.organizationSlug, name: 'Acme' }]);
  });

  it('lists the project’s keys: legacy anon and service_role, publishable, and secret (masked unless revealed)', async () => {
    const [project] = sim.projects;
    const keys = (await management(sim, `/v1/projects/${project.ref}/api-keys`, access)).json;
    expect(keys.map((k: { name: string; type: string }) => [k.name, k.type])).toEqual([
      ['anon', 'legacy'],
      ['service_role', 'legacy'],
      ['default', 'publishable'],
      ['default', 'secret'],
    ]);
    expect(keys[0].api_key).toBe(project.keys.anonKey);
    expect(keys[1].api_key).toBe(project.keys.serviceRoleKey);
    expect(keys[2].api_key).toBe(project.keys.publishableKey);
    expect(keys[3].api_key).not.toBe(project.keys.secretKey);
    expect(keys[3].api_key.startsWith('sb_secret_')).toBe(true);
    const revealed = (await management(sim, `/v1/projects/${project.ref}/api-keys?reveal=true`, access)).json;
    expect(revealed[3].api_key).toBe(project.keys.secretKey);
    expect(await management(sim, `/v1/projects/abcdefghijklmnopqrst/api-keys`, access)).toEqual({ status: 404, json: { message: 'Project not found' } });
  });

  it('every listed key works at the project’s Data API, as a pasted URL + key would', async () => {
    const [project] = sim.projects;
    const keys = (await management(sim, `/v1/projects/${project.ref}/api-keys?reveal=true`, access)).json as Array<{
      name: string;
      type: string;
      api_key: string;
    }>;
    const rows: Record<string, number> = {};
    for (const key of keys) {
      const res = await fetch(`${project.url}/rest/v1/todos?select=id`, { headers: { apikey: key.api_key, authorization: `Bearer ${key.api_key}` } });
      expect(res.status, `${key.name} (${key.type})`).toBe(200);
      rows[`${key.name}/${key.type}`] = ((await res.json()) as unknown[]).length;
    }
    // Row-level security: the service keys see at least what the public keys see.
    expect(rows['service_role/legacy']).toBe(rows['default/secret']);
    expect(rows['anon/legacy']).toBe(rows['default/publishable']);
    expect(rows['service_role/legacy']).toBeGreaterThanOrEqual(rows['anon/legacy']);
    const wrong = await fetch(`${project.url}/rest/v1/todos`, { headers: { apikey: 'nope' } });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${sim.dataApiUrl}/zzzzzzzzzzzzzzzzzzzz/rest/v1/todos`, { headers: { apikey: 'x' } })).status).toBe(404);
  });

  it('an organization without projects lists none', async () => {
    const empty = await connect(sim, 'Side projects');
    expect(await management(sim, '/v1/projects', empty.access)).toEqual({ status: 200, json: [] });
  });

  it('a deleted project leaves the list, its keys and its Data API', async () => {
    const extra = await startSupabaseSandbox({ clients: [APP], database, organizations: [{ name: 'Acme', projects: [{ name: 'a' }, { name: 'b' }] }] });
    try {
      const { access: token } = await connect(extra);
      const [a, b] = extra.projects;
      extra.deleteProject(a.ref);
      expect((await management(extra, '/v1/projects', token)).json.map((p: { ref: string }) => p.ref)).toEqual([b.ref]);
      expect((await management(extra, `/v1/projects/${a.ref}/api-keys`, token)).status).toBe(404);
      expect((await fetch(`${a.url}/rest/v1/todos`, { headers: { apikey: a.keys.anonKey } })).status).toBe(404);
      expect(extra.projects.map((p) => p.ref)).toEqual([b.ref]);
    } finally {
      await extra.close();
    }
  });

  it('after the user revokes the app, refresh fails and access tokens get 401', async () => {
    const tokens = await connect(sim);
    sim.revokeApp();
    expect(await management(sim, '/v1/projects', tokens.access)).toEqual({ status: 401, json: { message: 'Unauthorized' } });
    expect((await token(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh })).json.error).toBe('invalid_grant');
    // The project's keys are not OAuth tokens: they keep working.
    const project = sim.projects[0];
    expect((await fetch(`${project.url}/rest/v1/todos`, { headers: { apikey: project.keys.anonKey } })).status).toBe(200);
  });
});

describe('Supabase OAuth: an account with no project at all', () => {
  it('starts without a database and lists no project', async () => {
    const started = performance.now();
    const sim = await startSupabaseSandbox({ clients: [APP], organizations: [{ name: 'Empty', projects: [] }] });
    try {
      expect(performance.now() - started).toBeLessThan(5_000);
      const { access } = await connect(sim, 'Empty');
      expect((await management(sim, '/v1/projects', access)).json).toEqual([]);
    } finally {
      await sim.close();
    }
  });
});

describe.skipIf(!chromiumAvailable)('Supabase OAuth: consent in Chromium', () => {
  let sim: SupabaseSandbox;
  let app: RunningSandbox;
  let browser: Browser;
  beforeAll(async () => {
    app = await listenOnLoopback((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('Connected.'));
    sim = await startSupabaseSandbox({ clients: [{ ...APP, redirectUris: [`${app.url}/connect/callback`] }], database });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([sim?.close(), app?.close()]);
  });

  it('a person picks an organization and authorizes; the token lists its projects', async () => {
    const callback = `${app.url}/connect/callback`;
    const { landed, heading, problems } = await clickThrough(
      browser,
      authorizeUrl(sim, { redirect_uri: callback }),
      callback,
      'Authorize Tool Server',
      (page) => page.getByLabel('Acme').check(),
    );
    expect(heading).toBe('Authorize Tool Server');
    expect(problems).toEqual([]);
    const answer = await exchange(sim, codeOf(landed, 'sb-1'), { redirect_uri: callback });
    expect(answer.status).toBe(201);
    expect((await management(sim, '/v1/projects', answer.json.access_token)).json.map((p: { name: string }) => p.name)).toEqual(['todo-app']);
  }, 60_000);
});
