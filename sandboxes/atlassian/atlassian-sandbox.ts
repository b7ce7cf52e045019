// Atlassian's OAuth 2.0 (3LO) authorization server and API gateway (connections.md §1), in front of
// one Jira sandbox per site:
// - auth host (auth.atlassian.com): GET /authorize renders the consent page (app name, scopes in words, the
//   signed-in user's sites; Accept / Cancel); POST /oauth/token takes a JSON body with the client id and secret
//   in it (authorization_code, refresh_token with rotation, the 10-minute reuse leeway, family revocation,
//   90 days idle and 365 days absolute on the sandbox clock).
// - API host (api.atlassian.com): GET /oauth/token/accessible-resources, and /ex/jira/<cloudId>/rest/api/3/...
//   routed to that site's Jira sandbox with `Authorization: Bearer <access_token>` (scoped API tokens by Basic
//   too, as the real gateway). A 3LO token is refused at the site's own URL.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { listen, readBody, recorder, sendFault, sendJson, takeFault, type Fault, type RecordedRequest, type SocketAddress } from '../harness.ts';
import { SEED_USERS, startJiraSandbox, type JiraSandbox } from '../jira/jira-sandbox.ts';
import { DAY, MINUTE, SandboxClock } from '../oauth/clock.ts';
import { GrantBook, randomToken, type Grant } from '../oauth/grants.ts';
import { oauthControls } from '../oauth/controls.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';
import { ConsentRequests, decisionButtons, html, readForm, redirectTo, sendErrorPage, sendPage, type Brand } from '../oauth/pages.ts';
import { authenticateClient, TokenLog, type TokenAnswer } from '../oauth/token-endpoint.ts';
import { ATLASSIAN, CONSENT } from '../oauth/unverified.ts';
import { SCOPE_WORDS, requiredScope } from './scopes.ts';

export interface AtlassianSiteOptions {
  /** The site's name, as in <name>.atlassian.net. */
  name: string;
  /** Its cloud id (random UUID by default). */
  cloudId?: string;
  /** An existing Jira sandbox to stand for this site (default: one is started on loopback, and closed with this sandbox). */
  jira?: JiraSandbox;
}

export interface AtlassianSandboxOptions {
  /** The OAuth apps registered at the developer console. */
  clients: OAuthClient[];
  /** The signed-in user's sites; default two (`DEFAULT_SITES`); `[]` is an account without a Jira site. */
  sites?: AtlassianSiteOptions[];
  clock?: SandboxClock;
  /** Unix sockets for the auth and API hosts (the service's own sandboxes); loopback ports by default. */
  authSocket?: SocketAddress;
  apiSocket?: SocketAddress;
  /** Keep every request to the auth and API hosts in `requests` (default true). */
  record?: boolean;
}

export interface AtlassianSite {
  cloudId: string;
  name: string;
  /** The site's own URL (the Jira sandbox's); 3LO tokens are refused there. */
  url: string;
  /** The site's data and requests. */
  jira: JiraSandbox;
}

export interface AtlassianSandbox extends OAuthControls {
  /** Stands for https://auth.atlassian.com (GET /authorize, POST /oauth/token). */
  authUrl: string;
  /** Stands for https://api.atlassian.com (/oauth/token/accessible-resources, /ex/jira/<cloudId>/...). */
  apiUrl: string;
  sites: AtlassianSite[];
  /** The signed-in Atlassian account that consents (Alice Admin of the Jira seed). */
  user: { accountId: string; name: string; email: string };
  /** Requests to the auth and API hosts (the sites record their own). */
  requests: RecordedRequest[];
  /** Scripted failures of the auth and API hosts (the token endpoint's 5xx, garbage...), checked before anything else. */
  faults: Fault[];
  /** The user changes their password: every grant of every app ends. */
  changePassword(): void;
  /** The user loses access to a site: it leaves their sites and every grant (accessible-resources, the gateway). */
  leaveSite(cloudId: string): void;
  close(): Promise<void>;
}

/** The two sites a user has unless a test says otherwise. */
export const DEFAULT_SITES: readonly AtlassianSiteOptions[] = [{ name: 'acme' }, { name: 'acme-labs' }];

