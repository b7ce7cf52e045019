// Database tool arguments -> PostgREST query parameters. Pure functions, no I/O.
//
// Output is a list of [name, value] pairs, NOT encoded: the caller URL-encodes each pair exactly once
// (URLSearchParams or the HTTP client's query option). Rules of PostgREST's URL grammar that matter here:
// - `col=<op>.<value>`: everything after `<op>.` is literal, so eq/neq/gt/gte/lt/lte/like/ilike values
//   need no quoting at all (commas, dots, parentheses and quotes are plain characters there).
// - Inside `in.(...)` lists and `and=(...)` trees the characters `,` `(` `)` `"` `\` and leading spaces
//   matter, so every such value is double-quoted with `\` and `"` escaped.
// - `like`/`ilike`: patterns use SQL LIKE syntax (`%` any run, `_` one character, `\` escapes), and `*` is
//   accepted as an alias of `%` the way Supabase users write it (`ilike: "*smith*"`): PostgREST turns EVERY
//   `*` into `%` before Postgres sees the pattern (even `\*`), so we send patterns unchanged. The flip side,
//   documented in the tool descriptions: a literal `*` cannot be matched through PostgREST (use `_` for it).
// - `in.()` and `in.("")` both reach Postgres as an EMPTY list (PostgREST collapses a lone empty element),
//   so `in: [""]` is sent as `eq.` instead.
// - Parameter names `select order limit offset and or columns on_conflict` are reserved: a filter on a
//   column with such a name is sent inside `and=(...)`, where column names are unambiguous.

/** One query parameter, before URL encoding. */
export type QueryParam = [name: string, value: string];

export const FILTER_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export type Scalar = string | number | boolean;
export type ColumnFilter = Partial<Record<FilterOperator, unknown>>;
export type Filters = Record<string, ColumnFilter>;

/** A bad tool argument; `path` is the JSON path of the offending field, e.g. `filters.age.in`. */
export class FilterError extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'FilterError';
    this.path = path;
  }
}

/**
 * Table and column names we accept: ASCII letter or `_`, then letters, digits or `_`, at most 63 characters
 * (Postgres truncates longer names). Anything else (spaces, dots, quotes, dashes...) is refused before sending:
 * a dot would be read as an embedded resource and other characters need quoting rules we do not want to guess.
 */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const IDENTIFIER_RULE = 'letters, digits and _ only, not starting with a digit, at most 63 characters';
const RESERVED_PARAM_NAMES = new Set(['select', 'order', 'limit', 'offset', 'and', 'or', 'columns', 'on_conflict']);
const SCALAR_OPERATORS = new Set<FilterOperator>(['eq', 'neq', 'gt', 'gte', 'lt', 'lte']);

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** JSON path of a child field: `filters.age`, or `filters["my col"]` when the key is not an identifier. */
function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return IDENTIFIER.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}

/** Returns the name when it is a valid identifier, else throws a FilterError naming it. */
export function checkIdentifier(name: unknown, path: string, what: 'table' | 'column' = 'column'): string {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    const shown = typeof name === 'string' ? JSON.stringify(name) : describe(name);
    throw new FilterError(path, `${shown} is not a valid ${what} name (${IDENTIFIER_RULE})`);
  }
  return name;
}

