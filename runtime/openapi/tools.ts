// One operation -> one tool spec, or the reason it cannot be one. The spec is what a person would write:
// arguments by location (path, query, header) and the JSON body's properties as top-level arguments, one
// plain object as input (no top-level union, which Claude Code refuses), the result's shape as output.
import type { HttpMethod, JsonSchema, RequestSpec, ToolAnnotations, ToolSpec } from '../toolspec/types.ts';
import { type ApiMedia, type ApiOperation, type ApiParameter, RESERVED_HEADERS, type Schema, fixedValue, isJsonMediaType } from './document.ts';
import { argumentName } from './names.ts';
import { flattenAllOf, portableSchema, typesOf } from './schema.ts';
import { shorten, titled } from './text.ts';

export interface ToolOptions {
  provider: string;
  name: string;
  credits: number;
  /** The longest tool description the linter accepts. */
  descriptionLimit: number;
  /** Header parameters the provider sends on every request (lower-case name -> value): not arguments. */
  providerHeaders: ReadonlyMap<string, string>;
}

export type ToolResult = { spec: ToolSpec; notes: string[] } | { skip: string };

const METHODS: Record<string, HttpMethod> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE' };

/** MCP annotations from the method alone: GET reads, DELETE destroys, PUT and DELETE may be repeated. */
const ANNOTATIONS: Record<HttpMethod, ToolAnnotations> = {
  GET: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  POST: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  PUT: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  PATCH: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  DELETE: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
};

/** Input schemas keep this many levels of nested objects; results two (an issue and its user, not the user's plan). */
const INPUT_DEPTH = 6;
const OUTPUT_DEPTH = 2;
const ARGUMENT_DESCRIPTION = 300;
const RESULT_DESCRIPTION = 160;

const STREAMING = /^(text\/event-stream|application\/(x-)?ndjson|application\/jsonl|application\/json-seq|application\/stream\+json)/i;

export function toolSpec(op: ApiOperation, options: ToolOptions): ToolResult {
  const method = METHODS[op.method];
  if (!method) return { skip: `${op.method.toUpperCase()} is not a method a tool sends (GET, POST, PUT, PATCH, DELETE)` };
  const notes: string[] = [];
  const result = resultOf(op);
  if ('skip' in result) return result;

  const args = new Arguments();
  const request: RequestSpec = { method };
  // Path parameters first, in the path's order, as a person lists them.
  const byLocation = (where: ApiParameter['in']) => op.parameters.filter((p) => p.in === where);
  const pathParams = byLocation('path').sort((a, b) => op.path.indexOf(`{${a.name}}`) - op.path.indexOf(`{${b.name}}`));
  const pathArgs = new Map<string, string>();
  for (const p of pathParams) pathArgs.set(p.name, args.add(p.name, parameterSchema(p, true), true));
  const unknown = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).filter((n) => !pathArgs.has(n));
  if (unknown.length) return { skip: `the path names {${unknown.join('}, {')}}, which no parameter declares` };
  request.path = op.path.replace(/\{([^}]+)\}/g, (_m, n: string) => `{{args.${pathArgs.get(n)}}}`);

  const queryArgs = new Map<string, { name: string; schema: JsonSchema }>();
  for (const p of byLocation('query')) {
    if (p.style === 'deepObject') {
      if (p.required) return { skip: `the query parameter ${p.name} is a deepObject (name[key]=value), which templates cannot write` };
      notes.push(`left out the optional query parameter ${p.name} (deepObject style)`);
      continue;
    }
    const schema = parameterSchema(p, false);
    const name = args.add(p.name, schema, p.required);
    queryArgs.set(p.name, { name, schema });
    (request.query ??= {})[p.name] = queryTemplate(p, name);
  }
  for (const p of byLocation('header')) {
    const lower = p.name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) continue;
    // A fixed value (an API version) is sent as it is: by the provider, or here when this operation's differs.
    const fixed = fixedValue(p.schema);
    if (fixed !== undefined) {
      if (options.providerHeaders.get(lower) !== fixed) (request.headers ??= {})[p.name] = fixed;
      continue;
    }
    const name = args.add(p.name, parameterSchema(p, false), p.required);
    (request.headers ??= {})[p.name] = `{{args.${name}}}`;
  }
  for (const p of byLocation('cookie')) {
    if (p.required) return { skip: `it needs the cookie ${p.name}` };
    notes.push(`left out the optional cookie ${p.name}`);
  }

  if (op.body) {
    const body = bodyOf(op, method, args);
    if ('skip' in body) return body;
    request.body = body.template;
    if (body.contentType) (request.headers ??= {})['Content-Type'] = body.contentType;
    notes.push(...body.notes);
  }

  let { output, map } = result;
  let howToPage = '';
  const pageParam = result.list && result.linkPaged ? PAGE_PARAMS.find((n) => queryArgs.has(n)) : undefined;
  if (pageParam) {
    // GitHub's way (RFC 8288): the next page's URL in the Link header; its page value goes back in the page argument.
    const page = queryArgs.get(pageParam)!;
    const pages = args.add('pages', { type: 'integer', minimum: 1, maximum: 10, default: 1, description: 'Pages to read in this call (1-10)' }, false);
    request.paginate = { style: 'link', param: { query: pageParam }, max_pages: `{{args.${pages}}}` };
    const next = `next_${page.name}`;
    output = {
      type: 'object',
      required: ['items', 'has_more'],
      properties: {
        items: { type: 'array', items: result.list },
        has_more: { type: 'boolean' },
        [next]: { type: page.schema.type === 'integer' ? 'integer' : 'string' },
      },
    };
    map = { items: '{{response.items}}', has_more: '{{response.has_more}}', [next]: '{{response.next_cursor}}' };
    howToPage = ` When has_more is true, pass ${next} as ${page.name} to read on, or ask for several pages at once.`;
  }
  const spec: ToolSpec = {
    id: options.name,
    provider: options.provider,
    title: titleOf(op),
    description: descriptionOf(op, options.descriptionLimit - howToPage.length) + howToPage,
    credits: options.credits,
    annotations: ANNOTATIONS[method],
    input: args.schema(),
    output,
    request,
  };
  if (map !== undefined) spec.response = { map };
  return { spec, notes };
}

