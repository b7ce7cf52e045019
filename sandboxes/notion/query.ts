// Data source query: Notion's filter language (property, timestamp, and/or) and sorts.
import { fixOne, invalidField, validation } from './errors.ts';
import type { DataSourceRecord, PageRecord, Workspace } from './model.ts';
import { findProperty, isIsoDate, type PropSchema, type PropertyType } from './properties.ts';
import { plainText, type RichTextItem } from './richtext.ts';
import { isObject, normalizeId } from './util.ts';

type Predicate = (page: PageRecord) => boolean;
type FilterKind = 'text' | 'number' | 'checkbox' | 'select' | 'multi_select' | 'date' | 'ids' | 'files';

const KIND_OF: Record<PropertyType, FilterKind> = {
  title: 'text',
  rich_text: 'text',
  url: 'text',
  email: 'text',
  phone_number: 'text',
  number: 'number',
  unique_id: 'number',
  checkbox: 'checkbox',
  select: 'select',
  status: 'select',
  multi_select: 'multi_select',
  date: 'date',
  created_time: 'date',
  last_edited_time: 'date',
  people: 'ids',
  created_by: 'ids',
  last_edited_by: 'ids',
  relation: 'ids',
  files: 'files',
};

const EMPTY = ['is_empty', 'is_not_empty'];
const RELATIVE_DATES = ['past_week', 'past_month', 'past_year', 'next_week', 'next_month', 'next_year', 'this_week'];
const CONDITIONS: Record<FilterKind, string[]> = {
  text: ['equals', 'does_not_equal', 'contains', 'does_not_contain', 'starts_with', 'ends_with', ...EMPTY],
  number: ['equals', 'does_not_equal', 'greater_than', 'less_than', 'greater_than_or_equal_to', 'less_than_or_equal_to', ...EMPTY],
  checkbox: ['equals', 'does_not_equal'],
  select: ['equals', 'does_not_equal', ...EMPTY],
  multi_select: ['contains', 'does_not_contain', ...EMPTY],
  date: ['equals', 'before', 'after', 'on_or_before', 'on_or_after', ...EMPTY, ...RELATIVE_DATES],
  ids: ['contains', 'does_not_contain', ...EMPTY],
  files: EMPTY,
};

/** The comparable value of a property on a page, by filter kind. */
function comparable(ws: Workspace, prop: PropSchema, page: PageRecord): unknown {
  const stored = page.properties[prop.id];
  const optionName = (id: unknown) => prop.options?.find((o) => o.id === id)?.name;
  switch (prop.type) {
    case 'title':
    case 'rich_text':
      return plainText((stored as RichTextItem[] | undefined) ?? []);
    case 'url':
    case 'email':
    case 'phone_number':
      return (stored as string | null | undefined) ?? '';
    case 'select':
    case 'status':
      return optionName(stored) ?? null;
    case 'multi_select':
      return ((stored as string[] | undefined) ?? []).map(optionName).filter((n) => n !== undefined);
    case 'date':
      return (stored as { start: string } | null | undefined)?.start ?? null;
    case 'created_time':
      return page.createdTime;
    case 'last_edited_time':
      return page.lastEditedTime;
    case 'created_by':
      return [page.createdBy];
    case 'last_edited_by':
      return [page.lastEditedBy];
    case 'checkbox':
      return stored === true;
    case 'files':
      return (stored as unknown[] | undefined) ?? [];
    default:
      return stored ?? (prop.type === 'people' || prop.type === 'relation' ? [] : null);
  }
}

const DAY = 86_400_000;
const dayOf = (iso: string) => new Date(iso.length === 10 ? `${iso}T00:00:00Z` : iso).toISOString().slice(0, 10);
const msOf = (iso: string) => Date.parse(iso.length === 10 ? `${iso}T00:00:00Z` : iso);

function dateTest(condition: string, expected: unknown, value: string | null): boolean {
  if (condition === 'is_empty') return value === null;
  if (condition === 'is_not_empty') return value !== null;
  if (value === null) return false;
  const now = Date.now();
  const at = msOf(value);
  if (RELATIVE_DATES.includes(condition)) {
    const span = condition.endsWith('week') ? 7 * DAY : condition.endsWith('month') ? 31 * DAY : 366 * DAY;
    if (condition === 'this_week') {
      const monday = new Date(now - ((new Date(now).getUTCDay() + 6) % 7) * DAY).toISOString().slice(0, 10);
      return at >= msOf(monday) && at < msOf(monday) + 7 * DAY;
    }
    return condition.startsWith('past') ? at >= now - span && at <= now : at >= now && at <= now + span;
  }
  const target = expected as string;
  // A date-only filter compares whole days; a date-time filter compares instants.
  const [a, b] = target.length === 10 ? [dayOf(value), target] : [at, msOf(target)];
  switch (condition) {
    case 'equals':
      return a === b;
    case 'before':
      return a < b;
    case 'after':
      return a > b;
    case 'on_or_before':
      return a <= b;
    default:
      return a >= b;
  }
}

