// Notion (API 2025-09-03) plugins: request bodies the templates cannot build (parents, rich text, JSON
// text arguments, page properties and markdown content), block trees both ways, result shapes.
import {
  type CallPlugin,
  type OutboundRequest,
  type Plugin,
  providerDetail,
  type ProviderHttp,
  type RequestPlugin,
  type ResponsePlugin,
  ToolError,
  UpstreamStatusError,
} from '../../runtime/plugin-api.ts';
import { POINTERS_OPTIONS, convertAt, updateAt } from '../pointer.ts';
import { BlockWriter, MAX_CHILDREN, batches, countBlocks, kidsOf, readBlockTree, request, twoLevels, type ReadBlock } from './blocks-io.ts';
import type { MarkdownInput } from '../markdown-limits.ts';
import { blocksToMarkdown, type NotionBlock, type NotionBlockWithChildren } from './markdown.ts';

const MARKDOWN_MODULE = new URL('./markdown.ts', import.meta.url);
import { pageProperties, plainRichText, type Schema } from './properties.ts';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const enc = encodeURIComponent;
/** A caller's mistake found before anything was sent: the credits are given back. */
const badArguments = (message: string) => new ToolError('invalid_arguments', message, { refund: true });

function bodyOf(req: OutboundRequest): Json {
  if (!isObject(req.body)) req.body = {};
  return req.body as Json;
}

// ------------------------------------------------------------------ request bodies

type ParentOptions = { args: Record<string, string>; required?: boolean };

/**
 * Sets body.parent from whichever parent argument was given. `args` maps a Notion parent key
 * (page_id, data_source_id, database_id, workspace) to the argument holding it; a boolean argument
 * (workspace) counts only when true.
 */
export const parentPlugin: RequestPlugin<ParentOptions> = {
  name: 'notion.parent',
  hook: 'request',
  description: 'Builds body.parent ({type, <key>: id} or {type: "workspace", workspace: true}) from exactly one of the parent arguments.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['args'],
    properties: {
      args: {
        type: 'object',
        minProperties: 1,
        propertyNames: { enum: ['page_id', 'data_source_id', 'database_id', 'workspace'] },
        additionalProperties: { type: 'string' },
      },
      required: { type: 'boolean', default: false },
    },
  },
  apply(req, { options, args }) {
    const given = Object.entries(options.args).filter(([, arg]) => args[arg] !== undefined && args[arg] !== false && args[arg] !== '');
    const names = Object.values(options.args)
      .map((a) => `"${a}"`)
      .join(', ');
    if (given.length > 1) throw badArguments(`Give only one of ${names}`);
    if (given.length === 0) {
      if (options.required) throw badArguments(`Give one of ${names} to say where it goes`);
      return req;
    }
    const [key, arg] = given[0];
    bodyOf(req).parent = key === 'workspace' ? { type: 'workspace', workspace: true } : { type: key, [key]: args[arg] };
    return req;
  },
};

/** search_pages: `object_filter` becomes Notion's {property: "object", value} filter. */
export const searchFilterPlugin: RequestPlugin = {
  name: 'notion.search_filter',
  hook: 'request',
  description: 'Adds body.filter = {property: "object", value: args.object_filter} when object_filter is given.',
  apply(req, { args }) {
    if (typeof args.object_filter === 'string') bodyOf(req).filter = { property: 'object', value: args.object_filter };
    return req;
  },
};

/** Plain strings at body pointers (title, description) become Notion rich text. */
export const richTextPlugin = convertAt(
  'notion.rich_text',
  'request',
  'Turns the plain strings at the given body pointers into rich-text arrays (split at 2,000 characters).',
  (v) => (typeof v === 'string' ? plainRichText(v) : undefined),
);

/** Arguments given as JSON text (filter, sorts) are parsed into the body, with an error naming the argument. */
export const jsonTextPlugin: RequestPlugin<{ fields: Record<string, 'object' | 'array'> }> = {
  name: 'notion.json_text',
  hook: 'request',
  description: 'Parses the JSON text of the given top-level body fields, checking that each is an object or an array.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['fields'],
    properties: { fields: { type: 'object', minProperties: 1, additionalProperties: { enum: ['object', 'array'] } } },
  },
  apply(req, { options }) {
    const body = bodyOf(req);
    for (const [field, kind] of Object.entries(options.fields)) {
      const text = body[field];
      if (typeof text !== 'string') continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw badArguments(`"${field}" is not valid JSON text (${(err as Error).message})`);
      }
      const ok = kind === 'array' ? Array.isArray(value) : isObject(value);
      if (!ok) throw badArguments(`"${field}" must be the JSON text of ${kind === 'array' ? 'an array' : 'an object'}`);
      body[field] = value;
    }
    return req;
  },
};

/** GET /v1/data_sources/{id}: the schema, keyed by property name. */
async function dataSourceSchema(http: ProviderHttp, id: string): Promise<Schema> {
  const res = await http.send(request('GET', `/v1/data_sources/${enc(id)}`));
  return ((res.body as { properties?: Schema }).properties ?? {}) as Schema;
}