/** Query parameters that select a page of a list paged by Link headers, most usual first. */
const PAGE_PARAMS = ['page', 'after', 'cursor', 'page_token', 'starting_after'];

/** The arguments of a tool as they are added: unique names, properties in order, the required ones. */
class Arguments {
  private readonly properties: Record<string, JsonSchema> = {};
  private readonly required: string[] = [];

  /** Adds an argument for `original` (a parameter or body property) and returns the name templates read. */
  add(original: string, schema: JsonSchema, required: boolean, prefix = ''): string {
    const base = argumentName(original);
    let name = base in this.properties && prefix ? `${prefix}${base}` : base;
    for (let n = 2; name in this.properties; n++) name = `${base}_${n}`;
    this.properties[name] = schema;
    if (required) this.required.push(name);
    return name;
  }

  schema(): JsonSchema {
    return {
      type: 'object',
      additionalProperties: false,
      ...(this.required.length ? { required: this.required } : {}),
      properties: this.properties,
    };
  }
}

function parameterSchema(p: ApiParameter, inPath: boolean): JsonSchema {
  const schema = portableSchema(p.schema, { mode: 'input', depth: INPUT_DEPTH, describe: ARGUMENT_DESCRIPTION, describeNested: ARGUMENT_DESCRIPTION });
  // An empty path segment can never be right: say so in the schema, where the model sees it.
  if (inPath && schema.type === 'string' && schema.minLength === undefined) schema.minLength = 1;
  const description = p.description ? shorten(p.description, ARGUMENT_DESCRIPTION) : undefined;
  const { description: _own, ...rest } = schema;
  return description ? { ...rest, description } : schema;
}

/** form+explode (the default) repeats the parameter; the other styles join the items. */
function queryTemplate(p: ApiParameter, name: string): string {
  if (p.schema.type !== 'array' || p.explode !== false) return `{{args.${name}}}`;
  const separator = { spaceDelimited: ' ', pipeDelimited: '|', tabDelimited: '\t' }[p.style ?? ''] ?? ',';
  return `{{join args.${name} ${JSON.stringify(separator).replace(/^"|"$/g, "'")}}}`;
}

interface Body {
  template: unknown;
  contentType?: string;
  notes: string[];
}

