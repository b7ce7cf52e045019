// Supabase's OAuth apps for the Management API (connections.md §3), on one host (api.supabase.com):
// GET /v1/oauth/authorize (PKCE S256, organization_slug optional, redirect_uri + state at most 4 kB) renders
// the consent page where the user picks an organization; POST /v1/oauth/token takes a form body and HTTP Basic
// (PKCE verified, 201 answers, rotation on refresh); GET /v1/projects and /v1/projects/{ref}/api-keys with the
// bearer. Every project has a real Data API (a PostgREST sandbox) that accepts the keys api-keys lists, at
// `${dataApiUrl}/${ref}` (one listener for all projects, routed by ref: the stand-in for https://<ref>.supabase.co).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import {
  listen,
  readBody,
  recorder,
  sendFault,
  sendJson,
  takeFault,
  type Fault,
  type ListenOptions,
  type RecordedRequest,
  type RunningSandbox,
  type SocketAddress,
} from '../harness.ts';
import { SandboxClock } from '../oauth/clock.ts';
import { GrantBook, randomToken, type Grant } from '../oauth/grants.ts';
import { oauthControls } from '../oauth/controls.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';
import { ConsentRequests, decisionButtons, html, readForm, redirectTo, sendErrorPage, sendPage, type Brand } from '../oauth/pages.ts';
import { authenticateClient, basicCredentials, TokenLog, type TokenAnswer } from '../oauth/token-endpoint.ts';
import { CONSENT, SUPABASE } from '../oauth/unverified.ts';
import type { ProjectKeys } from '../postgrest/auth.ts';
import { createPostgrestProject, SharedDatabase, type PostgrestProject } from '../postgrest/postgrest-sandbox.ts';

export interface SupabaseProjectOptions {
  name: string;
  /** 20 lowercase letters (random by default). */
  ref?: string;
  region?: string;
  /** Derive the project's keys from this secret (the same keys at every start); random by default. */
  keySeed?: string;
  /** An existing Data API to serve as this project's (one a pasted account also reaches); it stays open at close. */
  data?: PostgrestProject;
}

export interface SupabaseOrganizationOptions {
  name: string;
  /** 20 lowercase letters (random by default). */
  slug?: string;
  projects: SupabaseProjectOptions[];
}

export interface SupabaseSandboxOptions extends ListenOptions {
  /** The OAuth apps registered at Supabase. */
  clients: OAuthClient[];
  /** The signed-in user's organizations and their projects; default `DEFAULT_ORGANIZATIONS`. */
  organizations?: SupabaseOrganizationOptions[];
  clock?: SandboxClock;
  /** Keep the projects' tables in this shared database (else one of the sandbox's own). */
  database?: SharedDatabase;
  /** Where the projects' Data API listens (unix socket); a loopback port by default. */
  dataSocket?: SocketAddress;
  /** How long an access token works (unverified at Supabase; default in sandboxes/oauth/unverified.ts). */
  accessTokenTtlMs?: number;
}

export interface SupabaseProject {
  ref: string;
  name: string;
  organizationSlug: string;
  /** The Data API base URL (`${dataApiUrl}/${ref}`): what a pasted account's `url` holds. */
  url: string;
  keys: ProjectKeys;
  /** Runs SQL as the database owner (bypasses RLS). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
}

export interface SupabaseSandbox extends OAuthControls {
  /** Stands for https://api.supabase.com. */
  url: string;
  /** Where every project's Data API is, under /<ref>. */
  dataApiUrl: string;
  organizations: Array<{ slug: string; name: string }>;
  /** The projects now (a deleted one is gone). */
  readonly projects: SupabaseProject[];
  /** The signed-in Supabase user who consents. */
  user: { id: string; email: string };
  /** Requests to the Management API host (the Data API's are not recorded here). */
  requests: RecordedRequest[];
  /** The project is deleted: the Management API no longer lists it and its Data API answers 404. */
  deleteProject(ref: string): void;
  /** Scripted failures of the Management API host (its token endpoint included), checked before anything else. */
  faults: Fault[];
  close(): Promise<void>;
}

