// Reads an OpenAPI 3.0 / 3.1 or Swagger 2.0 document (a file, gzipped or not, or a URL) with every $ref
// resolved, and normalizes it into one model (`ApiDocument`) that the rest of the importer reads, whatever
// the document's version. $refs are resolved by @apidevtools/json-schema-ref-parser; a circular $ref stays
// a circular object (the schema conversion cuts it), and every file or URL it reads comes from `readSource`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { $RefParser, type FileInfo } from '@apidevtools/json-schema-ref-parser';

export type OpenApiVersion = '2.0' | '3.0' | '3.1';
export type Schema = Record<string, unknown>;

export interface ApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  description?: string;
  schema: Schema;
  /** OpenAPI 3 serialization (Swagger 2.0's collectionFormat is translated). */
  style?: string;
  explode?: boolean;
  deprecated: boolean;
  /** The document's example value, if it gives one. */
  example?: unknown;
}

export interface ApiMedia {
  schema?: Schema;
  /** Examples by name (an `example` alone is named "example"). */
  examples: Record<string, unknown>;
}

export interface ApiBody {
  required: boolean;
  description?: string;
  /** By media type, in the document's order. */
  content: Record<string, ApiMedia>;
}

export interface ApiResponse {
  /** "200", "2XX", "default"... */
  status: string;
  description?: string;
  content: Record<string, ApiMedia>;
  /** Response header names, lower-case. */
  headers: string[];
}

export interface SecurityScheme {
  type: 'http' | 'apiKey' | 'oauth2' | 'openIdConnect' | 'mutualTLS';
  scheme?: string;
  bearerFormat?: string;
  name?: string;
  in?: 'header' | 'query' | 'cookie';
  description?: string;
  /** OAuth 2 flows as the document gives them (authorizationUrl, tokenUrl, scopes). */
  flows?: Record<string, { authorizationUrl?: string; tokenUrl?: string; refreshUrl?: string; scopes?: Record<string, string> }>;
  openIdConnectUrl?: string;
}

/** Alternatives (any one will do), each a set of schemes used together with their scopes. */
export type SecurityRequirement = Record<string, string[]>;

export interface ApiOperation {
  method: string;
  path: string;
  operationId?: string;
  summary?: string;
  description?: string;
  tags: string[];
  deprecated: boolean;
  parameters: ApiParameter[];
  body?: ApiBody;
  responses: ApiResponse[];
  /** The operation's own security, when it declares one (else the document's applies). */
  security?: SecurityRequirement[];
}

export interface ApiDocument {
  version: OpenApiVersion;
  title: string;
  apiVersion: string;
  description?: string;
  /** Server URLs, variables filled with their defaults; relative ones resolved against a document URL. */
  servers: string[];
  securitySchemes: Record<string, SecurityScheme>;
  security: SecurityRequirement[];
  /** In the document's order: paths as written, methods in the order of HTTP_METHODS. */
  operations: ApiOperation[];
}

/** The methods an OpenAPI path item may hold, in the order operations are listed. */
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export class DocumentError extends Error {}

/** Reads a file or URL into bytes; the command line hands in one that fetches through the outbound guard. */
export type FetchBytes = (url: URL) => Promise<Buffer>;

const isUrl = (s: string) => /^https?:\/\//i.test(s);

/**
 * Reads, resolves and normalizes a document. A URL (and every URL it refers to) is read with `fetch`; a
 * file may refer to other files and to URLs, a URL only to URLs (a document from the network never reads
 * this machine's files).
 */