/** Double-quotes a value for `in.(...)` lists and logic trees, escaping `\` and `"`. */
function quote(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function scalarText(value: unknown, path: string, op: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  if (value === null) throw new FilterError(path, `null cannot be compared with ${op}; use {"is": null}`);
  throw new FilterError(path, `${op} needs a string, a finite number or a boolean, got ${describe(value)}`);
}

/** A like/ilike pattern, sent as is: `*` is PostgREST's alias of `%`. */
function likePattern(value: unknown, path: string, op: string): string {
  if (typeof value !== 'string') throw new FilterError(path, `${op} needs a string pattern, got ${describe(value)}`);
  return value;
}

/** One condition, in the two spellings PostgREST accepts. */
interface Condition {
  /** `<op>.<value>` for a top-level `col=` parameter (value literal). */
  param: string;
  /** `<op>.<value>` for use inside `and=(...)` (value quoted). */
  term: string;
}

function condition(op: string, value: unknown, path: string): Condition {
  if (SCALAR_OPERATORS.has(op as FilterOperator)) {
    const text = scalarText(value, path, op);
    return { param: `${op}.${text}`, term: `${op}.${quote(text)}` };
  }
  switch (op) {
    case 'like':
    case 'ilike': {
      const pattern = likePattern(value, path, op);
      return { param: `${op}.${pattern}`, term: `${op}.${quote(pattern)}` };
    }
    case 'in': {
      if (!Array.isArray(value)) throw new FilterError(path, `in needs an array of values, got ${describe(value)}`);
      const texts = value.map((item, i) => {
        if (item === null) throw new FilterError(childPath(path, i), 'null cannot be listed in in; add {"is": null} on its own');
        return scalarText(item, childPath(path, i), 'in');
      });
      if (texts.length === 1 && texts[0] === '') return { param: 'eq.', term: 'eq.""' };
      const list = `in.(${texts.map(quote).join(',')})`;
      return { param: list, term: list };
    }
    case 'is': {
      if (value !== null && value !== true && value !== false) {
        throw new FilterError(path, `is needs null, true or false, got ${describe(value)}`);
      }
      const text = `is.${String(value)}`;
      return { param: text, term: text };
    }
    default:
      throw new FilterError(path, `unknown operator ${JSON.stringify(op)}; use one of ${FILTER_OPERATORS.join(', ')}`);
  }
}

function operatorEntries(filters: unknown, path: string): Array<[column: string, op: string, value: unknown, path: string]> {
  if (filters === undefined || filters === null) return [];
  if (!isPlainObject(filters)) throw new FilterError(path, `must be an object of {column: {operator: value}}, got ${describe(filters)}`);
  const entries: Array<[string, string, unknown, string]> = [];
  for (const [column, ops] of Object.entries(filters)) {
    const columnPath = childPath(path, column);
    checkIdentifier(column, columnPath);
    if (!isPlainObject(ops)) throw new FilterError(columnPath, `must be an object of {operator: value}, got ${describe(ops)}`);
    const names = Object.keys(ops);
    if (names.length === 0) throw new FilterError(columnPath, 'has no operator; use one of ' + FILTER_OPERATORS.join(', '));
    for (const op of names) entries.push([column, op, ops[op], childPath(columnPath, op)]);
  }
  return entries;
}

/**
 * True when the filters select every row (undefined, null, `{}`, or only columns without operators).
 * Update and delete tools refuse such filters. Does not validate: filterParams does.
 */
export function isEmptyFilter(filters: unknown): boolean {
  if (!isPlainObject(filters)) return filters === undefined || filters === null;
  return Object.values(filters).every((ops) => isPlainObject(ops) && Object.keys(ops).length === 0);
}

/** `{column: {operator: value}}` -> filter parameters; several operators on one column are ANDed. */
export function filterParams(filters: unknown, path = 'filters'): QueryParam[] {
  const params: QueryParam[] = [];
  const reservedTerms: string[] = [];
  for (const [column, op, value, opPath] of operatorEntries(filters, path)) {
    const c = condition(op, value, opPath);
    if (RESERVED_PARAM_NAMES.has(column)) reservedTerms.push(`${column}.${c.term}`);
    else params.push([column, c.param]);
  }
  if (reservedTerms.length > 0) params.push(['and', `(${reservedTerms.join(',')})`]);
  return params;
}

/** `{column: "asc" | "desc"}` -> `order=col.asc,col2.desc` (object key order is the sort order). */
export function orderParams(orderBy: unknown, path = 'order_by'): QueryParam[] {
  if (orderBy === undefined || orderBy === null) return [];
  if (!isPlainObject(orderBy)) throw new FilterError(path, `must be an object of {column: "asc" | "desc"}, got ${describe(orderBy)}`);
  const terms = Object.entries(orderBy).map(([column, direction]) => {
    const columnPath = childPath(path, column);
    checkIdentifier(column, columnPath);
    const dir = typeof direction === 'string' ? direction.toLowerCase() : direction;
    if (dir !== 'asc' && dir !== 'desc') throw new FilterError(columnPath, `must be "asc" or "desc", got ${describe(direction)}`);
    return `${column}.${dir}`;
  });
  return terms.length > 0 ? [['order', terms.join(',')]] : [];
}

/** `"a, b"` or `"*"` (the default) -> `select=`. */
export function selectParams(columns: unknown, path = 'columns'): QueryParam[] {
  if (columns === undefined || columns === null) return [['select', '*']];
  if (typeof columns !== 'string') throw new FilterError(path, `must be a comma-separated string or "*", got ${describe(columns)}`);
  if (columns.trim() === '*') return [['select', '*']];
  const names = columns.split(',').map((name) => name.trim());
  names.forEach((name) => checkIdentifier(name, path));
  return [['select', names.join(',')]];
}

function integerArg(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new FilterError(path, `must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

/** `limit` (default 100, 1-1000) and `offset` (default 0, sent only when positive). */
export function pagingParams(limit: unknown, offset: unknown): QueryParam[] {
  const params: QueryParam[] = [['limit', String(limit === undefined ? DEFAULT_LIMIT : integerArg(limit, 'limit', 1, MAX_LIMIT))]];
  const skip = offset === undefined ? 0 : integerArg(offset, 'offset', 0, Number.MAX_SAFE_INTEGER);
  if (skip > 0) params.push(['offset', String(skip)]);
  return params;
}

export interface ReadArgs {
  columns?: unknown;
  filters?: unknown;
  limit?: unknown;
  offset?: unknown;
  order_by?: unknown;
}

/** All query parameters of database_read_records, in a stable order. */
export function readParams(args: ReadArgs): QueryParam[] {
  return [...selectParams(args.columns), ...filterParams(args.filters), ...orderParams(args.order_by), ...pagingParams(args.limit, args.offset)];
}

/** Checks that a row to write is an object whose keys are valid column names. */
export function checkRowKeys(row: unknown, path: string): Record<string, unknown> {
  if (!isPlainObject(row)) throw new FilterError(path, `must be an object of {column: value}, got ${describe(row)}`);
  for (const key of Object.keys(row)) checkIdentifier(key, childPath(path, key));
  return row;
}

/**
 * Checks the records of an insert and returns `columns=` when a batch has rows with different keys
 * (PostgREST otherwise answers 400 "All object keys must match"). Send it with `Prefer: missing=default`
 * so a key absent from a row takes the column default instead of NULL.
 */
export function insertParams(records: unknown, path = 'records'): QueryParam[] {
  if (!Array.isArray(records)) {
    checkRowKeys(records, path);
    return [];
  }
  const columns = new Set<string>();
  records.forEach((row, i) => Object.keys(checkRowKeys(row, childPath(path, i))).forEach((key) => columns.add(key)));
  const uniform = records.every((row) => Object.keys(row).length === columns.size);
  return uniform || columns.size === 0 ? [] : [['columns', [...columns].join(',')]];
}

/** Encodes the pairs once, as a query string without the leading `?`. */
export function toQueryString(params: QueryParam[]): string {
  return new URLSearchParams(params).toString();
}