/** An organization with one project, and one with none (picking it at consent is "a Supabase account with no project"). */
export const DEFAULT_ORGANIZATIONS: readonly SupabaseOrganizationOptions[] = [
  { name: 'Acme', projects: [{ name: 'todo-app', region: 'eu-central-1' }] },
  { name: 'Side projects', projects: [] },
];

const BRAND: Brand = { name: 'Supabase', accent: '#1c7c4a' };
/** The most bytes redirect_uri and state may take together. */
export const MAX_REDIRECT_AND_STATE_BYTES = 4096;

const letters = (n: number) => [...randomBytes(n)].map((b) => String.fromCharCode(97 + (b % 26))).join('');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

interface Organization {
  slug: string;
  name: string;
}

interface Project {
  ref: string;
  name: string;
  organizationSlug: string;
  region: string;
  createdAt: string;
  data: PostgrestProject;
}

interface AuthorizeRequest {
  client: OAuthClient;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string | undefined;
  /** The organization the request named (organization_slug), preselected on the page. */
  organization: string | undefined;
}

/** What a grant covers: one organization, picked at consent. */
interface GrantData {
  organizationSlug: string;
}

type Checked = { ok: AuthorizeRequest } | { page: string } | { redirect: { uri: string; error: string; description: string; state: string | undefined } };

function checkAuthorize(query: URLSearchParams, clients: readonly OAuthClient[]): Checked {
  const client = clients.find((c) => c.clientId === query.get('client_id'));
  if (!client) return { page: 'The OAuth app asking for access does not exist (invalid client_id).' };
  const redirectUri = query.get('redirect_uri');
  if (!redirectUri || !client.redirectUris.includes(redirectUri))
    return { page: `The redirect_uri is not one of the redirect URIs of ${client.name ?? 'this app'}.` };
  const state = query.get('state') ?? undefined;
  if (Buffer.byteLength(redirectUri) + Buffer.byteLength(state ?? '') > MAX_REDIRECT_AND_STATE_BYTES) {
    return { page: 'redirect_uri and state together must not exceed 4 kB.' };
  }
  const fail = ([error, description]: readonly [string, string]): Checked => ({ redirect: { uri: redirectUri, error, description, state } });
  const { redirectErrors } = SUPABASE;
  if (query.get('response_type') !== 'code') return fail(redirectErrors.unsupportedResponseType);
  const challenge = query.get('code_challenge') ?? undefined;
  const method = query.get('code_challenge_method') ?? undefined;
  if (challenge !== undefined || method !== undefined) {
    const s256Method = SUPABASE.challengeMethodAnyCase ? method?.toUpperCase() === 'S256' : method === 'S256';
    if (!s256Method) return fail(redirectErrors.badChallengeMethod);
    // RFC 7636 §4.2: an S256 challenge is base64url; 43 to 128 characters like the verifier.
    if (!challenge || !/^[A-Za-z0-9._~-]{43,128}$/.test(challenge)) return fail(redirectErrors.badChallenge);
  }
  return { ok: { client, redirectUri, state, codeChallenge: challenge, organization: query.get('organization_slug') ?? undefined } };
}

