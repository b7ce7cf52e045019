// Supabase Data API (PostgREST) sandbox on real Postgres (PGlite): the gateway's key check, JWT roles
// mapped to Postgres roles with row-level security, PostgREST's URL grammar, preferences, status codes and
// error bodies (docs/provider-coverage.md). Postgres itself raises the constraint/type/column/permission errors.
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { PGlite, type Transaction } from '@electric-sql/pglite';
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
} from '../harness.ts';
import { identify, makeProjectKeys, signJwt, type ProjectKeys, type RequestIdentity } from './auth.ts';
import { closestName, columnNotFound, fromPostgres, invalidBody, invalidRange, PgrstError, safeUpdateError, tableNotFound } from './errors.ts';
import { parseQuery, type ParsedQuery, type SelectItem } from './grammar.ts';
import { loadSchemaCache, type ColumnInfo, type SchemaCache } from './schema.ts';
import { AUTH_SQL, OWN_DATABASE, dropSql, rolesSql, seedSql, type TenantNames } from './seed.ts';
import { arrayLiteral, jsonBody, orderClause, quoteIdent, selectList, SqlParams, whereClause } from './sql.ts';

export { signJwt } from './auth.ts';
export type { ErrorBody } from './errors.ts';

export interface PostgrestProjectOptions {
  /** Keep the tables in this shared database (a schema and roles of their own) instead of a database of their own. */
  database?: SharedDatabase;
  /** Derive the project's keys from this secret (the same keys at every start); random by default. */
  keySeed?: string;
  /** PostgREST major version to emulate: 12 (missing table = 42P01, no Proxy-Status) or 13 (default). */
  version?: 12 | 13;
  /** db-max-rows: the most rows one response carries (Supabase default 1000). */
  maxRows?: number;
  /** The project ref its legacy keys name (default `sandbox`). */
  ref?: string;
  /** Record every request in `requests` (default true). */
  record?: boolean;
}

export interface PostgrestSandboxOptions extends ListenOptions, PostgrestProjectOptions {}

/** A project's Data API without a listener of its own: `handler` answers requests whose path starts at /rest/v1. */
export interface PostgrestProject extends ProjectKeys {
  handler: http.RequestListener;
  version: 12 | 13;
  requests: RecordedRequest[];
  faults: Fault[];
  /** Runs SQL as the database owner (bypasses RLS) and returns the rows; reloads the schema cache after. */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Signs a JWT with the project secret, e.g. a user token `{role: 'authenticated', sub: 'alice'}`. */
  signJwt(claims: Record<string, unknown>): string;
  /** Drops every table of the sandbox's schema and seeds the default tables again. */
  reset(): Promise<void>;
  /** Drops the project's tables (its tenant of a shared database) or closes its own database. */
  close(): Promise<void>;
}

export interface PostgrestSandbox extends RunningSandbox, Omit<PostgrestProject, 'handler' | 'close'> {
  /** `${url}/rest/v1`. */
  restUrl: string;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string;
}

interface Preferences {
  return?: 'minimal' | 'representation' | 'headers-only';
  count?: 'exact' | 'planned' | 'estimated';
  missingDefault: boolean;
  strict: boolean;
  maxAffected?: number;
  applied: string[];
}

/** What one request to a table asks for, parsed and checked before touching the database. */
interface TableRequest {
  table: string;
  columns: ColumnInfo[];
  query: ParsedQuery;
  prefs: Preferences;
  identity: RequestIdentity;
  single: boolean;
  body: string;
  rangeHeader?: string;
  headOnly: boolean;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const OBJECT_TYPE = 'application/vnd.pgrst.object+json; charset=utf-8';

function parsePrefer(header: string | string[] | undefined): Preferences {
  const prefs: Preferences = { missingDefault: false, strict: false, applied: [] };
  const items = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) {
    const [name, value] = item.split('=').map((s) => s.trim());
    if (name === 'return' && ['minimal', 'representation', 'headers-only'].includes(value)) prefs.return = value as Preferences['return'];
    else if (name === 'count' && ['exact', 'planned', 'estimated'].includes(value)) prefs.count = value as Preferences['count'];
    else if (name === 'missing' && value === 'default') prefs.missingDefault = true;
    else if (name === 'handling' && value === 'strict') prefs.strict = true;
    else if (name === 'max-affected' && /^\d+$/.test(value)) prefs.maxAffected = Number(value);
    else continue;
    prefs.applied.push(`${name}=${value}`);
  }
  return prefs;
}

