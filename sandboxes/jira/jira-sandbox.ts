// Jira Cloud platform REST API v3 sandbox (docs/provider-coverage.md), on a loopback port.
//
// Authentication:
// - `Authorization: Basic base64(email:apiToken)` with a known pair -> that user.
// - Basic with a wrong e-mail or token -> 401 text/plain "Basic authentication with passwords is deprecated...".
// - Any other scheme (e.g. `Bearer`) -> 401 JSON {"message":"Client must be authenticated...","status-code":401};
//   the same JSON 401 answers anonymous GET /rest/api/3/myself and anonymous POST /rest/api/3/issue.
// - A scoped API token (or a service account's) -> 401 JSON at the site; accepted only through the API
//   gateway, a second loopback listener serving /ex/jira/<cloudId>/<the same API> (`gatewayUrl`). The site
//   publishes its cloud id at GET /_edge/tenant_info (no authentication). Atlassian KB "401 Unauthorized error
//   when service account accesses Jira or Confluence API"; support.atlassian.com "Manage API tokens".
// - No Authorization header -> anonymous: sees no project, so issues are 404 "Issue does not exist...",
//   project and user lists are empty and JQL naming a project fails with "The value 'X' does not exist...".
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
import { NOT_AUTHENTICATED, type Handler, type JiraRequest, type Services } from './http.ts';
import { JiraStore, PRIORITIES, RESOLUTIONS, STATUS_CATEGORIES, jiraTime, type Issue } from './model.ts';
import { Renderer } from './render.ts';
import { addComment, createIssue, deleteIssue, doTransition, editIssue, getIssue, getTransitions, listComments } from './routes-issues.ts';
import {
  REMOVED_SEARCH,
  approximateCount,
  createMetaFields,
  createMetaIssueTypes,
  getProject,
  myself,
  projectSearch,
  searchJqlGet,
  searchJqlPost,
  userSearch,
} from './routes-search.ts';
import { SEED_USERS, seedDefault, seedManyIssues } from './seed.ts';

export { SEED_USERS } from './seed.ts';
export { adfProblem } from './adf-check.ts';
export type { JiraStore } from './model.ts';

export const WRONG_CREDENTIALS_BODY =
  'Basic authentication with passwords is deprecated.  For more information, see: https://developer.atlassian.com/cloud/confluence/deprecation-notice-basic-auth/';

export interface JiraSandboxOptions extends ListenOptions {
  /** Where the API gateway listens when the site listens on `socket`. */
  gatewaySocket?: SocketAddress;
  /** Alice Admin's API token (default the seed's). */
  apiToken?: string;
  /** Clock for timestamps and relative JQL dates (default Date.now). */
  now?: () => number;
  /** Eventual consistency of /search/jql: new issues show up after this delay unless reconciled (default 0). */
  searchLagMs?: number;
  /** The site's cloud id (default `CLOUD_ID`). */
  cloudId?: string;
}

/** An issue as tests inspect it: names resolved, description and comment bodies as raw ADF. */
export interface IssueView {
  id: string;
  key: string;
  project: string;
  issueType: string;
  summary: string;
  description: unknown;
  environment: unknown;
  status: string;
  statusCategory: string;
  priority: string | null;
  assignee: string | null;
  reporter: string | null;
  labels: string[];
  components: string[];
  fixVersions: string[];
  parent: string | null;
  subtasks: string[];
  duedate: string | null;
  resolution: string | null;
  created: string;
  updated: string;
  comments: Array<{ id: string; author: string; body: unknown; created: string }>;
}