function test(kind: FilterKind, condition: string, expected: unknown, value: unknown): boolean {
  if (kind === 'date') return dateTest(condition, expected, value as string | null);
  const isEmpty = value === null || value === '' || (Array.isArray(value) && value.length === 0);
  if (condition === 'is_empty') return isEmpty;
  if (condition === 'is_not_empty') return !isEmpty;
  if (kind === 'text') {
    const [v, e] = [String(value).toLowerCase(), String(expected).toLowerCase()];
    const tests: Record<string, () => boolean> = {
      equals: () => value === expected,
      does_not_equal: () => value !== expected,
      contains: () => v.includes(e),
      does_not_contain: () => !v.includes(e),
      starts_with: () => v.startsWith(e),
      ends_with: () => v.endsWith(e),
    };
    return tests[condition]();
  }
  if (kind === 'number') {
    if (value === null) return condition === 'does_not_equal';
    const [v, e] = [value as number, expected as number];
    const tests: Record<string, boolean> = {
      equals: v === e,
      does_not_equal: v !== e,
      greater_than: v > e,
      less_than: v < e,
      greater_than_or_equal_to: v >= e,
      less_than_or_equal_to: v <= e,
    };
    return tests[condition];
  }
  if (kind === 'checkbox' || kind === 'select') return condition === 'equals' ? value === expected : value !== expected;
  const list = value as unknown[];
  return condition === 'contains' ? list.includes(expected) : !list.includes(expected);
}

/** Checks the value a condition needs and normalizes it (ids get dashes). */
function conditionValue(kind: FilterKind, condition: string, value: unknown, path: string): unknown {
  if (EMPTY.includes(condition)) {
    if (value !== true) throw invalidField(path, '`true`', value);
    return value;
  }
  if (RELATIVE_DATES.includes(condition)) {
    if (!isObject(value)) throw invalidField(path, 'an object', value);
    return value;
  }
  switch (kind) {
    case 'number':
      if (typeof value !== 'number') throw invalidField(path, 'a number', value);
      return value;
    case 'checkbox':
      if (typeof value !== 'boolean') throw invalidField(path, 'a boolean', value);
      return value;
    case 'date':
      if (!isIsoDate(value)) throw invalidField(path, 'a valid ISO 8601 date string', value);
      return value;
    case 'ids': {
      const id = typeof value === 'string' ? normalizeId(value) : null;
      if (!id) throw invalidField(path, 'a valid uuid', value);
      return id;
    }
    default:
      if (typeof value !== 'string') throw invalidField(path, 'a string', value);
      return value;
  }
}

function conditionPredicate(kind: FilterKind, body: unknown, path: string, read: (p: PageRecord) => unknown): Predicate {
  const allowed = CONDITIONS[kind];
  const keys = isObject(body) ? Object.keys(body) : [];
  if (!isObject(body) || keys.length !== 1 || !allowed.includes(keys[0])) {
    throw fixOne(allowed.map((c) => `${path}.${c} should be defined, instead was \`undefined\`.`));
  }
  const condition = keys[0];
  const expected = conditionValue(kind, condition, body[condition], `${path}.${condition}`);
  return (page) => test(kind, condition, expected, read(page));
}

/** Validates a filter and turns it into a predicate over the data source's rows. */
export function compileFilter(ws: Workspace, ds: DataSourceRecord, raw: unknown, path = 'body.filter', depth = 0): Predicate {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  for (const op of ['and', 'or'] as const) {
    if (raw[op] === undefined) continue;
    // Compound filters nest two levels deep at most.
    if (depth >= 2) throw invalidField(`${path}.${op}`, 'not present', raw[op]);
    const list = raw[op];
    if (!Array.isArray(list)) throw invalidField(`${path}.${op}`, 'an array', list);
    const parts = list.map((f, i) => compileFilter(ws, ds, f, `${path}.${op}[${i}]`, depth + 1));
    return op === 'and' ? (p) => parts.every((t) => t(p)) : (p) => parts.some((t) => t(p));
  }
  if (raw.timestamp !== undefined) {
    const ts = raw.timestamp;
    if (ts !== 'created_time' && ts !== 'last_edited_time') {
      throw invalidField(`${path}.timestamp`, '`"created_time"` or `"last_edited_time"`', ts);
    }
    return conditionPredicate('date', raw[ts], `${path}.${ts}`, (p) => (ts === 'created_time' ? p.createdTime : p.lastEditedTime));
  }
  if (typeof raw.property === 'string') {
    const prop = findProperty(ds.schema, raw.property);
    if (!prop) throw validation(`Could not find property with name or id: ${raw.property}`);
    const filterType = Object.keys(raw).find((k) => k !== 'property');
    if (filterType !== prop.type) {
      throw validation(
        `The property type in the database does not match the property type of the filter provided: database property ${prop.type} does not match filter ${filterType ?? 'undefined'}`,
      );
    }
    return conditionPredicate(KIND_OF[prop.type], raw[filterType], `${path}.${filterType}`, (p) => comparable(ws, prop, p));
  }
  throw fixOne(['property', 'timestamp', 'or', 'and'].map((k) => `${path}.${k} should be defined, instead was \`undefined\`.`));
}

