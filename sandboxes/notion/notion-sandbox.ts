// In-process Notion API sandbox (Notion-Version 2025-09-03, databases with data sources),
// faithful to docs/provider-coverage.md: auth and version checks, error bodies, pagination, validation.
// With `oauth` it is also Notion's OAuth server for public integrations (oauth.ts): their access tokens reach
// the same workspace, each integration seeing the pages shared with its own bot.
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { listen, readBody, recorder, sendFault, sendJson, takeFault, type Fault, type ListenOptions, type RecordedRequest } from '../harness.ts';
import { NotionApi } from './api.ts';
import { errorBody, invalidUrl, NotionError, unauthorized } from './errors.ts';
import { Workspace, type BlockRecord, type DatabaseRecord, type DataSourceRecord, type PageRecord } from './model.ts';
import { seedWorkspace, type SeedIds } from './seed.ts';
import { isObject, newId, normalizeId, type Json } from './util.ts';
import { createNotionOAuth, type NotionOAuth, type NotionOAuthOptions } from './oauth.ts';

export const NOTION_VERSION = '2025-09-03';
/** Versions Notion knows; data sources exist from 2025-09-03 on. */
const KNOWN_VERSIONS = ['2021-05-11', '2021-05-13', '2021-08-16', '2022-02-22', '2022-06-28', '2025-09-03', '2026-03-11'];
const FIRST_DATA_SOURCE_VERSION = '2025-09-03';

export interface NotionSandboxOptions extends ListenOptions {
  /** The internal integration token (`ntn_…`; random by default). */
  token?: string;
  /** Delay before a template's content appears on a page created from it (default 150 ms). */
  templateDelayMs?: number;
  /** Public integrations that users connect by OAuth (sandboxes/notion/oauth.ts). */
  oauth?: NotionOAuthOptions;
}

export interface NotionSandbox {
  /** Base URL; the API is under `${url}/v1/...`. */
  url: string;
  close(): Promise<void>;
  /** An internal integration token (`ntn_…`). */
  token: string;
  /** The same integration's token in the older `secret_…` form. */
  legacyToken: string;
  /** A public (OAuth) integration's token: it may create pages and databases at the workspace level. */
  publicToken: string;
  /** The OAuth authorization server of the public integrations in `options.oauth` (none registered by default). */
  oauth: NotionOAuth;
  requests: RecordedRequest[];
  faults: Fault[];
  ids: SeedIds;
  /** Raw records for assertions (undefined when absent). */
  page(id: string): PageRecord | undefined;
  database(id: string): DatabaseRecord | undefined;
  dataSource(id: string): DataSourceRecord | undefined;
  /** The first-level child blocks of a page or block, trashed ones excluded. */
  blocks(id: string): BlockRecord[];
  /** The page or block as the API would answer it. */
  pageJson(id: string): Json;
}

/** A 429 like Notion's, to push onto `faults`. */
export function rateLimitFault(retryAfterSeconds = 1, extra: Partial<Fault> = {}): Fault {
  return {
    status: 429,
    body: errorBody(429, 'rate_limited', 'You have been rate limited. Please try again in a few minutes.'),
    headers: { 'retry-after': String(retryAfterSeconds) },
    ...extra,
  };
}

const OAUTH_ENDPOINTS = ['/v1/oauth/token', '/v1/oauth/revoke', '/v1/oauth/introspect'];

const tokenOf = (prefix: string) => `${prefix}${randomBytes(24).toString('base64url')}`;

/** Drops `archived` from objects for 2026-03-11, which only has `in_trash`. */
function withoutArchived(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutArchived);
  if (!isObject(value)) return value;
  const copy: Json = { ...value };
  if (typeof copy.object === 'string' && 'in_trash' in copy) delete copy.archived;
  if (Array.isArray(copy.results)) copy.results = copy.results.map(withoutArchived);
  return copy;
}