export interface JiraSandbox extends RunningSandbox {
  /** Atlassian's API gateway stand-in: <gatewayUrl>/ex/jira/<cloudId>/rest/api/3/... (scoped tokens). */
  gatewayUrl: string;
  cloudId: string;
  /** A valid e-mail/API token pair (Alice Admin, who sees every project). */
  credentials: { email: string; apiToken: string };
  /** Every request seen, in order (recorded before auth and faults). */
  requests: RecordedRequest[];
  /** Scripted failures, checked before authentication and routing. */
  faults: Fault[];
  /** The raw state, for tests that need more than the accessors. */
  store: JiraStore;
  /** `Basic ...` header value for the default credentials, or for a given pair. */
  authHeader(email?: string, apiToken?: string): string;
  /** Credentials of another seeded user that can log in (bob@example.com). */
  credentialsFor(email: string): { email: string; apiToken: string } | undefined;
  issue(key: string): IssueView | undefined;
  issueKeys(projectKey?: string): string[];
  /** Adds `count` Tasks to a project (default DEMO) and returns their keys. */
  seedIssues(count: number, projectKey?: string, overrides?: Partial<Issue>): string[];
  /** A 429 with Retry-After for the next `times` requests (optionally only under a path). */
  rateLimit(retryAfterSeconds: number, times?: number, pathPrefix?: string): void;
  /**
   * Answers one request that reached this site through an API gateway in front of it (the Atlassian sandbox's
   * api.atlassian.com): `path` is what follows /ex/jira/<cloudId>. The gateway has already authenticated an
   * OAuth bearer when it passes `oauthAccountId`; otherwise the request's own Authorization is checked as
   * this sandbox's gateway checks it (scoped API tokens).
   */
  serveGateway(req: http.IncomingMessage, res: http.ServerResponse, path: string, oauthAccountId?: string): void;
}

type Route = [method: string, pattern: RegExp, handler: Handler];

const API = '/rest/api/3';
const removedSearch: Handler = () => REMOVED_SEARCH;
const ROUTES: Route[] = [
  ['GET', /^\/rest\/api\/3\/myself$/, myself],
  ['POST', /^\/rest\/api\/3\/issue$/, createIssue],
  ['GET', /^\/rest\/api\/3\/issue\/createmeta\/([^/]+)\/issuetypes$/, createMetaIssueTypes],
  ['GET', /^\/rest\/api\/3\/issue\/createmeta\/([^/]+)\/issuetypes\/([^/]+)$/, createMetaFields],
  ['GET', /^\/rest\/api\/3\/issue\/([^/]+)$/, getIssue],
  ['PUT', /^\/rest\/api\/3\/issue\/([^/]+)$/, editIssue],
  ['DELETE', /^\/rest\/api\/3\/issue\/([^/]+)$/, deleteIssue],
  ['GET', /^\/rest\/api\/3\/issue\/([^/]+)\/transitions$/, getTransitions],
  ['POST', /^\/rest\/api\/3\/issue\/([^/]+)\/transitions$/, doTransition],
  ['GET', /^\/rest\/api\/3\/issue\/([^/]+)\/comment$/, listComments],
  ['POST', /^\/rest\/api\/3\/issue\/([^/]+)\/comment$/, addComment],
  ['*', /^\/rest\/api\/[23]\/search$/, removedSearch],
  ['GET', /^\/rest\/api\/3\/search\/jql$/, searchJqlGet],
  ['POST', /^\/rest\/api\/3\/search\/jql$/, searchJqlPost],
  ['POST', /^\/rest\/api\/3\/search\/approximate-count$/, approximateCount],
  ['GET', /^\/rest\/api\/3\/project\/search$/, projectSearch],
  ['GET', /^\/rest\/api\/3\/project\/([^/]+)$/, getProject],
  ['GET', /^\/rest\/api\/3\/user\/search$/, userSearch],
];

type AuthResult = { callerId: string | null } | { reject: 'text' | 'json' };

/** The simulated site's cloud id (as /_edge/tenant_info gives it). */
export const CLOUD_ID = '3f6c2a1e-8b7d-4e5f-9a0b-1c2d3e4f5a6b';