export async function readApiDocument(source: string, fetch: FetchBytes): Promise<ApiDocument> {
  const fromNetwork = isUrl(source);
  const root = fromNetwork ? source : path.resolve(source);
  // The parser wraps what a resolver throws into "Error reading file": the first failure is kept to be told as it is.
  let failure: Error | undefined;
  const read = async (file: FileInfo): Promise<Buffer> => {
    try {
      return gunzipped(await readOne(file.url));
    } catch (err) {
      failure ??= err as Error;
      throw err;
    }
  };
  const readOne = async (url: string): Promise<Buffer> => {
    if (isUrl(url)) return fetch(new URL(url));
    if (fromNetwork) throw new DocumentError(`${url}: a document read from a URL may refer to other URLs only, not to files`);
    const local = url.startsWith('file:') ? fileURLToPath(url) : url;
    try {
      return await readFile(local);
    } catch (err) {
      throw new DocumentError(`${local}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
  };
  let raw: unknown;
  try {
    const parser = new $RefParser();
    raw = await parser.dereference(fromNetwork ? root : pathToFileURL(root).href, {
      resolve: { file: false, http: false, source: { order: 1, canRead: true, read } },
      // A schema that refers to itself stays one object referring to itself; the conversion cuts the loop.
      dereference: { circular: true, preservedProperties: ['summary', 'description'] },
    });
  } catch (err) {
    if (failure instanceof DocumentError) throw failure;
    throw new DocumentError(`${source}: ${(failure ?? (err as Error)).message}`);
  }
  return normalize(raw, source);
}

function gunzipped(bytes: Buffer): Buffer {
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : undefined);
const objectOf = (v: unknown): Record<string, unknown> => (isObject(v) ? v : {});

/** The one model of every version. Exported for documents already in memory (tests). */
export function normalize(raw: unknown, source: string): ApiDocument {
  if (!isObject(raw)) throw new DocumentError(`${source}: not a JSON or YAML object`);
  const version = versionOf(raw, source);
  if (!isObject(raw.paths)) throw new DocumentError(`${source}: the document has no "paths" object, so no operations`);
  const info = objectOf(raw.info);
  const swagger = version === '2.0';
  const operations: ApiOperation[] = [];
  for (const [p, item] of Object.entries(raw.paths)) {
    if (!isObject(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      operations.push(swagger ? swaggerOperation(raw, p, method, op, shared) : openApiOperation(p, method, op, shared));
    }
  }
  const schemes = swagger ? objectOf(raw.securityDefinitions) : objectOf(objectOf(raw.components).securitySchemes);
  return {
    version,
    title: text(info.title) ?? 'API',
    apiVersion: text(info.version) ?? '',
    description: text(info.description),
    servers: swagger ? swaggerServers(raw, source) : openApiServers(raw, source),
    securitySchemes: Object.fromEntries(
      Object.entries(schemes)
        .filter(([, s]) => isObject(s))
        .map(([name, s]) => [name, swagger ? swaggerScheme(s as Record<string, unknown>) : (s as unknown as SecurityScheme)]),
    ),
    security: securityOf(raw.security) ?? [],
    operations,
  };
}

function versionOf(raw: Record<string, unknown>, source: string): OpenApiVersion {
  if (raw.swagger !== undefined) {
    if (String(raw.swagger) === '2.0') return '2.0';
    throw new DocumentError(`${source}: Swagger ${String(raw.swagger)} is not supported (only Swagger 2.0, OpenAPI 3.0 and 3.1)`);
  }
  const v = typeof raw.openapi === 'string' ? raw.openapi : '';
  if (/^3\.0(\.|$)/.test(v)) return '3.0';
  // 3.2 only adds to 3.1 what the importer does not read (a QUERY method, streaming item schemas).
  if (/^3\.[1-9](\.|$)/.test(v)) return '3.1';
  throw new DocumentError(
    `${source}: not an OpenAPI document: it needs "openapi": "3.0.x" or "3.1.x", or "swagger": "2.0"${v ? ` (it says openapi: ${v})` : ''}`,
  );
}

function securityOf(v: unknown): SecurityRequirement[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v.filter(isObject).map((r) => Object.fromEntries(Object.entries(r).map(([k, scopes]) => [k, Array.isArray(scopes) ? scopes.map(String) : []])));
}

/** `example`, or the first of `examples` (3.x: named objects with a value; JSON Schema: a list). */
function exampleOf(o: Record<string, unknown>): unknown {
  if (o.example !== undefined) return o.example;
  if (Array.isArray(o.examples)) return o.examples[0];
  return Object.values(objectOf(o.examples)).map((e) => objectOf(e).value)[0];
}

function examplesOf(media: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (media.example !== undefined) out.example = media.example;
  for (const [name, ex] of Object.entries(objectOf(media.examples))) if (isObject(ex) && ex.value !== undefined) out[name] = unwrapped(ex.value);
  return out;
}

/** A value that is itself an Example object (GitHub's `value: {$ref: '#/components/examples/issue'}`): its value. */
function unwrapped(value: unknown): unknown {
  const EXAMPLE_KEYS = ['value', 'summary', 'description'];
  return isObject(value) && 'value' in value && Object.keys(value).every((k) => EXAMPLE_KEYS.includes(k) || k.startsWith('x-')) ? value.value : value;
}

function contentOf(v: unknown): Record<string, ApiMedia> {
  const out: Record<string, ApiMedia> = {};
  for (const [type, media] of Object.entries(objectOf(v))) {
    if (!isObject(media)) continue;
    out[type] = { schema: isObject(media.schema) ? media.schema : undefined, examples: examplesOf(media) };
  }
  return out;
}

/** Operation parameters override the path item's of the same name and location. */
function mergeParameters(shared: unknown[], own: unknown): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  for (const p of [...shared, ...(Array.isArray(own) ? own : [])]) if (isObject(p)) byKey.set(`${String(p.in)}:${String(p.name)}`, p);
  return [...byKey.values()];
}

function openApiOperation(p: string, method: string, op: Record<string, unknown>, shared: unknown[]): ApiOperation {
  const parameters: ApiParameter[] = [];
  for (const param of mergeParameters(shared, op.parameters)) {
    const where = param.in;
    if (where !== 'path' && where !== 'query' && where !== 'header' && where !== 'cookie') continue;
    // A parameter described by `content` (one media type) instead of `schema`.
    const content = Object.values(contentOf(param.content))[0];
    parameters.push({
      name: String(param.name),
      in: where,
      required: where === 'path' || param.required === true,
      description: text(param.description),
      schema: (isObject(param.schema) ? param.schema : content?.schema) ?? {},
      style: typeof param.style === 'string' ? param.style : undefined,
      explode: typeof param.explode === 'boolean' ? param.explode : undefined,
      deprecated: param.deprecated === true,
      example: exampleOf(param) ?? (isObject(param.schema) ? exampleOf(param.schema) : undefined),
    });
  }
  const body = isObject(op.requestBody)
    ? { required: op.requestBody.required === true, description: text(op.requestBody.description), content: contentOf(op.requestBody.content) }
    : undefined;
  const responses = Object.entries(objectOf(op.responses))
    .filter(([, r]) => isObject(r))
    .map(([status, r]) => {
      const res = r as Record<string, unknown>;
      return {
        status,
        description: text(res.description),
        content: contentOf(res.content),
        headers: Object.keys(objectOf(res.headers)).map((h) => h.toLowerCase()),
      };
    });
  return { ...common(p, method, op), parameters, body, responses };
}

function common(p: string, method: string, op: Record<string, unknown>) {
  return {
    method,
    path: p,
    operationId: text(op.operationId),
    summary: text(op.summary),
    description: text(op.description),
    tags: Array.isArray(op.tags) ? op.tags.map(String) : [],
    deprecated: op.deprecated === true,
    security: securityOf(op.security),
  };
}

function openApiServers(raw: Record<string, unknown>, source: string): string[] {
  const servers = Array.isArray(raw.servers) ? raw.servers.filter(isObject) : [];
  return servers
    .filter((s) => typeof s.url === 'string')
    .map((s) => {
      const vars = objectOf(s.variables);
      const url = (s.url as string).replace(/\{([^}]+)\}/g, (m, name: string) => {
        const v = objectOf(vars[name]).default;
        return v === undefined ? m : String(v);
      });
      return absoluteServer(url, source);
    });
}

/** A relative server URL means "relative to where the document was served"; from a file it stays relative. */
function absoluteServer(url: string, source: string): string {
  if (!isUrl(url) && isUrl(source)) return new URL(url, source).href.replace(/\/$/, '');
  return url.replace(/\/$/, '');
}

// ---- Swagger 2.0, read into the same model ----

/** A Swagger 2.0 parameter's type keywords (on the parameter itself) as a schema. */
const SWAGGER_SCHEMA_KEYS = [
  'type',
  'format',
  'items',
  'enum',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'multipleOf',
];

function swaggerSchema(param: Record<string, unknown>): Schema {
  const schema: Schema = {};
  for (const k of SWAGGER_SCHEMA_KEYS) if (param[k] !== undefined) schema[k] = param[k];
  if (param.type === 'file') return { type: 'string', format: 'binary' };
  return schema;
}

/** collectionFormat -> OpenAPI 3 style and explode (csv is Swagger's default). */
function collectionStyle(format: unknown): { style?: string; explode?: boolean } {
  switch (format) {
    case 'multi':
      return { style: 'form', explode: true };
    case 'ssv':
      return { style: 'spaceDelimited', explode: false };
    case 'pipes':
      return { style: 'pipeDelimited', explode: false };
    case 'tsv':
      return { style: 'tabDelimited', explode: false };
    default:
      return { style: 'form', explode: false };
  }
}

function swaggerOperation(doc: Record<string, unknown>, p: string, method: string, op: Record<string, unknown>, shared: unknown[]): ApiOperation {
  const consumes = (Array.isArray(op.consumes) ? op.consumes : Array.isArray(doc.consumes) ? doc.consumes : ['application/json']).map(String);
  const produces = (Array.isArray(op.produces) ? op.produces : Array.isArray(doc.produces) ? doc.produces : ['application/json']).map(String);
  const parameters: ApiParameter[] = [];
  let body: ApiBody | undefined;
  const form: Schema = { type: 'object', properties: {}, required: [] as string[] };
  for (const param of mergeParameters(shared, op.parameters)) {
    const name = String(param.name);
    if (param.in === 'body') {
      const schema = isObject(param.schema) ? param.schema : {};
      const jsonTypes = consumes.filter(isJsonMediaType);
      body = {
        required: param.required === true,
        description: text(param.description),
        content: Object.fromEntries((jsonTypes.length ? jsonTypes : consumes).map((t) => [t, { schema, examples: {} }])),
      };
    } else if (param.in === 'formData') {
      (form.properties as Record<string, unknown>)[name] = { ...swaggerSchema(param), ...(text(param.description) ? { description: param.description } : {}) };
      if (param.required === true) (form.required as string[]).push(name);
    } else if (param.in === 'path' || param.in === 'query' || param.in === 'header') {
      const schema = swaggerSchema(param);
      parameters.push({
        name,
        in: param.in,
        required: param.in === 'path' || param.required === true,
        description: text(param.description),
        schema,
        ...(schema.type === 'array' ? collectionStyle(param.collectionFormat) : {}),
        deprecated: false,
        example: param['x-example'],
      });
    }
  }
  if (Object.keys(form.properties as object).length) {
    const type = consumes.find((t) => /multipart\/form-data|application\/x-www-form-urlencoded/i.test(t)) ?? 'application/x-www-form-urlencoded';
    body = { required: (form.required as string[]).length > 0, content: { [type]: { schema: form, examples: {} } } };
  }
  const responses = Object.entries(objectOf(op.responses))
    .filter(([, r]) => isObject(r))
    .map(([status, r]) => {
      const res = r as Record<string, unknown>;
      const examples = objectOf(res.examples);
      const content: Record<string, ApiMedia> = {};
      // Without a schema the answer has no JSON to describe; other types it produces (a stream, text) still say what it is.
      const types = isObject(res.schema) ? produces : produces.filter((t) => !isJsonMediaType(t));
      for (const t of types)
        content[t] = { schema: isObject(res.schema) ? res.schema : undefined, examples: examples[t] === undefined ? {} : { example: examples[t] } };
      return { status, description: text(res.description), content, headers: Object.keys(objectOf(res.headers)).map((h) => h.toLowerCase()) };
    });
  return { ...common(p, method, op), parameters, body, responses };
}

function swaggerServers(raw: Record<string, unknown>, source: string): string[] {
  const basePath = typeof raw.basePath === 'string' ? raw.basePath : '';
  if (typeof raw.host !== 'string') return basePath ? [absoluteServer(basePath, source)] : [];
  const schemes = Array.isArray(raw.schemes) && raw.schemes.length ? raw.schemes.map(String) : ['https'];
  const scheme = schemes.includes('https') ? 'https' : schemes[0];
  return [`${scheme}://${raw.host}${basePath}`.replace(/\/$/, '')];
}

function swaggerScheme(s: Record<string, unknown>): SecurityScheme {
  const description = text(s.description);
  switch (s.type) {
    case 'basic':
      return { type: 'http', scheme: 'basic', description };
    case 'apiKey':
      return { type: 'apiKey', name: String(s.name), in: s.in === 'query' ? 'query' : 'header', description };
    default: {
      const flow = { application: 'clientCredentials', accessCode: 'authorizationCode' }[String(s.flow)] ?? String(s.flow);
      const urls = { authorizationUrl: text(s.authorizationUrl), tokenUrl: text(s.tokenUrl), scopes: objectOf(s.scopes) as Record<string, string> };
      return { type: 'oauth2', description, flows: { [flow]: urls } };
    }
  }
}

/** Header parameters OpenAPI says are ignored (the request's own), and what a provider's auth sets. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set(['accept', 'content-type', 'authorization']);

/** The one value a parameter takes when it says so (a default, a const, a one-value enum): an API version, typically. */
export function fixedValue(schema: Schema): string | undefined {
  const v = schema.default ?? schema.const ?? (Array.isArray(schema.enum) && schema.enum.length === 1 ? schema.enum[0] : undefined);
  return v === undefined || v === null || typeof v === 'object' ? undefined : String(v);
}

/** application/json, and the +json types (application/vnd.github+json, application/problem+json). */
export function isJsonMediaType(type: string): boolean {
  return /^application\/(?:[\w.+-]+\+)?json(?:;|$)/i.test(type.trim()) || /^\*\/\*$/.test(type.trim());
}
