// Data source property schemas and page property values: parsing requests, answering in Notion's shapes.
import { fixOne, invalidField, validation } from './errors.ts';
import type { PageRecord, Workspace } from './model.ts';
import { COLORS, parseRichText, type RichTextItem } from './richtext.ts';
import { isObject, newId, normalizeId, type Json } from './util.ts';

export const PROPERTY_TYPES = [
  'title',
  'rich_text',
  'number',
  'select',
  'multi_select',
  'status',
  'date',
  'people',
  'files',
  'checkbox',
  'url',
  'email',
  'phone_number',
  'relation',
  'created_time',
  'created_by',
  'last_edited_time',
  'last_edited_by',
  'unique_id',
] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];

const COMPUTED: readonly PropertyType[] = ['created_time', 'created_by', 'last_edited_time', 'last_edited_by', 'unique_id'];
const NUMBER_FORMATS = ['number', 'number_with_commas', 'percent', 'dollar', 'euro', 'pound', 'yen', 'rupee', 'won', 'yuan', 'real', 'franc'];

export interface SelectOption {
  id: string;
  name: string;
  color: string;
  description: string | null;
}

export interface StatusGroup {
  id: string;
  name: string;
  color: string;
  option_ids: string[];
}

export interface PropSchema {
  id: string;
  name: string;
  type: PropertyType;
  description: string | null;
  options?: SelectOption[];
  groups?: StatusGroup[];
  numberFormat?: string;
  relation?: { dataSourceId: string; databaseId: string };
  prefix?: string | null;
}

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:;<=>?@[]^_`{|}~';

/** Short, URL-encoded property ids like Notion's ("%3AUPp"). */
export function newPropertyId(taken: readonly PropSchema[]): string {
  for (;;) {
    let raw = '';
    for (let i = 0; i < 4; i++) raw += ID_CHARS[Math.floor(Math.random() * ID_CHARS.length)];
    const id = encodeURIComponent(raw);
    if (id !== 'title' && !taken.some((p) => p.id === id)) return id;
  }
}

const isType = (value: unknown): value is PropertyType => typeof value === 'string' && (PROPERTY_TYPES as readonly string[]).includes(value);

export const findProperty = (schema: readonly PropSchema[], key: string) =>
  schema.find((p) => p.name === key) ?? schema.find((p) => p.id === key || decodeURIComponent(p.id) === key);

// ---------------------------------------------------------------- schema (data source properties)

export function serializeSchema(p: PropSchema): Json {
  let config: Json = {};
  if (p.type === 'number') config = { format: p.numberFormat ?? 'number' };
  if (p.type === 'select' || p.type === 'multi_select') config = { options: p.options };
  if (p.type === 'status') config = { options: p.options, groups: p.groups };
  if (p.type === 'relation' && p.relation) {
    config = { data_source_id: p.relation.dataSourceId, database_id: p.relation.databaseId, type: 'single_property', single_property: {} };
  }
  if (p.type === 'unique_id') config = { prefix: p.prefix ?? null };
  return { id: p.id, name: p.name, description: p.description, type: p.type, [p.type]: config };
}

function parseOptions(raw: unknown, path: string, existing: readonly SelectOption[] = []): SelectOption[] {
  if (raw === undefined) return [...existing];
  if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
  return raw.map((o, i) => {
    const at = `${path}[${i}]`;
    if (!isObject(o)) throw invalidField(at, 'an object', o);
    const known = existing.find((e) => (o.id !== undefined && e.id === o.id) || (o.name !== undefined && e.name === o.name));
    const name = o.name ?? known?.name;
    if (typeof name !== 'string') throw invalidField(`${at}.name`, 'a string', o.name);
    if (name.includes(',')) throw validation(`Invalid select option, commas not allowed: ${name}`);
    const color = o.color ?? known?.color ?? 'default';
    if (typeof color !== 'string' || !(COLORS as readonly string[]).includes(color)) {
      throw invalidField(`${at}.color`, COLORS.map((c) => `\`"${c}"\``).join(', '), o.color);
    }
    const description = typeof o.description === 'string' ? o.description : (known?.description ?? null);
    return { id: known?.id ?? newId(), name, color, description };
  });
}

const DEFAULT_STATUS: Array<[string, string, string]> = [
  ['Not started', 'default', 'To-do'],
  ['In progress', 'blue', 'In progress'],
  ['Done', 'green', 'Complete'],
];