type Comparator = (a: PageRecord, b: PageRecord) => number;

/** Sort key; undefined sorts last whatever the direction, as empty cells do in Notion. */
function sortKey(ws: Workspace, prop: PropSchema, page: PageRecord): string | number | undefined {
  const value = comparable(ws, prop, page);
  const optionRank = (name: unknown) => prop.options?.findIndex((o) => o.name === name) ?? -1;
  switch (KIND_OF[prop.type]) {
    case 'text':
      return value === '' ? undefined : (value as string).toLowerCase();
    case 'number':
      return (value as number | null) ?? undefined;
    case 'checkbox':
      return value ? 1 : 0;
    case 'select':
      return value === null ? undefined : optionRank(value);
    case 'multi_select':
      return (value as string[]).length ? optionRank((value as string[])[0]) : undefined;
    case 'date':
      return value === null ? undefined : msOf(value as string);
    case 'ids': {
      const first = (value as string[])[0];
      return first === undefined ? undefined : (ws.users.get(first)?.name ?? first).toLowerCase();
    }
    default:
      return (value as unknown[]).length || undefined;
  }
}

export function compileSorts(ws: Workspace, ds: DataSourceRecord, raw: unknown): Comparator {
  if (raw === undefined) return () => 0;
  if (!Array.isArray(raw)) throw invalidField('body.sorts', 'an array', raw);
  const comparators = raw.map((s, i): Comparator => {
    const path = `body.sorts[${i}]`;
    if (!isObject(s)) throw invalidField(path, 'an object', s);
    if (s.direction !== 'ascending' && s.direction !== 'descending') {
      throw invalidField(`${path}.direction`, '`"ascending"` or `"descending"`', s.direction);
    }
    const sign = s.direction === 'ascending' ? 1 : -1;
    let key: (p: PageRecord) => string | number | undefined;
    if (s.timestamp !== undefined) {
      if (s.timestamp !== 'created_time' && s.timestamp !== 'last_edited_time') {
        throw invalidField(`${path}.timestamp`, '`"created_time"` or `"last_edited_time"`', s.timestamp);
      }
      key = (p) => msOf(s.timestamp === 'created_time' ? p.createdTime : p.lastEditedTime);
    } else if (typeof s.property === 'string') {
      const prop = findProperty(ds.schema, s.property);
      if (!prop) throw validation(`Could not find sort property with name or id: ${s.property}`);
      key = (p) => sortKey(ws, prop, p);
    } else {
      throw fixOne([`${path}.property should be defined, instead was \`undefined\`.`, `${path}.timestamp should be defined, instead was \`undefined\`.`]);
    }
    return (a, b) => {
      const [x, y] = [key(a), key(b)];
      if (x === y) return 0;
      if (x === undefined) return 1;
      if (y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    };
  });
  return (a, b) => {
    for (const c of comparators) {
      const r = c(a, b);
      if (r) return r;
    }
    return 0;
  };
}

/**
 * `filter_properties` entries → the property ids to keep. Notion reads each value once-decoded from the query
 * string and compares it with the property's raw id: the id it shows in JSON is URL-encoded ("%3AUJq" for
 * ":UJq"), so a client must decode it once before putting it in the query, as the official SDK does
 * (notion-sdk-js src/api-endpoints: filter_properties is a query parameter of property ids; src/Client.ts
 * builds the query with URLSearchParams, which encodes once). An id encoded twice does not match.
 */
export function selectProperties(ds: DataSourceRecord | undefined, keys: string[]): Set<string> | undefined {
  if (!keys.length) return undefined;
  return new Set(
    keys.map((key) => {
      const prop = ds ? ds.schema.find((p) => decodeURIComponent(p.id) === key) : key === 'title' ? { id: 'title' } : undefined;
      if (!prop) throw validation(`Could not find property with name or id: ${key}`);
      return prop.id;
    }),
  );
}