export async function startNotionSandbox(options: NotionSandboxOptions = {}): Promise<NotionSandbox> {
  const ws = new Workspace(newId());
  const ids = seedWorkspace(ws);
  const token = options.token ?? tokenOf('ntn_');
  const legacyToken = tokenOf('secret_');
  const publicToken = randomBytes(24).toString('hex');
  const internal = new NotionApi(ws, { isPublicIntegration: false, templateDelayMs: options.templateDelayMs ?? 150 });
  const external = new NotionApi(ws, { isPublicIntegration: true, templateDelayMs: options.templateDelayMs ?? 150 });
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);
  const ada = ws.users.get(ids.users.ada)!;
  const oauth = createNotionOAuth(
    ws,
    { id: ada.id, name: ada.name, email: ada.email! },
    { clients: [], ...options.oauth, templateDelayMs: options.templateDelayMs ?? 150 },
  );

  function answer(req: http.IncomingMessage, url: URL, raw: string): { status: number; body: unknown } {
    const auth = req.headers.authorization ?? '';
    const bearer = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    const api = bearer === publicToken ? external : bearer === token || bearer === legacyToken ? internal : oauth.apiFor(bearer);
    if (!api) throw unauthorized();
    const version = req.headers['notion-version'];
    if (version === undefined) {
      throw new NotionError(
        400,
        'missing_version',
        'Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.',
      );
    }
    if (typeof version !== 'string' || !KNOWN_VERSIONS.includes(version)) {
      throw new NotionError(
        400,
        'missing_version',
        `Notion-Version header failed validation: Notion-Version header should be a valid version, instead was \`${JSON.stringify(version)}\`.`,
      );
    }
    const segments = url.pathname.split('/').filter(Boolean);
    if (segments.shift() !== 'v1') throw invalidUrl();
    if (segments[0] === 'data_sources' && version < FIRST_DATA_SOURCE_VERSION) throw invalidUrl();
    let body: Json = {};
    if (raw.trim() && req.method !== 'GET') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new NotionError(400, 'invalid_json', 'Error parsing JSON body.');
      }
      if (!isObject(parsed))
        throw new NotionError(400, 'validation_error', `body failed validation: body should be an object, instead was \`${raw.slice(0, 100)}\`.`);
      body = parsed;
    }
    const result = api.handle({ method: req.method ?? 'GET', segments, query: url.searchParams, body });
    return { status: 200, body: version === '2026-03-11' ? withoutArchived(result) : result };
  }

  const server = await listen(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/v1/oauth/authorize') {
      // The consent page reads its own form.
      record({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body: '' });
      return oauth.controls.pages(req, res);
    }
    const raw = await readBody(req);
    record({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body: raw });
    const fault = takeFault(faults, req.method ?? 'GET', url.pathname);
    if (fault) return sendFault(res, fault);
    if (req.method === 'POST' && OAUTH_ENDPOINTS.includes(url.pathname)) return oauth.endpoint(req, res, url.pathname, raw);
    try {
      const { status, body } = answer(req, url, raw);
      sendJson(res, status, body);
    } catch (err) {
      if (err instanceof NotionError) return sendJson(res, err.status, errorBody(err.status, err.code, err.message));
      sendJson(res, 500, errorBody(500, 'internal_server_error', 'Unexpected error occurred.'));
      console.error('notion sandbox:', err);
    }
  }, options);

  const find = <T>(map: Map<string, T>, id: string) => map.get(normalizeId(id) ?? id);
  return {
    url: server.url,
    close: async () => {
      internal.close();
      external.close();
      oauth.close();
      await server.close();
    },
    token,
    legacyToken,
    publicToken,
    oauth: oauth.controls,
    requests,
    faults,
    ids,
    page: (id) => find(ws.pages, id),
    database: (id) => find(ws.databases, id),
    dataSource: (id) => find(ws.dataSources, id),
    blocks: (id) => {
      const container = find(ws.pages, id) ?? find(ws.blocks, id);
      return ws.visibleChildren(container?.children ?? []).flatMap((c) => ws.blocks.get(c) ?? []);
    },
    pageJson: (id) => ws.pageJson(find(ws.pages, id)!),
  };
}