export async function startSupabaseSandbox(options: SupabaseSandboxOptions): Promise<SupabaseSandbox> {
  const clock = options.clock ?? new SandboxClock();
  const clients = options.clients;
  const user = { id: randomUUID(), email: 'ada@example.com' };
  const organizations: Organization[] = [];
  const projects: Project[] = [];
  const definitions = options.organizations ?? DEFAULT_ORGANIZATIONS;
  // One Postgres for every project, started only when there is a project.
  const ownDatabase = !options.database && definitions.some((o) => o.projects.some((p) => !p.data)) ? await SharedDatabase.start() : undefined;
  const closers: Array<() => Promise<void>> = [];
  if (ownDatabase) closers.push(() => ownDatabase.close());
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  const servers: RunningSandbox[] = [];
  try {
    for (const org of definitions) {
      const slug = org.slug ?? letters(20);
      organizations.push({ slug, name: org.name });
      for (const p of org.projects) {
        const ref = p.ref ?? letters(20);
        let data = p.data;
        if (!data) {
          const created = await createPostgrestProject({ database: options.database ?? ownDatabase, keySeed: p.keySeed, ref, record: false });
          closers.push(() => created.close());
          data = created;
        }
        projects.push({ ref, name: p.name, organizationSlug: slug, region: p.region ?? 'us-east-1', createdAt: new Date(clock.now()).toISOString(), data });
      }
    }
  } catch (err) {
    await closeAll();
    throw err;
  }

  const book = new GrantBook<GrantData>(clock, {
    accessTtlMs: options.accessTokenTtlMs ?? SUPABASE.accessTokenTtlMs,
    codeTtlMs: SUPABASE.codeTtlMs,
    reuseLeewayMs: 0,
    reuseRevokesGrantRefreshTokens: false,
    newAccessToken: () => `sbp_oauth_${randomBytes(20).toString('hex')}`,
    newRefreshToken: () => randomToken(32),
  });
  const consents = new ConsentRequests<AuthorizeRequest>(clock, CONSENT.requestTtlMs);
  const log = new TokenLog(clock);
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);

  const consentPage = (res: http.ServerResponse, request: AuthorizeRequest, requestId: string, problem?: string) => {
    const app = request.client.name ?? 'Tool Server';
    const count = (slug: string) => projects.filter((p) => p.organizationSlug === slug).length;
    sendPage(
      res,
      problem ? 400 : 200,
      BRAND,
      `Authorize ${app}`,
      html`<h1>Authorize ${app}</h1>
        <p>${app} wants to manage the projects of one of your organizations: read them, their settings and their API keys.</p>
        <p class="muted">Signed in as ${user.email}</p>
        ${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
        <form method="post" action="authorize">
          <fieldset>
            <legend>Organization</legend>
            ${organizations.map(
              (org) =>
                html`<label
                  ><input type="radio" name="organization" value="${org.slug}" required${org.slug === request.organization ? html` checked` : ''} />${org.name}
                  <span class="muted">(${count(org.slug) === 1 ? '1 project' : `${count(org.slug)} projects`})</span></label
                >`,
            )}
          </fieldset>
          ${decisionButtons(requestId, `Authorize ${app}`, 'Cancel')}
        </form>`,
    );
  };

  const pages = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    if (req.method === 'GET') {
      const checked = checkAuthorize(url.searchParams, clients);
      if ('page' in checked) return sendErrorPage(res, 400, BRAND, checked.page);
      if ('redirect' in checked) {
        const { uri, error, description, state } = checked.redirect;
        return redirectTo(res, uri, { error, error_description: description, state });
      }
      return consentPage(res, checked.ok, consents.open(checked.ok));
    }
    const form = await readForm(req);
    const request = consents.take(form.get('request'));
    if (!request) return sendErrorPage(res, 400, BRAND, 'This authorization request has expired or was already answered. Start again from the app.');
    if (form.get('decision') !== 'accept') return redirectTo(res, request.redirectUri, { error: 'access_denied', state: request.state });
    const organization = organizations.find((o) => o.slug === form.get('organization'));
    if (!organization) return consentPage(res, request, consents.open(request), 'Choose the organization the app may manage.');
    const grant = book.grant(
      request.client.clientId,
      user.id,
      [],
      { organizationSlug: organization.slug },
      (g) => g.data.organizationSlug === organization.slug,
    );
    const code = book.issueCode(grant, { redirectUri: request.redirectUri, codeChallenge: request.codeChallenge });
    redirectTo(res, request.redirectUri, { code, state: request.state });
  };

  const controls = oauthControls({ clock, book, log, brand: BRAND, authorizePath: '/v1/oauth/authorize', consent: pages });

  const tokenAnswer = (tokens: { accessToken: string; refreshToken?: string; expiresIn: number }): TokenAnswer => ({
    status: 201,
    body: { access_token: tokens.accessToken, refresh_token: tokens.refreshToken, expires_in: tokens.expiresIn, token_type: 'Bearer' },
  });

  /** POST /v1/oauth/token: a form body; the client by HTTP Basic (or in the form, `SUPABASE.clientInForm`). */
  const token = (req: http.IncomingMessage, raw: string): { grantType?: unknown; clientId?: unknown; answer: TokenAnswer } => {
    const { errors } = SUPABASE;
    if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) return { answer: errors.notForm };
    const form = new URLSearchParams(raw);
    const grantType = form.get('grant_type') ?? '';
    const basic = basicCredentials(req.headers.authorization);
    const inForm = SUPABASE.clientInForm && !basic;
    const clientId = basic?.id ?? (inForm ? form.get('client_id') : null) ?? undefined;
    const answer = (a: TokenAnswer) => ({ grantType, clientId, answer: a });
    const client = authenticateClient(clients, clientId, basic?.secret ?? (inForm ? form.get('client_secret') : null));
    if (!client) return answer(errors.badClient);
    if (grantType === 'authorization_code') {
      const codeValue = form.get('code');
      if (!codeValue) return answer(errors.missing('code'));
      const code = book.takeCode(codeValue, client.clientId);
      if (!code) return answer(errors.badCode);
      if (form.get('redirect_uri') !== code.redirectUri) return answer(errors.badRedirect);
      if (code.codeChallenge !== undefined) {
        const verifier = form.get('code_verifier');
        if (!verifier) return answer(errors.verifierMissing);
        if (s256(verifier) !== code.codeChallenge) return answer(errors.verifierMismatch);
      }
      return answer(tokenAnswer(book.issue(code.grant, true)));
    }
    if (grantType === 'refresh_token') {
      const refreshToken = form.get('refresh_token');
      if (!refreshToken) return answer(errors.missing('refresh_token'));
      const result = book.refresh(refreshToken, client.clientId);
      return answer('refused' in result ? errors.badRefresh : tokenAnswer(result.tokens));
    }
    return answer(errors.unsupportedGrant(grantType));
  };

  const projectJson = (p: Project) => ({
    id: p.ref,
    ref: p.ref,
    organization_id: p.organizationSlug,
    organization_slug: p.organizationSlug,
    name: p.name,
    region: p.region,
    created_at: p.createdAt,
    status: 'ACTIVE_HEALTHY',
    database: { host: `db.${p.ref}.supabase.co`, version: '15.8.1.085', postgres_engine: '15', release_channel: 'ga' },
  });

  const keyJson = (p: Project, reveal: boolean) => {
    const { anonKey, serviceRoleKey, publishableKey, secretKey } = p.data;
    const at = p.createdAt;
    const legacy = (name: string, apiKey: string) => ({
      name,
      api_key: apiKey,
      id: name,
      type: 'legacy',
      prefix: null,
      description: null,
      hash: null,
      secret_jwt_template: null,
      inserted_at: null,
      updated_at: null,
    });
    const opaque = (type: 'publishable' | 'secret', apiKey: string) => ({
      name: 'default',
      api_key: type === 'secret' && !reveal ? `${apiKey.slice(0, SUPABASE.maskedSecretVisibleChars)}${'•'.repeat(12)}` : apiKey,
      id: createHash('sha256')
        .update(`${p.ref} ${type}`)
        .digest('hex')
        .slice(0, 32)
        .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
      type,
      prefix: apiKey.slice(0, SUPABASE.maskedSecretVisibleChars),
      description: `The default ${type} key`,
      hash: createHash('sha256').update(apiKey).digest('base64url'),
      secret_jwt_template: type === 'secret' ? { role: 'service_role' } : null,
      inserted_at: at,
      updated_at: at,
    });
    return [legacy('anon', anonKey), legacy('service_role', serviceRoleKey), opaque('publishable', publishableKey), opaque('secret', secretKey)];
  };

  /** The Management API as the bearer's grant sees it. */
  const management = (grant: Grant<GrantData>, method: string, url: URL): { status: number; body: unknown } => {
    const mine = projects.filter((p) => p.organizationSlug === grant.data.organizationSlug);
    if (method === 'GET' && url.pathname === '/v1/projects') return { status: 200, body: mine.map(projectJson) };
    if (method === 'GET' && url.pathname === '/v1/organizations') {
      return {
        status: 200,
        body: organizations.filter((o) => o.slug === grant.data.organizationSlug).map((o) => ({ id: o.slug, slug: o.slug, name: o.name })),
      };
    }
    const match = /^\/v1\/projects\/([^/]+)(\/api-keys)?$/.exec(url.pathname);
    const project = match && mine.find((p) => p.ref === match[1]);
    if (method === 'GET' && match && !project) return { status: 404, body: SUPABASE.api.projectNotFound };
    if (method === 'GET' && project && match[2]) return { status: 200, body: keyJson(project, url.searchParams.get('reveal') === 'true') };
    if (method === 'GET' && project) return { status: 200, body: projectJson(project) };
    return { status: 404, body: { message: 'Cannot ' + method + ' ' + url.pathname } };
  };

  const apiHost = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    const consentRoute = url.pathname === '/v1/oauth/authorize';
    const raw = consentRoute ? '' : await readBody(req);
    record({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body: raw });
    const fault = takeFault(faults, method, url.pathname);
    if (fault) return sendFault(res, fault);
    if (consentRoute) return controls.pages(req, res);
    if (url.pathname === '/v1/oauth/token' && method === 'POST') {
      const { grantType, clientId, answer } = token(req, raw);
      return log.answer(res, grantType, clientId, answer);
    }
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const access = bearer ? book.access(bearer) : undefined;
    if (!access || !('grant' in access)) return sendJson(res, 401, SUPABASE.api.unauthorized);
    const answer = management(access.grant, method, url);
    sendJson(res, answer.status, answer.body);
  };

  /** https://<ref>.supabase.co stands at <dataApiUrl>/<ref>: the ref is the first path segment. */
  const dataHost = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const match = /^\/([a-z]+)(\/.*)?$/.exec(req.url ?? '/');
    const project = match && projects.find((p) => p.ref === match[1]);
    if (!project) return sendJson(res, 404, { message: 'no Route matched with those values' });
    req.url = match[2] ?? '/';
    void project.data.handler(req, res);
  };

  const failed = (res: http.ServerResponse) => (err: unknown) => {
    if (!res.headersSent) sendJson(res, 500, { message: String(err) });
  };
  try {
    servers.push(await listen((req, res) => void apiHost(req, res).catch(failed(res)), options));
    servers.push(await listen(dataHost, { socket: options.dataSocket }));
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    await closeAll();
    throw err;
  }
  const [api, data] = servers;

  return {
    url: api.url,
    dataApiUrl: data.url,
    user,
    organizations: organizations.map((o) => ({ ...o })),
    get projects() {
      return projects.map((p) => ({
        ref: p.ref,
        name: p.name,
        organizationSlug: p.organizationSlug,
        url: `${data.url}/${p.ref}`,
        keys: {
          jwtSecret: p.data.jwtSecret,
          anonKey: p.data.anonKey,
          serviceRoleKey: p.data.serviceRoleKey,
          publishableKey: p.data.publishableKey,
          secretKey: p.data.secretKey,
        },
        sql: <T = Record<string, unknown>>(query: string, params?: unknown[]) => p.data.sql<T>(query, params),
      }));
    },
    requests,
    faults,
    ...controls,
    deleteProject(ref) {
      const at = projects.findIndex((p) => p.ref === ref);
      if (at >= 0) projects.splice(at, 1);
    },
    async close() {
      await Promise.all(servers.map((s) => s.close()));
      await closeAll();
    },
  };
}