/**
 * filter_properties takes property ids; callers know names. Resolves each name of the repeated
 * `filter_properties` query parameter through the schema of args.data_source_id (ids pass as they are).
 * Notion shows ids URL-encoded ("%3AUJq"): each is decoded once here, because the query string encodes it
 * again on the way out; sent as shown, Notion would read "%3AUJq" and match nothing.
 */
export const propertyIdsPlugin: RequestPlugin = {
  name: 'notion.filter_property_ids',
  hook: 'request',
  description: 'Replaces the property names of the filter_properties query parameters with the ids of args.data_source_id.',
  async apply(req, { http, args }) {
    const wanted = req.query.filter(([k]) => k === 'filter_properties').map(([, v]) => v);
    if (wanted.length === 0) return req;
    const schema = await dataSourceSchema(http, String(args.data_source_id));
    const ids = wanted.map((name) => {
      const prop = schema[name] ?? Object.values(schema).find((p) => p.id === name);
      if (!prop) {
        throw new ToolError(
          'invalid_property',
          `Invalid property: "${name}" is not a property of this data source (properties: ${Object.keys(schema).join(', ')})`,
        );
      }
      return decodeURIComponent(prop.id);
    });
    req.query = [...req.query.filter(([k]) => k !== 'filter_properties'), ...ids.map((id): [string, string] => ['filter_properties', id])];
    return req;
  },
};

// ------------------------------------------------------------------ create_page

/**
 * Creates the page: the title into the title property, properties in Notion's write shapes, markdown
 * content as blocks (the first batch in the create request, the rest and deeper levels appended).
 */
export const createPagePlugin: CallPlugin = {
  name: 'notion.create_page',
  hook: 'call',
  description: 'POSTs the page with title, properties and the first content batch, then appends the remaining content.',
  async apply(req, { http, args, progress, offLoop }) {
    const body = bodyOf(req);
    const template = isObject(body.template) ? body.template : undefined;
    const content = typeof args.content === 'string' ? args.content : '';
    if (template?.type === 'template_id' && args.template_id === undefined) throw badArguments('"template_id" is required when template_type is "template_id"');
    if (template?.type !== 'template_id' && args.template_id !== undefined) {
      throw badArguments('"template_id" is used only with template_type "template_id"');
    }
    if (template && template.type !== 'none' && content.trim()) {
      throw badArguments('Give either "content" or a template: Notion applies a template to a blank page, so content cannot be sent with it');
    }
    // "none" is Notion's default: leave it out.
    if (template?.type === 'none') delete body.template;
    // Converted first, off the event loop: content over the limits is refused before anything is sent.
    const input: MarkdownInput = { argument: 'content', text: content };
    const blocks = content.trim() ? await offLoop<NotionBlock[]>(MARKDOWN_MODULE, 'boundedMarkdownToBlocks', input) : [];
    const dataSourceId = isObject(body.parent) && typeof body.parent.data_source_id === 'string' ? body.parent.data_source_id : undefined;
    const schema = dataSourceId ? await dataSourceSchema(http, dataSourceId) : undefined;
    body.properties = pageProperties(String(args.title), isObject(args.properties) ? args.properties : undefined, schema);

    const [first = [], ...rest] = batches(blocks);
    if (first.length) body.children = first.map(twoLevels);
    const created = await http.send(Object.assign({}, req, { body }));
    const page = created.body as { id: string; url?: string };
    if (!blocks.length) return created;

    const writer = new BlockWriter(http, progress, countBlocks(blocks, kidsOf));
    writer.sent(first);
    try {
      if (first.some((b) => kidsOf(b).length > MAX_CHILDREN || kidsOf(b).some((k) => kidsOf(k).length))) {
        await writer.completeDeeper(first, await writer.childIds(page.id));
      }
      for (const batch of rest) await writer.append(page.id, batch);
    } catch (err) {
      throw partiallyWritten(err, page, writer.written, writer.total);
    }
    return created;
  },
};

/** The page exists but part of its content does not: say so (retrying would create a second page). */
function partiallyWritten(err: unknown, page: { id: string; url?: string }, written: number, total: number): unknown {
  const where = `The page was created (id ${page.id}${page.url ? `, ${page.url}` : ''}) but only ${written} of ${total} content blocks were written`;
  if (err instanceof UpstreamStatusError) {
    const detail = providerDetail(err.response.body);
    return new ToolError('partially_applied', `${where}: Notion answered ${err.response.status}${detail ? `: ${detail}` : ''}`, {
      providerStatus: err.response.status,
      refund: false,
    });
  }
  if (err instanceof ToolError) return new ToolError('partially_applied', `${where}: ${err.message}`, { providerStatus: err.providerStatus, refund: false });
  return err;
}

// ------------------------------------------------------------------ reading content