function authenticate(store: JiraStore, header: string | undefined, viaGateway: boolean, oauthAccountId?: string): AuthResult {
  if (oauthAccountId) return { callerId: oauthAccountId };
  if (!header) return { callerId: null };
  const match = /^Basic\s+(\S+)$/i.exec(header.trim());
  if (!match) return { reject: 'json' };
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const email = decoded.slice(0, colon);
  const token = decoded.slice(colon + 1);
  const sameEmail = (u: { email?: string }) => u.email?.toLowerCase() === email.toLowerCase();
  const user = store.users.find((u) => u.apiToken && sameEmail(u) && u.apiToken === token);
  if (colon > 0 && user) return { callerId: user.accountId };
  const scoped = store.users.find((u) => u.scopedApiToken && sameEmail(u) && u.scopedApiToken === token);
  if (colon > 0 && scoped) return viaGateway ? { callerId: scoped.accountId } : { reject: 'json' };
  return { reject: 'text' };
}

/** Starts the sandbox with the default seed (DEMO, OPS, MKT, SEC projects; see seed.ts). */
export async function startJiraSandbox(options: JiraSandboxOptions = {}): Promise<JiraSandbox> {
  // A sandbox served on a socket never opens a TCP port, not even for its gateway.
  if (options.socket && !options.gatewaySocket) throw new Error('Jira sandbox: a socket for the site needs gatewaySocket for the API gateway');
  const store = new JiraStore(options.now ?? Date.now);
  seedDefault(store);
  if (options.apiToken) store.users.find((u) => u.accountId === SEED_USERS.alice.accountId)!.apiToken = options.apiToken;
  store.searchLagMs = options.searchLagMs ?? 0;
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);
  // Assigned once the port (and so the URL used in `self` links) is known, before any request can arrive.
  // eslint-disable-next-line prefer-const -- the handler below closes over it before it can be built
  let services!: Services;

  const cloudId = options.cloudId ?? CLOUD_ID;
  /**
   * One request to the site, or through the gateway (`url` is then the path below /ex/jira/<cloudId>, and
   * `oauthAccountId` the account a gateway in front authenticated by OAuth).
   */
  const handler = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL, viaGateway: boolean, oauthAccountId?: string): Promise<void> => {
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    record({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body, ...(viaGateway ? { gateway: true } : {}) });

    const fault = takeFault(faults, method, url.pathname);
    if (fault) return sendFault(res, fault);
    if (!viaGateway && method === 'GET' && url.pathname === '/_edge/tenant_info') return sendJson(res, 200, { cloudId });

    const auth = authenticate(store, req.headers.authorization, viaGateway, oauthAccountId);
    if ('reject' in auth) {
      if (auth.reject === 'json') return sendJson(res, 401, NOT_AUTHENTICATED);
      res.writeHead(401, { 'content-type': 'text/plain;charset=UTF-8', 'x-seraph-loginreason': 'AUTHENTICATED_FAILED' });
      res.end(WRONG_CREDENTIALS_BODY);
      return;
    }

    const pathMatches = ROUTES.map(([m, pattern, h]) => ({ m, h, params: pattern.exec(url.pathname) })).filter((r) => r.params);
    const route = pathMatches.find((r) => r.m === '*' || r.m === method);
    if (!route) {
      if (pathMatches.length) {
        res.writeHead(405, { allow: pathMatches.map((r) => r.m).join(', ') });
        res.end();
        return;
      }
      return sendJson(res, 404, { message: `null for uri: ${sim.url}${url.pathname}${url.search}`, 'status-code': 404 });
    }
    const jiraReq: JiraRequest = {
      method,
      path: url.pathname,
      query: url.searchParams,
      body,
      callerId: auth.callerId,
      url: `${sim.url}${url.pathname}${url.search}`,
    };
    const reply = route.h(jiraReq, route.params!.slice(1), services);
    if (reply.json === undefined) {
      res.writeHead(reply.status);
      res.end();
      return;
    }
    sendJson(res, reply.status, reply.json);
  };

  const failed = (res: http.ServerResponse) => (err: unknown) => {
    if (!res.headersSent) sendJson(res, 500, { errorMessages: [`Internal server error: ${String(err)}`], errors: {} });
  };
  const sim = await listen((req, res) => {
    handler(req, res, new URL(req.url ?? '/', 'http://127.0.0.1'), false).catch(failed(res));
  }, options);
  const gateway = await listen(
    (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const m = /^\/ex\/jira\/([^/]+)(\/.*)$/.exec(url.pathname);
      // An unknown cloud id or path on the gateway (body unverified).
      if (!m || m[1] !== cloudId) return sendJson(res, 404, { code: 404, message: 'Cannot find a site with this cloud id' });
      handler(req, res, new URL(m[2] + url.search, 'http://127.0.0.1'), true).catch(failed(res));
    },
    { socket: options.gatewaySocket, record: options.record },
  );
  services = { store, render: new Renderer(store, sim.url), pageTokens: new Map() };

  const alice = SEED_USERS.alice;
  const basic = (email: string, token: string) => `Basic ${Buffer.from(`${email}:${token}`).toString('base64')}`;
  return {
    ...sim,
    close: async () => {
      await Promise.all([sim.close(), gateway.close()]);
    },
    gatewayUrl: gateway.url,
    cloudId,
    credentials: { email: alice.email, apiToken: options.apiToken ?? alice.apiToken },
    requests,
    faults,
    store,
    authHeader: (email = alice.email, apiToken = options.apiToken ?? alice.apiToken) => basic(email, apiToken),
    credentialsFor(email) {
      const user = store.users.find((u) => u.email === email && u.apiToken);
      return user ? { email: user.email!, apiToken: user.apiToken! } : undefined;
    },
    issue: (key) => {
      const issue = [...store.issues.values()].find((i) => i.key.toLowerCase() === key.toLowerCase());
      return issue ? view(store, issue) : undefined;
    },
    issueKeys: (projectKey) => [...store.issues.values()].filter((i) => !projectKey || store.project(i.projectId).key === projectKey).map((i) => i.key),
    seedIssues: (count, projectKey = 'DEMO', overrides = {}) => seedManyIssues(store, projectKey, count, overrides),
    rateLimit(retryAfterSeconds, times = 1, pathPrefix = API) {
      faults.push({
        status: 429,
        pathPrefix,
        times,
        headers: { 'retry-after': String(retryAfterSeconds) },
        body: { errorMessages: ['Rate limit exceeded.'], errors: {} },
      });
    },
    serveGateway(req, res, path, oauthAccountId) {
      handler(req, res, new URL(path, 'http://127.0.0.1'), true, oauthAccountId).catch(failed(res));
    },
  };
}