function statusConfig(raw: Json, path: string, existing?: PropSchema): Pick<PropSchema, 'options' | 'groups'> {
  if (raw.options === undefined && existing?.options) return { options: existing.options, groups: existing.groups };
  const options =
    raw.options === undefined
      ? DEFAULT_STATUS.map(([name, color]) => ({ id: newId(), name, color, description: null }))
      : parseOptions(raw.options, `${path}.options`, existing?.options);
  // Without explicit groups, defaults fall in their usual groups and anything new lands in To-do.
  const groupOf = (o: SelectOption) => DEFAULT_STATUS.find(([name]) => name === o.name)?.[2] ?? 'To-do';
  const groups = [
    ['To-do', 'gray'],
    ['In progress', 'blue'],
    ['Complete', 'green'],
  ].map(([name, color]) => ({
    id: existing?.groups?.find((g) => g.name === name)?.id ?? newId(),
    name,
    color,
    option_ids: options.filter((o) => groupOf(o) === name).map((o) => o.id),
  }));
  return { options, groups };
}

/**
 * One schema entry of a create or update body: `{"<type>": config, name?, description?}`.
 * With `existing`, a body without a type only renames or re-describes.
 */
export function parseSchemaEntry(ws: Workspace, name: string, raw: unknown, path: string, taken: readonly PropSchema[], existing?: PropSchema): PropSchema {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const type = isType(raw.type) ? raw.type : PROPERTY_TYPES.find((t) => raw[t] !== undefined);
  if (raw.name !== undefined && typeof raw.name !== 'string') throw invalidField(`${path}.name`, 'a string', raw.name);
  const newName = (raw.name as string | undefined) ?? name;
  const description = typeof raw.description === 'string' ? raw.description : (existing?.description ?? null);
  if (!type) {
    if (existing && (raw.name !== undefined || raw.description !== undefined)) return { ...existing, name: newName, description };
    throw fixOne(PROPERTY_TYPES.map((t) => `${path}.${t} should be defined, instead was \`undefined\`.`));
  }
  const config = raw[type] ?? {};
  if (!isObject(config)) throw invalidField(`${path}.${type}`, 'an object', config);
  const sameType = existing?.type === type ? existing : undefined;
  const prop: PropSchema = { id: existing?.id ?? (type === 'title' ? 'title' : newPropertyId(taken)), name: newName, type, description };
  if (type === 'select' || type === 'multi_select') prop.options = parseOptions(config.options, `${path}.${type}.options`, sameType?.options);
  if (type === 'status') Object.assign(prop, statusConfig(config, `${path}.status`, sameType));
  if (type === 'number') {
    const format = config.format ?? sameType?.numberFormat ?? 'number';
    if (typeof format !== 'string' || !NUMBER_FORMATS.includes(format)) {
      throw invalidField(`${path}.number.format`, NUMBER_FORMATS.map((f) => `\`"${f}"\``).join(', '), config.format);
    }
    prop.numberFormat = format;
  }
  if (type === 'relation') {
    const target = typeof config.data_source_id === 'string' ? normalizeId(config.data_source_id) : null;
    if (!target) throw invalidField(`${path}.relation.data_source_id`, 'a valid uuid', config.data_source_id);
    prop.relation = { dataSourceId: target, databaseId: ws.dataSource(target).databaseId };
  }
  if (type === 'unique_id') prop.prefix = typeof config.prefix === 'string' ? config.prefix : null;
  return prop;
}

/** A fresh schema from a create body; exactly one title property is required. */
export function parseSchema(ws: Workspace, raw: unknown, path: string): PropSchema[] {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const schema: PropSchema[] = [];
  for (const [name, entry] of Object.entries(raw)) schema.push(parseSchemaEntry(ws, name, entry, `${path}.${name}`, schema));
  const titles = schema.filter((p) => p.type === 'title').length;
  if (titles !== 1) throw validation(`Data sources must have exactly one title property, instead found ${titles}.`);
  return schema;
}

/** Applies a PATCH `properties` body: add, change, rename, or remove (null). */
export function parsePatchedSchema(ws: Workspace, schema: PropSchema[], raw: unknown, path: string): PropSchema[] {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const next = [...schema];
  for (const [key, entry] of Object.entries(raw)) {
    const existing = findProperty(next, key);
    if (entry === null) {
      if (!existing) throw validation(`${key} is not a property that exists.`);
      if (existing.type === 'title') throw validation('Cannot delete the title property of a data source.');
      next.splice(next.indexOf(existing), 1);
      continue;
    }
    const parsed = parseSchemaEntry(ws, key, entry, `${path}.${key}`, next, existing);
    if (existing) {
      if (existing.type === 'title' && parsed.type !== 'title') throw validation('Cannot change the type of the title property.');
      next[next.indexOf(existing)] = parsed;
    } else {
      if (parsed.type === 'title') throw validation('Data sources must have exactly one title property, instead found 2.');
      next.push(parsed);
    }
  }
  const names = new Set<string>();
  for (const p of next) {
    if (names.has(p.name)) throw validation(`Property name ${p.name} is used more than once.`);
    names.add(p.name);
  }
  return next;
}

