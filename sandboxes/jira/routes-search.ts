// Search (enhanced /search/jql and approximate count), projects, create metadata, users, myself.
import { randomBytes } from 'node:crypto';
import { compileJql, type CompiledJql } from './jql-eval.ts';
import { JqlError } from './jql-parse.ts';
import {
  INVALID_PAYLOAD,
  NOT_AUTHENTICATED,
  errors,
  intParam,
  jsonObject,
  listParam,
  type Handler,
  type JiraRequest,
  type Reply,
  type Services,
} from './http.ts';
import { PRIORITIES, jiraTime, type Issue, type Project } from './model.ts';
import { FIELD_NAMES, selectFields } from './render.ts';

const UNBOUNDED = 'Unbounded JQL queries are not allowed here. Please add a search restriction to your query.';
/** The POST /search/jql bean has additionalProperties:false; its answer carries no `errors` key. */
const PAYLOAD_REJECTED: Reply = { status: 400, json: { errorMessages: [INVALID_PAYLOAD] } };
const SEARCH_KEYS = new Set(['jql', 'nextPageToken', 'maxResults', 'fields', 'expand', 'properties', 'fieldsByKeys', 'failFast', 'reconcileIssues']);

export const REMOVED_SEARCH: Reply = {
  status: 410,
  json: errors([
    'The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046',
  ]),
};

interface SearchInput {
  jql: string;
  nextPageToken?: string;
  maxResults: number;
  fields: string[];
  expand: string[];
  reconcileIssues: string[];
}

/** Compiles bounded JQL or answers with Jira's 400. */
function compileBounded(req: JiraRequest, s: Services, jql: string): CompiledJql | Reply {
  try {
    const compiled = compileJql(jql, { store: s.store, callerId: req.callerId, now: s.store.now() });
    if (!compiled.bounded) return { status: 400, json: errors([UNBOUNDED]) };
    return compiled;
  } catch (e) {
    if (e instanceof JqlError) return { status: 400, json: errors(e.messages) };
    throw e;
  }
}

/** Matching issues the caller can see, sorted; not-yet-indexed issues only when reconciled by id. */
function matchingIssues(req: JiraRequest, s: Services, compiled: CompiledJql, reconcile: string[] = []): Issue[] {
  const visible = new Set(s.store.visibleProjects(req.callerId).map((p) => p.id));
  const now = s.store.now();
  return [...s.store.issues.values()]
    .filter((i) => visible.has(i.projectId) && (i.indexedAt <= now || reconcile.includes(i.id)) && compiled.matches(i))
    .sort(compiled.compare);
}

function search(req: JiraRequest, s: Services, input: SearchInput): Reply {
  const compiled = compileBounded(req, s, input.jql);
  if (!('matches' in compiled)) return compiled;
  let offset = 0;
  if (input.nextPageToken) {
    const page = s.pageTokens.get(input.nextPageToken);
    if (!page || page.jql !== input.jql) return { status: 400, json: errors(['The provided next page token is invalid or expired.']) };
    offset = page.offset;
  }
  const { fields, onlyId } = selectFields(input.fields, false);
  // Jira returns fewer than asked when it has to load many fields; ids and keys come in bigger pages.
  const cap = fields.size === 0 ? 5000 : 100;
  const limit = Math.min(Math.max(input.maxResults, 1), cap);
  const all = matchingIssues(req, s, compiled, input.reconcileIssues);
  const page = all.slice(offset, offset + limit);
  const perIssueExpand = new Set(input.expand.filter((e) => e !== 'names' && e !== 'schema'));
  const out: Record<string, unknown> = {
    issues: page.map((i) => (onlyId ? { id: i.id } : s.render.issue(i, fields, perIssueExpand))),
  };
  const isLast = offset + limit >= all.length;
  if (!isLast) {
    const token = randomBytes(24).toString('base64url');
    s.pageTokens.set(token, { jql: input.jql, offset: offset + limit });
    out.nextPageToken = token;
  }
  out.isLast = isLast;
  if (input.expand.includes('names')) out.names = Object.fromEntries([...fields].map((f) => [f, FIELD_NAMES[f]]));
  if (input.expand.includes('schema')) out.schema = Object.fromEntries([...fields].map((f) => [f, { system: f }]));
  return { status: 200, json: out };
}