function view(store: JiraStore, i: Issue): IssueView {
  const project = store.project(i.projectId);
  const status = store.status(i.statusId);
  return {
    id: i.id,
    key: i.key,
    project: project.key,
    issueType: store.issueType(i.issueTypeId).name,
    summary: i.summary,
    description: i.description,
    environment: i.environment,
    status: status.name,
    statusCategory: STATUS_CATEGORIES[status.category].key,
    priority: PRIORITIES.find((p) => p.id === i.priorityId)?.name ?? null,
    assignee: i.assigneeId,
    reporter: i.reporterId,
    labels: [...i.labels],
    components: project.components.filter((c) => i.componentIds.includes(c.id)).map((c) => c.name),
    fixVersions: project.versions.filter((v) => i.fixVersionIds.includes(v.id)).map((v) => v.name),
    parent: i.parentId ? (store.issues.get(i.parentId)?.key ?? null) : null,
    subtasks: store.subtasks(i).map((s) => s.key),
    duedate: i.duedate,
    resolution: RESOLUTIONS.find((r) => r.id === i.resolutionId)?.name ?? null,
    created: jiraTime(i.created),
    updated: jiraTime(i.updated),
    comments: i.comments.map((c) => ({ id: c.id, author: c.authorId, body: c.body, created: jiraTime(c.created) })),
  };
}