/** The audience every 3LO authorize request must name. */
export const AUDIENCE = 'api.atlassian.com';
/** Access tokens live an hour (the token answer's `expires_in: 3600`). */
export const ACCESS_TOKEN_TTL_MS = 60 * MINUTE;
/** A spent refresh token still works this long (the rotation notice's leeway). */
export const REUSE_LEEWAY_MS = 10 * MINUTE;
/** A refresh token not used for 90 days expires; every chain ends 365 days after its authorization. */
export const REFRESH_IDLE_MS = 90 * DAY;
export const REFRESH_ABSOLUTE_MS = 365 * DAY;

const BRAND: Brand = { name: 'Atlassian', accent: '#0052cc' };
/** Every refused refresh token (connections.md). */
const INVALID_REFRESH = { status: 403, body: { error: 'invalid_grant', error_description: 'Unknown or invalid refresh token.' } };

/** What a grant covers besides its scopes: the sites of the user when they consented. */
interface GrantData {
  cloudIds: string[];
}

/** An authorize request that passed every check, waiting for the user's decision. */
interface AuthorizeRequest {
  client: OAuthClient;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
}

/** The validated request, or what to answer instead: a page (client or redirect_uri unusable) or a redirect with an error. */
type Checked =
  | { ok: AuthorizeRequest }
  | { page: { status: number; message: string; detail?: string } }
  | { redirect: { uri: string; error: string; description: string; state: string | undefined } };

function checkAuthorize(query: URLSearchParams, clients: readonly OAuthClient[]): Checked {
  const client = clients.find((c) => c.clientId === query.get('client_id'));
  if (!client) return { page: { status: 400, message: 'The app asking for access is not known to Atlassian (invalid client_id).' } };
  const redirectUri = query.get('redirect_uri');
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) {
    return {
      page: {
        status: 400,
        message: `The redirect_uri does not match any callback URL registered for ${client.name ?? 'this app'}.`,
        detail: 'The app must send one of the callback URLs set in its developer console, exactly.',
      },
    };
  }
  const state = query.get('state') ?? undefined;
  const fail = ([error, description]: readonly [string, string]): Checked => ({ redirect: { uri: redirectUri, error, description, state } });
  const { redirectErrors } = ATLASSIAN;
  if (query.get('response_type') !== 'code') return fail(redirectErrors.unsupportedResponseType(query.get('response_type') ?? ''));
  if (query.get('audience') !== AUDIENCE) return fail(redirectErrors.unknownAudience(query.get('audience') ?? ''));
  const scopes = (query.get('scope') ?? '').split(' ').filter(Boolean);
  if (scopes.length === 0) return fail(redirectErrors.missingScope);
  const allowed = client.scopes ?? Object.keys(SCOPE_WORDS);
  const missing = scopes.filter((s) => !allowed.includes(s));
  if (missing.length > 0) {
    return {
      page: {
        status: 400,
        message: `This app has requested scopes that have not been added to the app. Configure the app at https://developer.atlassian.com/apps and add the following scopes to the app: ${missing.join(', ')}.`,
      },
    };
  }
  return { ok: { client, redirectUri, scopes: [...new Set(scopes)], state } };
}