/** Negotiates the response media type from Accept: a JSON array, or one object (`vnd.pgrst.object`). */
function negotiate(accept: string | undefined): 'array' | 'object' {
  if (!accept) return 'array';
  for (const media of accept.split(',').map((m) => m.split(';')[0].trim().toLowerCase())) {
    if (media === 'application/vnd.pgrst.object+json' || media === 'application/vnd.pgrst.object') return 'object';
    if (['application/json', '*/*', 'application/*'].includes(media)) return 'array';
  }
  throw new PgrstError(406, 'PGRST107', `None of these media types are available: ${accept}`);
}

/** `Content-Range` as PostgREST writes it: `lower-upper/total`, `*` for an empty range or unknown total. */
function contentRange(lower: number, upper: number, total: number | undefined): string {
  const range = total !== 0 && lower <= upper ? `${lower}-${upper}` : '*';
  return `${range}/${total ?? '*'}`;
}

/** The requested row window: `Range` header intersected with `offset`/`limit`, then capped by db-max-rows. */
function requestedRange(query: ParsedQuery, rangeHeader: string | undefined, maxRows: number): { offset: number; limit?: number } {
  let lower = query.offset !== undefined && query.offset > 0 ? query.offset : 0;
  let upper = query.limit !== undefined ? lower + query.limit - 1 : Infinity;
  if (query.limit !== undefined && query.limit < 0) throw invalidRange('Limit should be greater than or equal to zero.');
  const header = rangeHeader?.match(/^(\d+)-(\d*)$/);
  if (header) {
    const headerUpper = header[2] === '' ? Infinity : Number(header[2]);
    if (headerUpper < Number(header[1])) throw invalidRange('The lower boundary must be lower than or equal to the upper boundary in the Range header.');
    [lower, upper] = [Math.max(lower, Number(header[1])), Math.min(upper, headerUpper)];
  }
  upper = Math.min(upper, lower + maxRows - 1);
  return { offset: lower, limit: upper === Infinity ? undefined : Math.max(upper - lower + 1, 0) };
}

function isDatabaseError(err: unknown): err is { code: string; message: string; detail?: string; hint?: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && 'severity' in err;
}

