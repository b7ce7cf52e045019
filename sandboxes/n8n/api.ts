// The public REST API under /api/v1 (docs/provider-coverage.md-2.3). Checks run in n8n's order:
// route (404 "not found") and method (405), API key (401), query validation (400), then the handler.
import type http from 'node:http';
import { sendJson } from '../harness.ts';
import { safeDecode, setPublished, type N8nTag, type N8nWorkflow } from './model.ts';
import type { ApiUser } from './seed.ts';

export interface ApiContext {
  workflows: N8nWorkflow[];
  tags: N8nTag[];
  apiUsers: Record<string, ApiUser>;
}

interface ParamSpec {
  name: string;
  type: 'boolean' | 'number' | 'string';
  min?: number;
  max?: number;
}

type Query = Record<string, string | number | boolean | undefined>;

interface Route {
  params: ParamSpec[];
  handle(ctx: ApiContext, user: ApiUser, id: string | undefined, query: Query, res: http.ServerResponse): void;
}

const EXCLUDE_PINNED: ParamSpec = { name: 'excludePinnedData', type: 'boolean' };
const LIST_PARAMS: ParamSpec[] = [
  { name: 'active', type: 'boolean' },
  { name: 'tags', type: 'string' },
  { name: 'name', type: 'string' },
  { name: 'projectId', type: 'string' },
  EXCLUDE_PINNED,
  { name: 'limit', type: 'number', min: 1, max: 250 },
  { name: 'cursor', type: 'string' },
  { name: 'query', type: 'string' },
];

const error = (res: http.ServerResponse, status: number, message: string) => sendJson(res, status, { message });

/** Coerces and checks query parameters the way express-openapi-validator (ajv) reports them. */
function validateQuery(search: URLSearchParams, specs: ParamSpec[]): { query: Query } | { message: string } {
  for (const key of search.keys()) {
    if (!specs.some((s) => s.name === key)) return { message: `Unknown query parameter '${key}'` };
  }
  const query: Query = {};
  const problems: string[] = [];
  for (const spec of specs) {
    const raw = search.get(spec.name);
    if (raw === null) continue;
    const where = `request/query/${spec.name}`;
    if (spec.type === 'boolean') {
      if (raw === 'true' || raw === 'false') query[spec.name] = raw === 'true';
      else problems.push(`${where} must be boolean`);
    } else if (spec.type === 'number') {
      const value = raw.trim() === '' ? 0 : Number(raw); // ajv coerces "" to 0
      if (Number.isNaN(value)) problems.push(`${where} must be number`);
      else if (spec.max !== undefined && value > spec.max) problems.push(`${where} must be <= ${spec.max}`);
      else if (spec.min !== undefined && value < spec.min) problems.push(`${where} must be >= ${spec.min}`);
      else query[spec.name] = value;
    } else {
      query[spec.name] = raw;
    }
  }
  return problems.length ? { message: problems.join(', ') } : { query };
}

const canRead = (user: ApiUser, workflow: N8nWorkflow) => user.role === 'owner' || workflow.shared.some((s) => user.projectIds.includes(s.projectId));

/** Finds a workflow the caller may use, or answers with n8n's owner/member flavoured 404/403. */
function findForUser(ctx: ApiContext, user: ApiUser, id: string, res: http.ServerResponse): N8nWorkflow | undefined {
  const workflow = ctx.workflows.find((w) => w.id === id);
  if (user.role === 'owner') {
    if (!workflow) error(res, 404, 'Not Found');
    return workflow;
  }
  if (!workflow) error(res, 404, `Workflow with ID "${id}" not found.`);
  else if (!canRead(user, workflow)) error(res, 403, 'Forbidden');
  else return workflow;
  return undefined;
}

function render(workflow: N8nWorkflow, excludePinnedData: unknown): N8nWorkflow {
  const copy = structuredClone(workflow);
  if (excludePinnedData === true) delete copy.pinData;
  return copy;
}

/** The cursor is base64 of JSON {limit, offset}; anything else is "invalid". */
function decodeCursor(cursor: string): { limit: number; offset: number } | undefined {
  try {
    const data = JSON.parse(Buffer.from(cursor, 'base64').toString('utf8')) as { limit?: unknown; offset?: unknown };
    const { limit, offset } = data;
    if (Number.isInteger(limit) && Number.isInteger(offset) && (limit as number) >= 1 && (offset as number) >= 0) {
      return { limit: limit as number, offset: offset as number };
    }
  } catch {
    // fall through
  }
  return undefined;
}

function encodeNextCursor(offset: number, limit: number, total: number): string | null {
  if (offset + limit >= total) return null;
  return Buffer.from(JSON.stringify({ limit, offset: offset + limit })).toString('base64');
}