function bodyOf(op: ApiOperation, method: HttpMethod, args: Arguments): Body | { skip: string } {
  const body = op.body!;
  const types = Object.keys(body.content);
  const json = types.find(isJsonMediaType);
  if (!json) {
    if (!types.length) return { template: undefined, notes: [] };
    const type = types[0];
    if (/multipart\//i.test(type)) return { skip: `its body is ${type} (file uploads), which a tool does not send` };
    if (/x-www-form-urlencoded/i.test(type)) return { skip: `its body is form-encoded (${type}), not JSON` };
    return { skip: `its body is ${type}, not JSON` };
  }
  const contentType = /^application\/json$/i.test(json) ? undefined : json;
  const notes: string[] = [];
  const raw = body.content[json].schema ?? {};
  const shape = objectShape(raw);
  if (!shape) {
    const name = args.add('body', portableSchema(raw, inputOptions()), body.required);
    return { template: `{{args.${name}}}`, contentType, notes };
  }
  if (shape.picked) notes.push(`the body is one of several shapes; the tool takes ${shape.picked}`);
  const template: Record<string, string> = {};
  for (const [prop, schema] of Object.entries(shape.properties)) {
    if ((schema as Schema).readOnly === true) continue;
    const converted = portableSchema(schema, inputOptions());
    // PATCH changes what it is sent: a default would overwrite what the caller meant to leave alone.
    if (method === 'PATCH' && converted.default !== undefined) delete converted.default;
    const name = args.add(prop, converted, shape.required.includes(prop), 'body_');
    template[prop] = `{{args.${name}}}`;
  }
  if (shape.open) notes.push('the body also takes properties the document does not name; the tool sends only the named ones');
  return { template, contentType, notes };
}

const inputOptions = () => ({ mode: 'input' as const, depth: INPUT_DEPTH, describe: ARGUMENT_DESCRIPTION, describeNested: ARGUMENT_DESCRIPTION });

interface ObjectShape {
  properties: Record<string, unknown>;
  required: string[];
  /** Set when a union was merged: which branches. */
  picked?: string;
  /** The object also takes properties it does not name. */
  open: boolean;
}

/**
 * The body as one object whose properties become arguments: allOf merged; of a oneOf/anyOf, the object
 * branches merged (a property is required only if every branch requires it). Undefined when the body is
 * not an object with named properties (an array, a value, a free-form map): then it is one argument.
 */
function objectShape(raw: Schema): ObjectShape | undefined {
  const s = flattenAllOf(raw);
  const union = (Array.isArray(s.oneOf) ? s.oneOf : Array.isArray(s.anyOf) ? s.anyOf : undefined) as unknown[] | undefined;
  const objects = (union ?? [s])
    .filter((b): b is Schema => b !== null && typeof b === 'object')
    .map((b) => flattenAllOf(b))
    .filter((b) => typesOf(b).types.includes('object') && b.properties && typeof b.properties === 'object');
  if (!objects.length) return undefined;
  const properties: Record<string, unknown> = {};
  for (const b of objects) Object.assign(properties, b.properties);
  const requiredBy = (b: Schema) => (Array.isArray(b.required) ? b.required.map(String) : []);
  const required = requiredBy(objects[0]).filter((r) => objects.every((b) => requiredBy(b).includes(r)));
  const picked =
    union && union.length > 1 ? `${objects.length === 1 ? 'its object shape' : `its ${objects.length} object shapes merged`} (of ${union.length})` : undefined;
  const open = objects.some((b) => b.additionalProperties !== undefined && b.additionalProperties !== false);
  return { properties, required, picked, open };
}

interface Result {
  output: JsonSchema;
  map?: unknown;
  /** The schema of each item, when the answer is a list. */
  list?: JsonSchema;
  /** The answer says where the next page is in a Link header. */
  linkPaged?: boolean;
}

/** The first 2xx answer (else `default`), what the tool returns of it and how. */
function resultOf(op: ApiOperation): Result | { skip: string } {
  const success =
    op.responses.filter((r) => /^2(\d\d|XX)$/i.test(r.status)).sort((a, b) => a.status.localeCompare(b.status))[0] ??
    op.responses.find((r) => r.status === 'default');
  const types = Object.keys(success?.content ?? {});
  if (!types.length) return { output: { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } }, map: { success: true } };
  const json = types.find(isJsonMediaType);
  if (!json) {
    const streaming = types.find((t) => STREAMING.test(t));
    return { skip: streaming ? `it streams its answer (${streaming})` : `it answers with ${types.join(', ')}, not JSON` };
  }
  return { ...outputOf(success!.content[json]), linkPaged: success!.headers.includes('link') };
}

function outputOf(media: ApiMedia): Result {
  if (!media.schema) return { output: { type: 'object', required: ['result'], properties: { result: {} } }, map: { result: '{{response.body}}' } };
  const schema = portableSchema(media.schema, { mode: 'output', depth: OUTPUT_DEPTH, describe: RESULT_DESCRIPTION, describeNested: 0 });
  const { types } = typesOf(flattenAllOf(media.schema));
  if (types.length === 1 && types[0] === 'object') {
    // A nullable object result is an object when the call succeeds.
    const object = Array.isArray(schema.anyOf) ? ((schema.anyOf as JsonSchema[]).find((b) => b.type === 'object') ?? { type: 'object' }) : schema;
    return { output: { ...object, type: 'object' } };
  }
  const key = types.length === 1 && types[0] === 'array' ? 'items' : 'value';
  const { description: _d, ...inner } = schema;
  const list = key === 'items' ? ((inner.items as JsonSchema | undefined) ?? {}) : undefined;
  return { output: { type: 'object', required: [key], properties: { [key]: inner } }, map: { [key]: '{{response.body}}' }, list };
}

function titleOf(op: ApiOperation): string {
  if (op.summary) return op.summary.replace(/\s+/g, ' ').replace(/\.$/, '').trim();
  return titled(op.operationId ?? `${op.method} ${op.path}`);
}

function descriptionOf(op: ApiOperation, limit: number): string {
  const deprecated = op.deprecated ? 'Deprecated by the API. ' : '';
  const text = op.description ?? op.summary ?? titleOf(op);
  return deprecated + (shorten(text, limit - deprecated.length) || titleOf(op));
}