export const searchJqlGet: Handler = (req, _p, s) => {
  const maxResults = intParam(req.query, 'maxResults', 50);
  if (Number.isNaN(maxResults)) return { status: 400, json: errors([INVALID_PAYLOAD]) };
  return search(req, s, {
    jql: req.query.get('jql') ?? '',
    nextPageToken: req.query.get('nextPageToken') ?? undefined,
    maxResults,
    fields: req.query.getAll('fields'),
    expand: listParam(req.query, 'expand'),
    reconcileIssues: listParam(req.query, 'reconcileIssues'),
  });
};

export const searchJqlPost: Handler = (req, _p, s) => {
  const body = jsonObject(req.body);
  if (!body || Object.keys(body).some((k) => !SEARCH_KEYS.has(k))) return PAYLOAD_REJECTED;
  const { jql = '', nextPageToken, maxResults = 50, fields = [], expand = '', reconcileIssues = [] } = body;
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const wellTyped =
    typeof jql === 'string' &&
    (nextPageToken == null || typeof nextPageToken === 'string') &&
    Number.isInteger(maxResults) &&
    strings(fields) &&
    typeof expand === 'string' &&
    Array.isArray(reconcileIssues) &&
    reconcileIssues.every((x) => Number.isInteger(x));
  if (!wellTyped) return PAYLOAD_REJECTED;
  return search(req, s, {
    jql: jql as string,
    nextPageToken: (nextPageToken as string | null) ?? undefined,
    maxResults: maxResults as number,
    fields: fields as string[],
    expand: (expand as string)
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean),
    reconcileIssues: (reconcileIssues as number[]).map(String),
  });
};

export const approximateCount: Handler = (req, _p, s) => {
  const body = jsonObject(req.body);
  if (!body || Object.keys(body).some((k) => k !== 'jql') || typeof body.jql !== 'string') return PAYLOAD_REJECTED;
  const compiled = compileBounded(req, s, body.jql);
  if (!('matches' in compiled)) return compiled;
  return { status: 200, json: { count: matchingIssues(req, s, compiled).length } };
};

// ---------------------------------------------------------------------------------------------
// Projects and create metadata
// ---------------------------------------------------------------------------------------------

const PROJECT_EXPAND = 'description,lead,issueTypes,url,projectKeys,permissions,insight';

function projectJson(s: Services, p: Project, expand: Set<string>): Record<string, unknown> {
  const issues = [...s.store.issues.values()].filter((i) => i.projectId === p.id);
  const out: Record<string, unknown> = {
    expand: PROJECT_EXPAND,
    ...s.render.projectRef(p),
    style: p.simplified ? 'next-gen' : 'classic',
    isPrivate: Boolean(p.visibleTo),
    properties: {},
  };
  if (expand.has('description')) out.description = p.description;
  if (expand.has('lead')) out.lead = s.render.userOrNull(p.leadAccountId);
  if (expand.has('issueTypes')) out.issueTypes = p.issueTypeIds.map((id) => s.render.issueType(s.store.issueType(id)));
  if (expand.has('url')) out.url = `${s.render.base}/browse/${p.key}`;
  if (expand.has('projectKeys')) out.projectKeys = [p.key];
  if (expand.has('insight')) {
    const last = Math.max(0, ...issues.map((i) => i.updated));
    out.insight = { totalIssueCount: issues.length, ...(last ? { lastIssueUpdateTime: jiraTime(last) } : {}) };
  }
  return out;
}

const PROJECT_ORDER: Record<string, (s: Services, p: Project) => string | number> = {
  key: (_s, p) => p.key,
  name: (_s, p) => p.name.toLowerCase(),
  category: () => '',
  owner: (s, p) => s.store.user(p.leadAccountId)?.displayName.toLowerCase() ?? '',
  issueCount: (s, p) => [...s.store.issues.values()].filter((i) => i.projectId === p.id).length,
  lastIssueUpdatedTime: (s, p) => Math.max(0, ...[...s.store.issues.values()].filter((i) => i.projectId === p.id).map((i) => i.updated)),
};