/** Reads a page's blocks with every page of children and nested levels; answers {blocks, block_count}. */
export const blockTreePlugin: CallPlugin = {
  name: 'notion.block_tree',
  hook: 'call',
  description: 'GETs the children at the request path, paginating and following has_children; the body becomes {blocks, block_count}.',
  async apply(req, { http, signal }) {
    const blocks = await readBlockTree(http, req.path, signal);
    return { status: 200, headers: {}, body: { blocks, block_count: countBlocks(blocks, (b: ReadBlock) => b.children ?? []) } };
  },
};

/** Adds `markdown` rendered from `blocks`. */
export const blocksToMarkdownPlugin: ResponsePlugin = {
  name: 'notion.blocks_to_markdown',
  hook: 'response',
  description: 'Sets result.markdown to the markdown of result.blocks (children nested under children).',
  apply(result) {
    const r = result as Json;
    r.markdown = blocksToMarkdown((r.blocks ?? []) as NotionBlockWithChildren[]);
    return r;
  },
};

// ------------------------------------------------------------------ result shapes

const plain = (items: unknown) =>
  Array.isArray(items) ? items.map((t) => (isObject(t) && typeof t.plain_text === 'string' ? t.plain_text : '')).join('') : '';

/** The title of a search hit: a page keeps it in its title-type property, a data source in `title`. */
export function titleOf(item: Json): string {
  if (item.object === 'data_source' || item.object === 'database') return plain(item.title);
  const props = isObject(item.properties) ? Object.values(item.properties) : [];
  const title = props.find((p) => isObject(p) && p.type === 'title') as Json | undefined;
  return title ? plain(title.title) : '';
}

/** Search hits (page and data_source objects) -> {id, title, url, type, created_time, last_edited_time}. */
export const searchItemsPlugin = convertAt(
  'notion.search_items',
  'response',
  'Turns the page and data source objects at the pointers (e.g. /results/*) into search items.',
  (v) =>
    isObject(v)
      ? { id: v.id, title: titleOf(v), url: v.url ?? null, type: v.object, created_time: v.created_time, last_edited_time: v.last_edited_time }
      : undefined,
);

/** Keeps the given keys of the objects at the pointers (e.g. query rows -> {id, properties}). */
export const pickPlugin: ResponsePlugin<{ pointers: string[]; keys: string[] }> = {
  name: 'notion.pick',
  hook: 'response',
  description: 'Keeps only `keys` of each object at the pointers.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['pointers', 'keys'],
    properties: Object.assign({}, POINTERS_OPTIONS.properties, { keys: { type: 'array', minItems: 1, items: { type: 'string' } } }),
  },
  apply(result, { options }) {
    for (const pointer of options.pointers) {
      updateAt(result, pointer, (v) => (isObject(v) ? Object.fromEntries(options.keys.filter((k) => k in v).map((k) => [k, v[k]])) : undefined));
    }
    return result;
  },
};

/** A page object carries at most 25 references of a relation or people property. */
const PAGE_REFERENCE_LIMIT = 25;

interface ReferenceProperty {
  id: string;
  type: string;
  relation?: unknown[];
  people?: unknown[];
  has_more?: boolean;
}

/**
 * Notion cuts relation and people properties of a page object at 25 references (a relation says so with
 * has_more; people do not, so a list of exactly 25 is read again). The full list comes from the page
 * property endpoint, 100 at a time; the property id goes into the path as Notion shows it (already
 * URL-encoded). The call's credit does not change.
 */
export const fullReferencesPlugin: ResponsePlugin = {
  name: 'notion.full_references',
  hook: 'response',
  description: 'Reads the relation and people references a page object leaves out (Notion returns at most 25) from the page property endpoint.',
  async apply(result, { http }) {
    const page = result as { id?: string; properties?: Record<string, ReferenceProperty> };
    if (!page.id || !page.properties) return result;
    for (const prop of Object.values(page.properties)) {
      const list = prop.type === 'relation' ? prop.relation : prop.type === 'people' ? prop.people : undefined;
      if (!Array.isArray(list) || !(prop.has_more === true || (prop.type === 'people' && list.length >= PAGE_REFERENCE_LIMIT))) continue;
      const all: unknown[] = [];
      let cursor: string | null = null;
      do {
        const query: Array<[string, string]> = [['page_size', '100'], ...(cursor ? [['start_cursor', cursor] as [string, string]] : [])];
        const res = await http.send(request('GET', `/v1/pages/${enc(page.id)}/properties/${prop.id}`, undefined, query));
        const body = res.body as { results?: Array<Record<string, unknown>>; has_more?: boolean; next_cursor?: string | null };
        all.push(...(body.results ?? []).map((item) => item[prop.type]));
        cursor = body.has_more && body.next_cursor ? body.next_cursor : null;
      } while (cursor);
      if (prop.type === 'relation') Object.assign(prop, { relation: all, has_more: false });
      else prop.people = all;
    }
    return result;
  },
};

export const notionPlugins: Plugin[] = [
  parentPlugin,
  searchFilterPlugin,
  richTextPlugin,
  jsonTextPlugin,
  propertyIdsPlugin,
  createPagePlugin,
  blockTreePlugin,
  blocksToMarkdownPlugin,
  searchItemsPlugin,
  pickPlugin,
  fullReferencesPlugin,
];