// ---------------------------------------------------------------- values (page properties)

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(T(\d{2}):(\d{2})(:(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

export function isIsoDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = ISO_DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return false;
  return !m[4] || (Number(m[5]) < 24 && Number(m[6]) < 60 && (m[8] === undefined || Number(m[8]) < 60));
}

export interface ParsedValues {
  values: Record<string, unknown>;
  /** Adds the select options Notion creates on the fly; call once the whole request is valid. */
  commit(): void;
}

/** Validates a page `properties` body against a data source schema (or, with no source, a page's title only). */
export function parseValues(ws: Workspace, schema: PropSchema[] | null, raw: unknown, path: string): ParsedValues {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const effective: PropSchema[] = schema ?? [{ id: 'title', name: 'title', type: 'title', description: null }];
  const values: Record<string, unknown> = {};
  const pendingOptions: Array<[PropSchema, SelectOption]> = [];
  const problems: string[] = [];
  const checked: Array<[PropSchema, Json, string]> = [];
  for (const [key, value] of Object.entries(raw)) {
    const prop = findProperty(effective, key);
    if (!prop) {
      problems.push(`${key} is not a property that exists.`);
    } else if (!isObject(value) || value[prop.type] === undefined) {
      problems.push(`${key} is expected to be ${prop.type}.`);
    } else {
      checked.push([prop, value, `${path}.${key}.${prop.type}`]);
    }
  }
  if (problems.length) throw validation(problems.join(' '));
  for (const [prop, value, at] of checked) values[prop.id] = parseValue(ws, prop, value[prop.type], at, pendingOptions);
  return {
    values,
    commit() {
      for (const [prop, option] of pendingOptions) if (!prop.options!.some((o) => o.name === option.name)) prop.options!.push(option);
    },
  };
}

function parseOption(prop: PropSchema, raw: unknown, path: string, pending: Array<[PropSchema, SelectOption]>): string {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const options = prop.options ?? [];
  if (raw.id !== undefined) {
    const byId = options.find((o) => o.id === raw.id);
    if (!byId) throw validation(`Invalid ${prop.type} option id: ${String(raw.id)}.`);
    return byId.id;
  }
  if (typeof raw.name !== 'string') throw invalidField(`${path}.name`, 'a string', raw.name);
  const name = raw.name;
  const known = options.find((o) => o.name === name) ?? pending.find(([p, o]) => p === prop && o.name === name)?.[1];
  if (known) return known.id;
  if (prop.type === 'status') throw validation(`Invalid status option. Status option "${name}" does not exist".`);
  if (name.includes(',')) throw validation(`Invalid ${prop.type} option, commas not allowed: ${name}`);
  // Notion adds unknown select / multi-select options to the schema.
  const created: SelectOption = { id: newId(), name, color: COLORS[(options.length + pending.length + 1) % COLORS.length], description: null };
  pending.push([prop, created]);
  return created.id;
}

function parseValue(ws: Workspace, prop: PropSchema, raw: unknown, path: string, pending: Array<[PropSchema, SelectOption]>): unknown {
  const nullable = (check: (v: unknown) => boolean, expected: string) => {
    if (raw !== null && !check(raw)) throw invalidField(path, `${expected} or \`null\``, raw);
    return raw;
  };
  switch (prop.type) {
    case 'title':
    case 'rich_text':
      return parseRichText(raw, path, ws.resolveMention);
    case 'number':
      return nullable((v) => typeof v === 'number' && Number.isFinite(v), 'a number');
    case 'checkbox':
      if (typeof raw !== 'boolean') throw invalidField(path, 'a boolean', raw);
      return raw;
    case 'url':
    case 'email':
    case 'phone_number':
      return nullable((v) => typeof v === 'string', 'a string');
    case 'select':
    case 'status':
      return raw === null ? null : parseOption(prop, raw, path, pending);
    case 'multi_select':
      if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
      return raw.map((o, i) => parseOption(prop, o, `${path}[${i}]`, pending));
    case 'date': {
      if (raw === null) return null;
      if (!isObject(raw)) throw invalidField(path, 'an object or `null`', raw);
      if (!isIsoDate(raw.start)) throw invalidField(`${path}.start`, 'a valid ISO 8601 date string', raw.start);
      if (raw.end !== undefined && raw.end !== null && !isIsoDate(raw.end)) throw invalidField(`${path}.end`, 'a valid ISO 8601 date string', raw.end);
      if (raw.time_zone !== undefined && raw.time_zone !== null && typeof raw.time_zone !== 'string')
        throw invalidField(`${path}.time_zone`, 'a string', raw.time_zone);
      return { start: raw.start, end: raw.end ?? null, time_zone: raw.time_zone ?? null };
    }
    case 'people':
      if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
      return raw.map((u, i) => {
        const id = isObject(u) && typeof u.id === 'string' ? normalizeId(u.id) : null;
        if (!id) throw invalidField(`${path}[${i}].id`, 'a valid uuid', isObject(u) ? u.id : u);
        if (!ws.users.has(id)) throw validation(`Could not find user with ID: ${id}.`);
        return id;
      });
    case 'relation':
      if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
      return raw.map((r, i) => {
        const id = isObject(r) && typeof r.id === 'string' ? normalizeId(r.id) : null;
        if (!id) throw invalidField(`${path}[${i}].id`, 'a valid uuid', isObject(r) ? r.id : r);
        ws.page(id);
        return id;
      });
    case 'files':
      if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
      return raw.map((f, i) => {
        if (!isObject(f) || !isObject(f.external) || typeof f.external.url !== 'string')
          throw invalidField(`${path}[${i}].external.url`, 'a string', isObject(f) ? f.external : f);
        return { name: typeof f.name === 'string' ? f.name : f.external.url, type: 'external', external: { url: f.external.url } };
      });
    default:
      if (COMPUTED.includes(prop.type)) throw validation(`${prop.name} is a ${prop.type} property and cannot be set.`);
      return raw;
  }
}

// ---------------------------------------------------------------- answering

const optionJson = (o: SelectOption) => ({ id: o.id, name: o.name, color: o.color });

export const PAGE_REFERENCE_LIMIT = 25;

/** Every reference of a relation or people property, as property items (the page property endpoint). */
export function referenceItems(prop: PropSchema, page: PageRecord, ws: Workspace): Json[] {
  const ids = (page.properties[prop.id] as string[] | undefined) ?? [];
  return ids.map((id) => ({ object: 'property_item', id: prop.id, type: prop.type, [prop.type]: prop.type === 'people' ? ws.user(id) : { id } }));
}

/** A page's value of one property in response form. */
export function propertyValue(prop: PropSchema, page: PageRecord, ws: Workspace): Json {
  const stored = page.properties[prop.id];
  const byId = (id: unknown) => prop.options?.find((o) => o.id === id);
  let value: unknown;
  switch (prop.type) {
    case 'title':
    case 'rich_text':
      value = (stored as RichTextItem[] | undefined) ?? [];
      break;
    case 'select':
    case 'status': {
      const o = byId(stored);
      value = o ? optionJson(o) : null;
      break;
    }
    case 'multi_select':
      value = ((stored as string[] | undefined) ?? [])
        .map(byId)
        .filter((o) => o !== undefined)
        .map(optionJson);
      break;
    case 'checkbox':
      value = stored ?? false;
      break;
    // A page object carries at most 25 references of a relation or people property; the rest come from the
    // page property endpoint (developers.notion.com/reference/retrieve-a-page: "limited to 25 ... use the
    // Retrieve a page property endpoint"). Relations say so with has_more; people do not.
    case 'people':
      value = ((stored as string[] | undefined) ?? []).slice(0, PAGE_REFERENCE_LIMIT).map((id) => ws.user(id));
      break;
    case 'relation': {
      const ids = (stored as string[] | undefined) ?? [];
      return { id: prop.id, type: 'relation', relation: ids.slice(0, PAGE_REFERENCE_LIMIT).map((id) => ({ id })), has_more: ids.length > PAGE_REFERENCE_LIMIT };
    }
    case 'files':
      value = stored ?? [];
      break;
    case 'created_time':
      value = page.createdTime;
      break;
    case 'last_edited_time':
      value = page.lastEditedTime;
      break;
    case 'created_by':
      value = ws.user(page.createdBy);
      break;
    case 'last_edited_by':
      value = ws.user(page.lastEditedBy);
      break;
    case 'unique_id':
      value = { prefix: prop.prefix ?? null, number: stored ?? null };
      break;
    default:
      value = stored ?? null;
  }
  return { id: prop.id, type: prop.type, [prop.type]: value };
}

/** The default value a new row gets (status: the first To-do option; unique_id: the next number). */
export function defaultValues(schema: readonly PropSchema[], nextUniqueId: () => number): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const p of schema) {
    if (p.type === 'status') values[p.id] = p.groups?.[0]?.option_ids[0] ?? p.options?.[0]?.id ?? null;
    if (p.type === 'unique_id') values[p.id] = nextUniqueId();
  }
  return values;
}