export const projectSearch: Handler = (req, _p, s) => {
  const q = req.query;
  const startAt = intParam(q, 'startAt', 0);
  const requested = intParam(q, 'maxResults', 50);
  if (Number.isNaN(startAt) || Number.isNaN(requested) || startAt < 0 || requested < 0) {
    return { status: 400, json: errors(["Parameters 'startAt' and 'maxResults' must be non-negative integers."]) };
  }
  const maxResults = Math.min(requested, 100);
  const orderBy = q.get('orderBy') ?? 'key';
  const desc = orderBy.startsWith('-');
  const orderKey = orderBy.replace(/^[-+]/, '');
  const sortValue = PROJECT_ORDER[orderKey];
  if (!sortValue) return { status: 400, json: errors([`Invalid value '${orderBy}' for parameter 'orderBy'.`]) };

  const ids = q.getAll('id');
  const keys = q.getAll('keys').flatMap((k) => k.split(','));
  const text = (q.get('query') ?? '').toLowerCase();
  const types = listParam(q, 'typeKey');
  const matching = s.store
    .visibleProjects(req.callerId)
    .filter((p) => ids.length === 0 || ids.includes(p.id))
    .filter((p) => keys.length === 0 || keys.some((k) => k.toLowerCase() === p.key.toLowerCase()))
    .filter((p) => !text || p.key.toLowerCase().includes(text) || p.name.toLowerCase().includes(text))
    .filter((p) => types.length === 0 || types.includes(p.projectTypeKey))
    .sort((a, b) => {
      const x = sortValue(s, a);
      const y = sortValue(s, b);
      const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return (desc ? -c : c) || a.key.localeCompare(b.key);
    });
  // OpenAPI (searchProjects): 404 "Returned if no projects matching the search criteria are found" (body text
  // unverified); an anonymous caller gets an empty page (docs/provider-coverage.md).
  if (matching.length === 0 && req.callerId) return { status: 404, json: errors(['No projects were found matching the search criteria.']) };
  const expand = new Set(listParam(q, 'expand'));
  const values = matching.slice(startAt, startAt + maxResults).map((p) => projectJson(s, p, expand));
  const isLast = startAt + maxResults >= matching.length;
  const page: Record<string, unknown> = { self: req.url };
  if (!isLast) {
    const next = new URL(req.url);
    next.searchParams.set('startAt', String(startAt + maxResults));
    next.searchParams.set('maxResults', String(maxResults));
    page.nextPage = next.toString();
  }
  Object.assign(page, { maxResults, startAt, total: matching.length, isLast, values });
  return { status: 200, json: page };
};

function projectOr404(req: JiraRequest, s: Services, ref: string): Project | Reply {
  const key = decodeURIComponent(ref);
  const project = s.store.findProject(req.callerId, key);
  return project ?? { status: 404, json: errors([`No project could be found with key '${key}'.`]) };
}

export const getProject: Handler = (req, [ref], s) => {
  const project = projectOr404(req, s, ref);
  if (!('key' in project)) return project;
  const json = projectJson(s, project, new Set(['description', 'lead', 'issueTypes', 'url', 'projectKeys', ...listParam(req.query, 'expand')]));
  json.components = project.components.map((c) => s.render.component(c));
  json.versions = project.versions.map((v) => s.render.version(v, project.id));
  return { status: 200, json };
};

/** startAt/maxResults of the createmeta pages (max 200). */
function metaPage(req: JiraRequest): { startAt: number; maxResults: number } | Reply {
  const startAt = intParam(req.query, 'startAt', 0);
  const maxResults = intParam(req.query, 'maxResults', 50);
  if (maxResults > 200) return { status: 400, json: errors(["Parameter 'maxResults' must not exceed the limit '200'"]) };
  if (Number.isNaN(startAt) || Number.isNaN(maxResults) || startAt < 0 || maxResults < 0) return { status: 400, json: errors([INVALID_PAYLOAD]) };
  return { startAt, maxResults };
}

export const createMetaIssueTypes: Handler = (req, [ref], s) => {
  const page = metaPage(req);
  if ('status' in page) return page;
  const project = projectOr404(req, s, ref);
  // OpenAPI (getCreateIssueMetaIssueTypes) has no 404: an unknown or hidden project is its 400 (body text unverified).
  if (!('key' in project)) return { ...project, status: 400 };
  const types = project.issueTypeIds.map((id) => s.render.issueType(s.store.issueType(id)));
  return {
    status: 200,
    json: { issueTypes: types.slice(page.startAt, page.startAt + page.maxResults), maxResults: page.maxResults, startAt: page.startAt, total: types.length },
  };
};