export async function startAtlassianSandbox(options: AtlassianSandboxOptions): Promise<AtlassianSandbox> {
  const clock = options.clock ?? new SandboxClock();
  const clients = options.clients;
  const user = { accountId: SEED_USERS.alice.accountId, name: SEED_USERS.alice.displayName, email: SEED_USERS.alice.email };
  const started: JiraSandbox[] = [];
  const sites: AtlassianSite[] = [];
  try {
    for (const site of options.sites ?? DEFAULT_SITES) {
      const cloudId = site.jira?.cloudId ?? site.cloudId ?? randomUUID();
      const jira = site.jira ?? (await startJiraSandbox({ cloudId, now: () => clock.now(), record: options.record }));
      if (!site.jira) started.push(jira);
      sites.push({ cloudId, name: site.name, url: jira.url, jira });
    }
  } catch (err) {
    await Promise.all(started.map((j) => j.close()));
    throw err;
  }

  const book = new GrantBook<GrantData>(clock, {
    accessTtlMs: ACCESS_TOKEN_TTL_MS,
    codeTtlMs: ATLASSIAN.codeTtlMs,
    reuseLeewayMs: REUSE_LEEWAY_MS,
    reuseRevokesGrantRefreshTokens: true,
    refreshIdleMs: REFRESH_IDLE_MS,
    refreshAbsoluteMs: REFRESH_ABSOLUTE_MS,
    newAccessToken: (grant, issuedAt, expiresAt) => ATLASSIAN.accessToken(grant, issuedAt, expiresAt),
    newRefreshToken: () => randomToken(48),
  });
  const consents = new ConsentRequests<AuthorizeRequest>(clock, CONSENT.requestTtlMs);
  const log = new TokenLog(clock);
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);

  const consentPage = (res: http.ServerResponse, request: AuthorizeRequest) => {
    const app = request.client.name ?? 'Tool Server';
    const requestId = consents.open(request);
    sendPage(
      res,
      200,
      BRAND,
      `${app} is requesting access`,
      html`<h1>${app} is requesting access to your Atlassian account</h1>
        <p class="muted">Signed in as ${user.name} (${user.email})</p>
        <section aria-labelledby="scopes-heading">
          <h2 id="scopes-heading">${app} will be able to</h2>
          <ul>
            ${request.scopes.map((s) => html`<li>${SCOPE_WORDS[s] ?? s} <span class="muted">(${s})</span></li>`)}
          </ul>
        </section>
        <section aria-labelledby="sites-heading">
          <h2 id="sites-heading">On these sites</h2>
          ${
            sites.length > 0
              ? html`<ul>
                  ${sites.map((site) => html`<li>${site.name} <span class="muted">(${site.url})</span></li>`)}
                </ul>`
              : html`<p>You have no Jira site yet: the app will not reach any site until you join one.</p>`
          }
        </section>
        <form method="post" action="authorize">${decisionButtons(requestId, 'Accept', 'Cancel')}</form>`,
    );
  };

  /** GET /authorize and the form it posts back to POST /authorize: what a browser sees. */
  const pages = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    if (req.method === 'GET') {
      const checked = checkAuthorize(url.searchParams, clients);
      if ('page' in checked) return sendErrorPage(res, checked.page.status, BRAND, checked.page.message, checked.page.detail);
      if ('redirect' in checked) {
        const { uri, error, description, state } = checked.redirect;
        return redirectTo(res, uri, { error, error_description: description, state });
      }
      return consentPage(res, checked.ok);
    }
    const form = await readForm(req);
    const request = consents.take(form.get('request'));
    if (!request) return sendErrorPage(res, 400, BRAND, 'This authorization request has expired or was already answered. Start again from the app.');
    if (form.get('decision') !== 'accept') {
      const [error, description] = ATLASSIAN.redirectErrors.cancelled;
      return redirectTo(res, request.redirectUri, { error, error_description: description, state: request.state });
    }
    // One grant per app and account; consenting again updates its scopes and sites.
    const grant = book.grant(request.client.clientId, user.accountId, request.scopes, { cloudIds: sites.map((s) => s.cloudId) }, () => true);
    const code = book.issueCode(grant, { redirectUri: request.redirectUri });
    redirectTo(res, request.redirectUri, { code, state: request.state });
  };

  const controls = oauthControls({ clock, book, log, brand: BRAND, authorizePath: '/authorize', consent: pages });

  const tokenAnswer = (grant: Grant<GrantData>, tokens: { accessToken: string; refreshToken?: string; expiresIn: number }): TokenAnswer => ({
    status: 200,
    body: {
      access_token: tokens.accessToken,
      ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
      expires_in: tokens.expiresIn,
      scope: grant.scopes.join(' '),
      token_type: 'Bearer',
    },
  });

  /** POST /oauth/token: a JSON body with the client's id and secret in it. */
  const token = (raw: string, contentType: string | undefined): { grantType?: unknown; clientId?: unknown; answer: TokenAnswer } => {
    let body: Record<string, unknown>;
    try {
      if (!/^application\/json\b/i.test(contentType ?? '')) throw new Error('not JSON');
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return { answer: ATLASSIAN.errors.notJson };
    }
    const { grant_type: grantType, client_id: clientId } = body;
    const answer = (a: TokenAnswer) => ({ grantType, clientId, answer: a });
    const { errors } = ATLASSIAN;
    if (typeof grantType !== 'string' || grantType === '') return answer(errors.missing('grant_type'));
    const client = authenticateClient(clients, clientId, body.client_secret);
    if (!client) return answer(errors.badClient);
    if (grantType === 'authorization_code') {
      if (typeof body.code !== 'string' || body.code === '') return answer(errors.missing('code'));
      if (typeof body.redirect_uri !== 'string' || body.redirect_uri === '') return answer(errors.missing('redirect_uri'));
      const code = book.takeCode(body.code, client.clientId);
      if (!code) return answer(errors.badCode);
      if (code.redirectUri !== body.redirect_uri) return answer(errors.badRedirect);
      return answer(tokenAnswer(code.grant, book.issue(code.grant, code.grant.scopes.includes('offline_access'))));
    }
    if (grantType === 'refresh_token') {
      if (typeof body.refresh_token !== 'string' || body.refresh_token === '') return answer(errors.missing('refresh_token'));
      const result = book.refresh(body.refresh_token, client.clientId);
      return answer('refused' in result ? INVALID_REFRESH : tokenAnswer(result.grant, result.tokens));
    }
    return answer(errors.unsupportedGrant(grantType));
  };

  /** The grant behind the request's bearer token, or the gateway's 401 already sent. */
  const bearerGrant = (req: http.IncomingMessage, res: http.ServerResponse): Grant<GrantData> | undefined => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const result = bearer ? book.access(bearer) : undefined;
    if (result && 'grant' in result) return result.grant;
    sendJson(res, 401, ATLASSIAN.gateway.unauthorized);
    return undefined;
  };

  const authHost = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    const consentRoute = url.pathname === '/authorize' && (method === 'GET' || method === 'POST');
    // The consent form is read by the page itself.
    const raw = consentRoute ? '' : await readBody(req);
    record({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body: raw });
    const fault = takeFault(faults, method, url.pathname);
    if (fault) return sendFault(res, fault);
    if (consentRoute) return controls.pages(req, res);
    if (url.pathname === '/oauth/token' && req.method === 'POST') {
      const { grantType, clientId, answer } = token(raw, req.headers['content-type']);
      return log.answer(res, grantType, clientId, answer);
    }
    sendJson(res, 404, { error: 'not_found', error_description: 'Not Found' });
  };

  const apiHost = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    const jira = /^\/ex\/jira\/([^/]+)(\/.*)$/.exec(url.pathname);
    // A Jira request's body is for the site, which reads and records it.
    record({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body: jira ? '' : await readBody(req) });
    const fault = takeFault(faults, method, url.pathname);
    if (fault) return sendFault(res, fault);
    if (url.pathname === '/oauth/token/accessible-resources' && method === 'GET') {
      const grant = bearerGrant(req, res);
      if (!grant) return;
      const scopes = ATLASSIAN.resourceScopes(grant.scopes);
      const resources = sites
        .filter((site) => grant.data.cloudIds.includes(site.cloudId))
        .map((site) => ({ id: site.cloudId, name: site.name, url: site.url, scopes, avatarUrl: `${site.url}/avatar.png` }));
      return sendJson(res, 200, resources);
    }
    if (!jira) return sendJson(res, 404, ATLASSIAN.gateway.notFound);
    const site = sites.find((s) => s.cloudId === jira[1]);
    if (!site) return sendJson(res, 404, ATLASSIAN.gateway.unknownSite);
    const path = jira[2] + url.search;
    if (!/^Bearer\s/i.test(req.headers.authorization ?? '')) return site.jira.serveGateway(req, res, path);
    const grant = bearerGrant(req, res);
    if (!grant) return;
    if (!grant.data.cloudIds.includes(site.cloudId)) return sendJson(res, 401, ATLASSIAN.gateway.unauthorized);
    if (!grant.scopes.includes(requiredScope(method, jira[2]))) return sendJson(res, 401, ATLASSIAN.gateway.scopeMismatch);
    site.jira.serveGateway(req, res, path, user.accountId);
  };

  const failed = (res: http.ServerResponse) => (err: unknown) => {
    if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: String(err) });
  };
  const servers: Array<{ url: string; close(): Promise<void> }> = [];
  try {
    servers.push(await listen((req, res) => void authHost(req, res).catch(failed(res)), { socket: options.authSocket }));
    servers.push(await listen((req, res) => void apiHost(req, res).catch(failed(res)), { socket: options.apiSocket }));
  } catch (err) {
    await Promise.all([...servers, ...started].map((s) => s.close()));
    throw err;
  }
  const [auth, api] = servers;

  return {
    authUrl: auth.url,
    apiUrl: api.url,
    sites,
    user,
    requests,
    faults,
    ...controls,
    changePassword: () => book.revokeSubject(user.accountId),
    leaveSite(cloudId) {
      const at = sites.findIndex((s) => s.cloudId === cloudId);
      if (at >= 0) sites.splice(at, 1);
      for (const grant of book.grants) grant.data.cloudIds = grant.data.cloudIds.filter((id) => id !== cloudId);
    },
    close: async () => {
      await Promise.all([...servers, ...started].map((s) => s.close()));
    },
  };
}