function matchesFilters(ctx: ApiContext, workflow: N8nWorkflow, query: Query): boolean {
  if (query.active !== undefined && workflow.active !== query.active) return false;
  if (typeof query.name === 'string' && !workflow.name.toLowerCase().includes(query.name.trim().toLowerCase())) return false;
  if (typeof query.query === 'string') {
    const needle = query.query.trim().toLowerCase();
    if (!`${workflow.name}\n${workflow.description ?? ''}`.toLowerCase().includes(needle)) return false;
  }
  if (typeof query.projectId === 'string' && !workflow.shared.some((s) => s.projectId === query.projectId)) return false;
  if (typeof query.tags === 'string') {
    // Every named tag must be on the workflow; names no tag has are ignored (and none known matches nothing).
    const wanted = query.tags.split(',').map((t) => t.trim());
    const existing = wanted.filter((name) => ctx.tags.some((t) => t.name === name));
    if (existing.length === 0 || !existing.every((name) => workflow.tags.some((t) => t.name === name))) return false;
  }
  return true;
}

const listWorkflows: Route = {
  params: LIST_PARAMS,
  handle(ctx, user, _id, query, res) {
    let offset = 0;
    let limit = typeof query.limit === 'number' ? Math.floor(query.limit) : 100;
    if (typeof query.cursor === 'string' && query.cursor !== '') {
      const page = decodeCursor(query.cursor);
      if (!page) return error(res, 400, 'An invalid cursor was provided');
      ({ offset, limit } = page);
    }
    const matching = ctx.workflows.filter((w) => canRead(user, w) && matchesFilters(ctx, w, query));
    sendJson(res, 200, {
      data: matching.slice(offset, offset + limit).map((w) => render(w, query.excludePinnedData)),
      nextCursor: encodeNextCursor(offset, limit, matching.length),
    });
  },
};

const getWorkflow: Route = {
  params: [EXCLUDE_PINNED],
  handle(ctx, user, id, query, res) {
    const workflow = findForUser(ctx, user, id!, res);
    if (workflow) sendJson(res, 200, render(workflow, query.excludePinnedData));
  },
};

const deleteWorkflow: Route = {
  params: [],
  handle(ctx, user, id, _query, res) {
    const workflow = findForUser(ctx, user, id!, res);
    if (!workflow) return;
    ctx.workflows.splice(ctx.workflows.indexOf(workflow), 1);
    sendJson(res, 200, render(workflow, false));
  },
};

const publish = (published: boolean): Route => ({
  params: [],
  handle(ctx, user, id, _query, res) {
    const workflow = findForUser(ctx, user, id!, res);
    if (!workflow) return;
    setPublished(workflow, published, new Date().toISOString());
    sendJson(res, 200, render(workflow, false));
  },
});

const getWorkflowTags: Route = {
  params: [],
  handle(ctx, user, id, _query, res) {
    const workflow = findForUser(ctx, user, id!, res);
    if (workflow) sendJson(res, 200, structuredClone(workflow.tags));
  },
};

/** Methods per route; segments are the path after /api/v1, ':id' matches one segment. */
const ROUTES: Array<{ pattern: string[]; methods: Record<string, Route> }> = [
  { pattern: ['workflows'], methods: { GET: listWorkflows } },
  { pattern: ['workflows', ':id'], methods: { GET: getWorkflow, DELETE: deleteWorkflow } },
  { pattern: ['workflows', ':id', 'activate'], methods: { POST: publish(true) } },
  { pattern: ['workflows', ':id', 'deactivate'], methods: { POST: publish(false) } },
  { pattern: ['workflows', ':id', 'tags'], methods: { GET: getWorkflowTags } },
];

function matchRoute(segments: string[]) {
  for (const route of ROUTES) {
    if (route.pattern.length !== segments.length) continue;
    let id: string | undefined;
    const ok = route.pattern.every((part, i) => {
      if (part === ':id') {
        id = safeDecode(segments[i]);
        return true;
      }
      return part === segments[i];
    });
    if (ok) return { route, id };
  }
  return undefined;
}

/** Handles a request whose path starts with /api/v1. */
export function handleApi(ctx: ApiContext, req: http.IncomingMessage, res: http.ServerResponse, url: URL, rawBody: string): void {
  const method = req.method ?? 'GET';
  const contentType = req.headers['content-type'] ?? '';
  if (rawBody.length > 0 && /json/i.test(contentType)) {
    try {
      JSON.parse(rawBody);
    } catch {
      return error(res, 400, 'Invalid JSON in request body');
    }
  }
  const segments = url.pathname.slice('/api/v1'.length).split('/').filter(Boolean);
  const match = matchRoute(segments);
  if (!match) return error(res, 404, 'not found');
  const route = match.route.methods[method];
  if (!route) return error(res, 405, `${method} method not allowed`);

  const key = req.headers['x-n8n-api-key'];
  if (key === undefined) return error(res, 401, "'X-N8N-API-KEY' header required");
  const user = typeof key === 'string' ? ctx.apiUsers[key] : undefined;
  if (!user) return error(res, 401, 'unauthorized');

  const validated = validateQuery(url.searchParams, route.params);
  if ('message' in validated) return error(res, 400, validated.message);
  route.handle(ctx, user, match.id, validated.query, res);
}