export const createMetaFields: Handler = (req, [ref, typeId], s) => {
  const page = metaPage(req);
  if ('status' in page) return page;
  const project = projectOr404(req, s, ref);
  if (!('key' in project)) return project;
  if (!project.issueTypeIds.includes(typeId)) {
    return { status: 404, json: errors([`Issue type with id '${typeId}' does not exist or is not valid for project '${project.key}'.`]) };
  }
  const type = s.store.issueType(typeId);
  const r = s.render;
  const allowed: Record<string, unknown[]> = {
    project: [r.projectRef(project)],
    issuetype: [r.issueType(type)],
    priority: PRIORITIES.map((p) => r.priority(p)),
    components: project.components.map((c) => r.component(c)),
    fixVersions: project.versions.map((v) => r.version(v, project.id)),
  };
  const required = new Set(['summary', 'project', 'issuetype', ...project.requiredFields, ...(type.subtask ? ['parent'] : [])]);
  const fieldIds = ['summary', 'issuetype', 'project', ...project.screenFields].filter((f) => f !== 'parent' || type.hierarchyLevel < 1);
  const fields = fieldIds.map((f) => ({
    required: required.has(f),
    schema: { type: f === 'labels' || f === 'components' || f === 'fixVersions' ? 'array' : f, system: f },
    name: FIELD_NAMES[f],
    key: f,
    fieldId: f,
    hasDefaultValue: f === 'priority' || f === 'reporter',
    operations: ['labels', 'components', 'fixVersions'].includes(f) ? ['add', 'set', 'remove'] : ['set'],
    ...(allowed[f] ? { allowedValues: allowed[f] } : {}),
  }));
  return {
    status: 200,
    json: { fields: fields.slice(page.startAt, page.startAt + page.maxResults), maxResults: page.maxResults, startAt: page.startAt, total: fields.length },
  };
};

// ---------------------------------------------------------------------------------------------
// Users
// ---------------------------------------------------------------------------------------------

export const userSearch: Handler = (req, _p, s) => {
  const q = req.query;
  if (q.has('username') || q.has('key')) {
    const name = q.has('username') ? 'username' : 'key';
    return { status: 400, json: errors([`The query parameter '${name}' is not supported in GDPR strict mode.`]) };
  }
  const query = q.get('query');
  const accountId = q.get('accountId');
  if (query !== null && accountId !== null) return { status: 400, json: errors(["The parameters 'query' and 'accountId' cannot be used together."]) };
  if (query === null && accountId === null && !q.has('property')) {
    return { status: 400, json: errors(["One of 'query', 'accountId' or 'property' query parameters is required."]) };
  }
  // Anonymous callers lack "Browse users and groups": an empty list, not an error.
  if (!req.callerId) return { status: 200, json: [] };
  const startAt = Math.max(0, intParam(q, 'startAt', 0) || 0);
  const maxResults = Math.max(0, intParam(q, 'maxResults', 50) || 50);
  const prefix = (query ?? '').toLowerCase();
  const found = s.store.users.filter((u) => {
    if (accountId !== null) return u.accountId === accountId;
    if (query === null) return false;
    const names = [u.displayName.toLowerCase(), ...u.displayName.toLowerCase().split(/\s+/)];
    const email = u.email && u.emailVisible ? u.email.toLowerCase() : undefined;
    return names.some((n) => n.startsWith(prefix)) || Boolean(email?.startsWith(prefix));
  });
  return { status: 200, json: found.slice(startAt, startAt + maxResults).map((u) => s.render.user(u)) };
};

export const myself: Handler = (req, _p, s) => {
  const user = s.store.user(req.callerId);
  if (!user) return { status: 401, json: NOT_AUTHENTICATED };
  return {
    status: 200,
    json: { ...s.render.user(user), groups: { size: 1, items: [] }, applicationRoles: { size: 1, items: [] }, expand: 'groups,applicationRoles' },
  };
};