/** A JSON value as the text parameter Postgres will coerce to the column type. */
function cellValue(value: unknown, column: ColumnInfo): string | null {
  if (value === null || value === undefined) return null;
  if (column.type === 'json' || column.type === 'jsonb') return JSON.stringify(value);
  if (Array.isArray(value) && column.type.endsWith('[]')) return arrayLiteral(value.map(String));
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class DataApi {
  private schema?: SchemaCache;

  constructor(
    private readonly db: PGlite,
    private readonly tenant: TenantNames,
    private readonly keys: ProjectKeys,
    readonly version: 12 | 13,
    private readonly maxRows: number,
  ) {}

  invalidateSchema(): void {
    this.schema = undefined;
  }

  /** A table of the sandbox's schema, quoted (answers still call the schema `public`, as Supabase exposes it). */
  private relation(table: string): string {
    return `${quoteIdent(this.tenant.schema)}.${quoteIdent(table)}`;
  }

  async handle(req: http.IncomingMessage, path: string, params: URLSearchParams, body: string): Promise<Answer> {
    const apikey = (req.headers.apikey as string | undefined) ?? params.get('apikey') ?? undefined;
    const identity = identify(this.keys, apikey, req.headers.authorization, this.version);
    if ('status' in identity) return { status: identity.status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(identity.body) };

    const resource = path.slice('/rest/v1/'.length);
    this.schema ??= await loadSchemaCache(this.db, this.tenant.schema);
    if (resource === '') return this.openApi();
    if (resource.startsWith('rpc/')) {
      const fn = decodeURIComponent(resource.slice(4));
      throw new PgrstError(
        404,
        'PGRST202',
        `Could not find the function public.${fn} without parameters in the schema cache`,
        `Searched for the function public.${fn} without parameters, but no matches were found in the schema cache.`,
      );
    }
    const table = decodeURIComponent(resource);
    if (table.includes('/')) throw new PgrstError(404, 'PGRST125', 'Invalid path specified in request URL');

    const reading = req.method === 'GET' || req.method === 'HEAD';
    const profile = (reading ? req.headers['accept-profile'] : req.headers['content-profile']) as string | undefined;
    if (profile && profile !== 'public')
      throw new PgrstError(406, 'PGRST106', `Invalid schema: ${profile}`, null, 'Only the following schemas are exposed: public');

    const columns = this.schema.get(table);
    if (!columns) throw tableNotFound(table, closestName(table, this.schema.keys()), this.version);

    const request: TableRequest = {
      table,
      columns,
      query: parseQuery(params, this.version, ['apikey']),
      prefs: parsePrefer(req.headers.prefer),
      identity,
      single: negotiate(req.headers.accept) === 'object',
      body,
      rangeHeader: req.headers.range,
      headOnly: req.method === 'HEAD',
    };
    const embed = request.query.select.find((item) => item.kind === 'embed');
    if (embed) {
      throw new PgrstError(
        400,
        'PGRST200',
        `Could not find a relationship between '${table}' and '${embed.name}' in the schema cache`,
        `Searched for a foreign key relationship between '${table}' and '${embed.name}' in the schema 'public', but no matches were found.`,
      );
    }
    switch (req.method) {
      case 'GET':
      case 'HEAD':
        return this.read(request);
      case 'POST':
        return this.insert(request);
      case 'PATCH':
        return this.update(request);
      case 'DELETE':
        return this.remove(request);
      default:
        throw new PgrstError(405, 'PGRST117', `Unsupported HTTP method: ${req.method}`);
    }
  }

  /** Runs the work in one transaction as the request's role, mapping Postgres errors by SQLSTATE. */
  private async asRole<T>(identity: RequestIdentity, work: (tx: Transaction) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('search_path', $3, true)`, [
          this.tenant.role(identity.role),
          JSON.stringify(identity.claims),
          quoteIdent(this.tenant.schema),
        ]);
        return work(tx);
      });
    } catch (err) {
      if (isDatabaseError(err)) throw fromPostgres(err, identity.role !== 'anon');
      throw err;
    }
  }

  private async read(r: TableRequest): Promise<Answer> {
    const params = new SqlParams();
    const from = this.relation(r.table);
    const where = whereClause(r.table, r.query.filters, r.query.logic, params);
    const range = requestedRange(r.query, r.rangeHeader, this.maxRows);
    const page = `LIMIT ${range.limit === undefined ? 'ALL' : params.add(range.limit)} OFFSET ${params.add(range.offset)}`;
    const total = r.prefs.count ? `(SELECT count(*) FROM ${from} ${where})::int` : 'NULL::int';
    const sql = `SELECT ${total} AS total, count(*)::int AS page, ${jsonBody(r.single)} AS body
      FROM (SELECT ${selectList(r.table, r.query.select)} FROM ${from} ${where} ${orderClause(r.table, r.query.order)} ${page}) _pgrst_t`;
    const row = await this.asRole(r.identity, async (tx) => {
      const result = await tx.query<{ total: number | null; page: number; body: string }>(sql, params.values);
      if (r.single && result.rows[0].page !== 1) throw singularityError(result.rows[0].page);
      return result.rows[0];
    });
    const tableTotal = row.total ?? undefined;
    const headers: Record<string, string> = { 'content-range': contentRange(range.offset, range.offset + row.page - 1, tableTotal) };
    if (r.prefs.count) headers['preference-applied'] = `count=${r.prefs.count}`;
    if (tableTotal !== undefined && range.offset > tableTotal) {
      const error = invalidRange(`An offset of ${range.offset} was requested, but there are only ${tableTotal} rows.`);
      return { status: 416, headers: { ...headers, 'content-type': JSON_TYPE }, body: JSON.stringify(error.body()) };
    }
    const status = tableTotal !== undefined && row.page < tableTotal ? 206 : 200;
    return { status, headers: { ...headers, 'content-type': r.single ? OBJECT_TYPE : JSON_TYPE }, body: r.headOnly ? undefined : row.body };
  }

  /** Checks the written column names against the schema cache (PGRST204 for an unknown one). */
  private checkColumns(r: TableRequest, names: Iterable<string>): ColumnInfo[] {
    return [...names].map((name) => r.columns.find((c) => c.name === name) ?? throwError(columnNotFound(r.table, name)));
  }

  private async insert(r: TableRequest): Promise<Answer> {
    let rows: Record<string, unknown>[];
    let names: string[];
    if (r.query.columns) {
      // With columns= the body goes to Postgres as JSON without PostgREST's own checks.
      await this.asRole(r.identity, (tx) => tx.query('SELECT $1::json', [r.body]));
      const parsed: unknown = JSON.parse(r.body);
      rows = (Array.isArray(parsed) ? parsed : [parsed]).map((row) => (isObject(row) ? row : {}));
      names = r.query.columns;
    } else {
      let parsed: unknown;
      try {
        parsed = JSON.parse(r.body);
      } catch {
        throw invalidBody('Empty or invalid json');
      }
      rows = Array.isArray(parsed) ? (parsed as Record<string, unknown>[]) : isObject(parsed) ? [parsed] : [];
      names = rows.length > 0 && isObject(rows[0]) ? Object.keys(rows[0]) : [];
      const sameKeys = (row: unknown): boolean => isObject(row) && Object.keys(row).length === names.length && names.every((n) => n in row);
      if (!rows.every(sameKeys)) throw invalidBody('All object keys must match');
    }
    const columns = this.checkColumns(r, names);
    const params = new SqlParams();
    let sql: string;
    if (rows.length === 0) sql = '';
    else if (columns.length === 0) {
      // Every column takes its default: `(first_column) VALUES (DEFAULT), (DEFAULT)...`
      sql = `INSERT INTO ${this.relation(r.table)} (${quoteIdent(r.columns[0].name)}) VALUES ${rows.map(() => '(DEFAULT)').join(', ')}`;
    } else {
      const missing = r.prefs.missingDefault ? 'DEFAULT' : 'NULL';
      const values = rows.map((row) => `(${columns.map((c) => (c.name in row ? params.add(cellValue(row[c.name], c)) : missing)).join(', ')})`);
      sql = `INSERT INTO ${this.relation(r.table)} (${columns.map((c) => quoteIdent(c.name)).join(', ')}) VALUES ${values.join(', ')}`;
    }
    const result = await this.mutate(r, sql, params);
    const headers: Record<string, string> = { 'content-range': contentRange(1, 0, r.prefs.count ? result.count : undefined) };
    if (result.location) headers.location = result.location;
    return this.writeAnswer(r, 201, result, headers);
  }

  private filtered(r: TableRequest): boolean {
    return r.query.filters.length > 0 || r.query.logic.length > 0;
  }

  private async update(r: TableRequest): Promise<Answer> {
    let patch: unknown;
    try {
      patch = JSON.parse(r.body);
    } catch {
      throw invalidBody('Empty or invalid json');
    }
    if (!isObject(patch)) throw invalidBody('Empty or invalid json');
    const names = r.query.columns ?? Object.keys(patch);
    const columns = this.checkColumns(r, names);
    let sql = '';
    const params = new SqlParams();
    if (columns.length > 0) {
      if (!this.filtered(r)) throw safeUpdateError('UPDATE');
      const set = columns.map((c) => `${quoteIdent(c.name)} = ${c.name in patch ? params.add(cellValue(patch[c.name], c)) : 'NULL'}`);
      sql = `UPDATE ${this.relation(r.table)} SET ${set.join(', ')} ${whereClause(r.table, r.query.filters, r.query.logic, params)}`;
    }
    const result = await this.mutate(r, sql, params);
    const headers = { 'content-range': contentRange(0, result.count - 1, r.prefs.count ? result.count : undefined) };
    return this.writeAnswer(r, 204, result, headers);
  }

  private async remove(r: TableRequest): Promise<Answer> {
    if (!this.filtered(r)) throw safeUpdateError('DELETE');
    const params = new SqlParams();
    const sql = `DELETE FROM ${this.relation(r.table)} ${whereClause(r.table, r.query.filters, r.query.logic, params)}`;
    const result = await this.mutate(r, sql, params);
    const headers = { 'content-range': contentRange(1, 0, r.prefs.count ? result.count : undefined) };
    return this.writeAnswer(r, 204, result, headers);
  }

  /**
   * Runs INSERT/UPDATE/DELETE (empty sql = nothing to do) in the role's transaction. With
   * return=representation or headers-only the affected rows come back through the select list, built as
   * JSON by Postgres; the singular and max-affected checks fail inside the transaction so it rolls back.
   */
  private async mutate(r: TableRequest, sql: string, params: SqlParams): Promise<{ count: number; body: string; location?: string }> {
    const returning = r.prefs.return === 'representation' || r.prefs.return === 'headers-only';
    const primaryKey = r.columns.filter((c) => c.primaryKey);
    const items: SelectItem[] = r.prefs.return === 'headers-only' ? primaryKey.map((c) => ({ kind: 'column', column: c.name })) : r.query.select;
    return this.asRole(r.identity, async (tx) => {
      let count = 0;
      let body = r.single ? 'null' : '[]';
      if (sql && returning && items.length > 0) {
        const result = await tx.query<{ page: number; body: string }>(
          `WITH pgrst_source AS (${sql} RETURNING ${quoteIdent(r.table)}.*)
           SELECT count(*)::int AS page, ${jsonBody(r.single)} AS body FROM (SELECT ${selectList(r.table, items)} FROM pgrst_source AS ${quoteIdent(r.table)}) _pgrst_t`,
          params.values,
        );
        ({ page: count, body } = result.rows[0]);
      } else if (sql) {
        count = (await tx.query(sql, params.values)).affectedRows ?? 0;
      }
      if (r.single && count !== 1) throw singularityError(count);
      if (r.prefs.strict && r.prefs.maxAffected !== undefined && count > r.prefs.maxAffected) {
        throw new PgrstError(400, 'PGRST124', 'Query result exceeds max-affected preference constraint', `The query affects ${count} rows`);
      }
      const location = r.prefs.return === 'headers-only' && count > 0 && primaryKey.length > 0 ? locationOf(r.table, body, primaryKey) : undefined;
      return { count, body, location };
    });
  }

  private writeAnswer(r: TableRequest, minimalStatus: number, result: { body: string }, headers: Record<string, string>): Answer {
    if (r.prefs.applied.length > 0) headers['preference-applied'] = r.prefs.applied.join(', ');
    if (r.prefs.return !== 'representation') return { status: minimalStatus, headers };
    const status = minimalStatus === 201 ? 201 : 200;
    return { status, headers: { ...headers, 'content-type': r.single ? OBJECT_TYPE : JSON_TYPE }, body: result.body };
  }

  private openApi(): Answer {
    const definitions = Object.fromEntries(
      [...(this.schema ?? new Map<string, ColumnInfo[]>())].map(([table, columns]) => [
        table,
        { type: 'object', properties: Object.fromEntries(columns.map((c) => [c.name, { format: c.type }])) },
      ]),
    );
    const paths = Object.fromEntries(Object.keys(definitions).map((t) => [`/${t}`, {}]));
    const body = JSON.stringify({ swagger: '2.0', info: { title: 'PostgREST sandbox', version: String(this.version) }, paths, definitions });
    return { status: 200, headers: { 'content-type': 'application/openapi+json; charset=utf-8' }, body };
  }
}

function throwError(error: Error): never {
  throw error;
}

function singularityError(rows: number): PgrstError {
  return new PgrstError(406, 'PGRST116', 'Cannot coerce the result to a single JSON object', `The result contains ${rows} rows`);
}

/** `Location: /todos?id=eq.5` for the first written row (return=headers-only). */
function locationOf(table: string, body: string, primaryKey: ColumnInfo[]): string {
  const parsed: unknown = JSON.parse(body);
  const first = (Array.isArray(parsed) ? parsed[0] : parsed) as Record<string, unknown>;
  const query = new URLSearchParams(primaryKey.map((c) => [c.name, `eq.${String(first[c.name])}`]));
  return `/${table}?${query}`;
}

/**
 * One Postgres (PGlite) shared by several sandboxes, each in a schema with roles of its own: a PGlite costs
 * about 200 MB and seconds to start, a tenant under 1 MB and about 150 ms (figures in the README, "Sandbox
 * accounts"), so the service keeps one for all of its owners' sandboxes. Tenant roles can use their own schema only.
 */
export class SharedDatabase {
  private tenants = 0;

  private constructor(readonly db: PGlite) {}

  static async start(): Promise<SharedDatabase> {
    const db = await PGlite.create();
    await db.exec(AUTH_SQL);
    return new SharedDatabase(db);
  }

  /** How many sandboxes keep their tables here. */
  get size(): number {
    return this.tenants;
  }

  /** A new schema and its roles (`sbx_<random>` and `sbx_<random>_anon`...: no name can reach another tenant's). */
  async addTenant(): Promise<TenantNames> {
    const schema = `sbx_${randomBytes(8).toString('hex')}`;
    const tenant: TenantNames = { schema, role: (requestRole) => `${schema}_${requestRole}` };
    await this.db.exec(rolesSql(tenant) + seedSql(tenant));
    this.tenants++;
    return tenant;
  }

  async dropTenant(tenant: TenantNames): Promise<void> {
    this.tenants--;
    await this.db.exec(dropSql(tenant));
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

export async function createPostgrestProject(options: PostgrestProjectOptions = {}): Promise<PostgrestProject> {
  const version = options.version ?? 13;
  const shared = options.database;
  let db: PGlite;
  let tenant: TenantNames;
  if (shared) {
    db = shared.db;
    tenant = await shared.addTenant();
  } else {
    db = await PGlite.create();
    tenant = OWN_DATABASE;
    await db.exec(AUTH_SQL + rolesSql(tenant) + seedSql(tenant));
  }
  const keys = makeProjectKeys(options.keySeed, options.ref);
  const api = new DataApi(db, tenant, keys, version, options.maxRows ?? 1000);
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);

  const sendAnswer = (res: http.ServerResponse, answer: Answer): void => {
    const headers: Record<string, string | number> = { ...answer.headers };
    if (answer.body !== undefined) headers['content-length'] = Buffer.byteLength(answer.body);
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  };
  const sendError = (res: http.ServerResponse, error: PgrstError): void => {
    const proxyStatus: Record<string, string> = version >= 13 ? { 'proxy-status': `PostgREST; error=${error.code}` } : {};
    sendJson(res, error.status, error.body(), { ...error.headers, ...proxyStatus });
  };

  const handler: http.RequestListener = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const body = await readBody(req);
    record({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body });
    const fault = takeFault(faults, req.method ?? 'GET', url.pathname);
    if (fault) return sendFault(res, fault);
    if (!url.pathname.startsWith('/rest/v1/')) return sendJson(res, 404, { message: 'no Route matched with those values' });
    try {
      sendAnswer(res, await api.handle(req, url.pathname, url.searchParams, body));
    } catch (err) {
      if (err instanceof PgrstError) return sendError(res, err);
      sendJson(res, 500, { code: 'XX000', details: null, hint: null, message: err instanceof Error ? err.message : String(err) });
    }
  };
  return {
    ...keys,
    handler,
    version,
    requests,
    faults,
    async sql<T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> {
      try {
        if (params.length > 0) return (await db.query<T>(query, params)).rows;
        // Without parameters several statements may be given; the rows of the last one come back.
        return ((await db.exec(query)).at(-1)?.rows ?? []) as T[];
      } finally {
        api.invalidateSchema();
      }
    },
    signJwt: (claims) => signJwt(claims, keys.jwtSecret),
    async reset() {
      await db.exec(seedSql(tenant));
      api.invalidateSchema();
    },
    async close() {
      if (shared) await shared.dropTenant(tenant);
      else await db.close();
    },
  };
}

export async function startPostgrestSandbox(options: PostgrestSandboxOptions = {}): Promise<PostgrestSandbox> {
  const { handler, close, ...project } = await createPostgrestProject(options);
  let server: RunningSandbox;
  try {
    server = await listen(handler, options);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    ...project,
    url: server.url,
    restUrl: `${server.url}/rest/v1`,
    async close() {
      await server.close();
      await close();
    },
  };
}
