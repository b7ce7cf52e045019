// PostgREST's URL grammar (select, filters, and/or trees, order, columns) as a small recursive-descent
// parser with a cursor, producing a syntax tree; syntax errors become PGRST100 with a column number.
// Supported: plain columns, `*`, `alias:col`, `col::type`; every filter operator; quoting inside `in.(...)`
// and logic trees. Not supported (answered as errors): embedded resources, JSON paths, aggregates.
import { PgrstError, parseError } from './errors.ts';

export type IsValue = 'null' | 'not_null' | 'true' | 'false' | 'unknown';

export type Operation =
  | { kind: 'simple'; op: string; quantifier?: 'any' | 'all'; value: string }
  | { kind: 'in'; values: string[] }
  | { kind: 'is'; value: IsValue }
  | { kind: 'isdistinct'; value: string }
  | { kind: 'fts'; op: string; language?: string; value: string };

export interface Filter {
  column: string;
  negated: boolean;
  operation: Operation;
}

export type LogicTree = { kind: 'filter'; filter: Filter } | { kind: 'group'; negated: boolean; op: 'and' | 'or'; children: LogicTree[] };

export type SelectItem = { kind: 'star' } | { kind: 'column'; column: string; alias?: string; cast?: string } | { kind: 'embed'; name: string };

export interface OrderTerm {
  column: string;
  direction?: 'asc' | 'desc';
  nulls?: 'first' | 'last';
}

export const SIMPLE_OPERATORS = ['neq', 'cs', 'cd', 'ov', 'sl', 'sr', 'nxr', 'nxl', 'adj'];
export const QUANTIFIABLE_OPERATORS = ['eq', 'gte', 'gt', 'lte', 'lt', 'like', 'ilike', 'match', 'imatch'];
export const FTS_OPERATORS = ['fts', 'plfts', 'phfts', 'wfts'];

function joinOr(items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

class Cursor {
  pos = 0;
  constructor(
    readonly text: string,
    readonly what: string,
  ) {}

  atEnd(): boolean {
    return this.pos >= this.text.length;
  }
  peek(offset = 0): string | undefined {
    return this.text[this.pos + offset];
  }
  accept(token: string): boolean {
    if (!this.text.startsWith(token, this.pos)) return false;
    this.pos += token.length;
    return true;
  }
  expect(token: string): void {
    if (!this.accept(token)) this.fail([JSON.stringify(token)]);
  }
  skipSpaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }
  /** Reads characters while the test holds. */
  takeWhile(test: (ch: string) => boolean): string {
    const start = this.pos;
    while (!this.atEnd() && test(this.text[this.pos])) this.pos++;
    return this.text.slice(start, this.pos);
  }
  fail(expecting: string[]): never {
    const unexpected = this.atEnd() ? 'end of input' : JSON.stringify(this.peek());
    throw parseError(this.what, this.pos + 1, `unexpected ${unexpected} expecting ${joinOr(expecting)}`);
  }
  /** Runs a parser, restoring the position if it throws a syntax error. */
  attempt<T>(parser: () => T): T | undefined {
    const start = this.pos;
    try {
      return parser();
    } catch (err) {
      if (!(err instanceof PgrstError)) throw err;
      this.pos = start;
      return undefined;
    }
  }
}

const FIELD_NAME = 'field name (* or [a..z0..9_$])';
const isIdentifierChar = (ch: string): boolean => /[\p{L}\p{N}_ $]/u.test(ch);

/** `"..."` with `\x` standing for x. */
function quotedValue(c: Cursor): string {
  c.expect('"');
  let out = '';
  for (;;) {
    if (c.atEnd()) c.fail(['"\\""']);
    const ch = c.text[c.pos++];
    if (ch === '"') return out;
    if (ch === '\\') {
      if (c.atEnd()) c.fail(['any character']);
      out += c.text[c.pos++];
    } else out += ch;
  }
}

/** A quoted name, or identifier parts joined by dashes (`-` not followed by `>`); surrounding spaces trimmed. */
function fieldName(c: Cursor): string {
  if (c.peek() === '"') return quotedValue(c);
  const parts: string[] = [];
  do {
    const part = c.takeWhile(isIdentifierChar).trim();
    if (!part) c.fail([FIELD_NAME]);
    parts.push(part);
  } while (c.peek() === '-' && c.peek(1) !== '>' && c.accept('-'));
  return parts.join('-');
}

function isValue(c: Cursor, version: number): IsValue {
  const candidates: IsValue[] = version >= 13 ? ['null', 'not_null', 'true', 'false', 'unknown'] : ['null', 'true', 'false', 'unknown'];
  for (const candidate of candidates) {
    if (c.text.slice(c.pos, c.pos + candidate.length).toLowerCase() === candidate) {
      c.pos += candidate.length;
      return candidate;
    }
  }
  return c.fail([`isVal: (${candidates.join(', ')})`]);
}

/** A quoted element must end right before `,` `)` or the end; otherwise the quotes are plain characters. */
function quotedElement(c: Cursor): string | undefined {
  if (c.peek() !== '"') return undefined;
  return c.attempt(() => {
    const value = quotedValue(c);
    if (!c.atEnd() && c.peek() !== ',' && c.peek() !== ')') c.fail(['","', '")"']);
    return value;
  });
}

function listValue(c: Cursor): string[] {
  c.skipSpaces();
  c.expect('(');
  c.skipSpaces();
  const values: string[] = [];
  do values.push(quotedElement(c) ?? c.takeWhile((ch) => ch !== ',' && ch !== ')'));
  while (c.accept(','));
  c.skipSpaces();
  if (!c.accept(')')) c.fail(['","', '")"']);
  c.skipSpaces();
  return values;
}

/** The value of a filter inside a logic tree: quoted, a `{...}` array literal, or raw up to `,` / `)`. */
function logicValue(c: Cursor): string {
  const quoted = quotedElement(c);
  if (quoted !== undefined) return quoted;
  if (c.peek() === '{') {
    const literal = c.attempt(() => {
      c.expect('{');
      const inner = c.takeWhile((ch) => ch !== '{' && ch !== '}');
      c.expect('}');
      return `{${inner}}`;
    });
    if (literal !== undefined) return literal;
  }
  return c.takeWhile((ch) => ch !== ',' && ch !== ')');
}

const restOfInput = (c: Cursor): string => {
  const value = c.text.slice(c.pos);
  c.pos = c.text.length;
  return value;
};

/** `[not.]<operator>[(modifier)].<value>` */
function opExpr(c: Cursor, value: (c: Cursor) => string, version: number): { negated: boolean; operation: Operation } {
  const negated = c.accept('not.');
  const start = c.pos;
  const word = c.takeWhile((ch) => ch >= 'a' && ch <= 'z');
  const delimiter = (): void => {
    if (!c.accept('.')) c.fail(['delimiter (.)']);
  };
  if (word === 'in' && c.accept('.')) return { negated, operation: { kind: 'in', values: listValue(c) } };
  if (word === 'is' && c.accept('.')) return { negated, operation: { kind: 'is', value: isValue(c, version) } };
  if (word === 'isdistinct') {
    delimiter();
    return { negated, operation: { kind: 'isdistinct', value: value(c) } };
  }
  if (FTS_OPERATORS.includes(word)) {
    let language: string | undefined;
    if (c.accept('(')) {
      language = c.takeWhile(isIdentifierChar).trim();
      c.expect(')');
    }
    delimiter();
    return { negated, operation: { kind: 'fts', op: word, language, value: value(c) } };
  }
  if (SIMPLE_OPERATORS.includes(word)) {
    delimiter();
    return { negated, operation: { kind: 'simple', op: word, value: value(c) } };
  }
  if (QUANTIFIABLE_OPERATORS.includes(word)) {
    const quantifier = c.accept('(any)') ? 'any' : c.accept('(all)') ? 'all' : undefined;
    delimiter();
    return { negated, operation: { kind: 'simple', op: word, quantifier, value: value(c) } };
  }
  c.pos = start;
  return c.fail(negated ? ['operator (eq, gt, ...)'] : ['"not"', 'operator (eq, gt, ...)']);
}

/** The value of a horizontal filter `col=<value>`: everything after `<op>.` is literal. */
export function parseFilter(column: string, text: string, version: number): Filter {
  const c = new Cursor(text, `filter (${text})`);
  return { column, ...opExpr(c, restOfInput, version) };
}

function logicTree(c: Cursor, version: number): LogicTree {
  const filter = c.attempt((): LogicTree => {
    c.skipSpaces();
    const column = fieldName(c);
    c.skipSpaces();
    if (!c.accept('.')) c.fail(['delimiter (.)']);
    return { kind: 'filter', filter: { column, ...opExpr(c, logicValue, version) } };
  });
  if (filter) return filter;
  c.skipSpaces();
  const negated = c.accept('not.');
  const op = c.accept('and') ? 'and' : c.accept('or') ? 'or' : c.fail([FIELD_NAME, 'negation operator (not)', 'logic operator (and, or)']);
  c.skipSpaces();
  c.expect('(');
  const children: LogicTree[] = [];
  do {
    c.skipSpaces();
    children.push(logicTree(c, version));
    c.skipSpaces();
  } while (c.accept(','));
  if (!c.accept(')')) c.fail(['","', '")"']);
  c.skipSpaces();
  return { kind: 'group', negated, op, children };
}

/** `or=(...)`, `and=(...)`, `not.or=(...)`: the key names the outer operator. */
export function parseLogicTree(key: 'and' | 'or' | 'not.and' | 'not.or', value: string, version: number): LogicTree {
  const text = key + value;
  return logicTree(new Cursor(text, `logic tree (${value})`), version);
}

function atItemEnd(c: Cursor): boolean {
  return c.atEnd() || c.peek() === ',' || c.peek() === ')';
}

function selectItem(c: Cursor): SelectItem {
  c.skipSpaces();
  if (c.peek() === '*') {
    c.pos++;
    if (!atItemEnd(c)) c.fail(['","', 'end of input']);
    return { kind: 'star' };
  }
  if (c.text.startsWith('...', c.pos)) {
    c.pos += 3;
    return { kind: 'embed', name: fieldName(c) };
  }
  const alias = c.attempt(() => {
    const name = fieldName(c);
    if (c.peek() !== ':' || c.peek(1) === ':') c.fail(['":"']);
    c.pos++;
    return name;
  });
  c.skipSpaces();
  const column = fieldName(c);
  if (c.peek() === '(' || c.peek() === '!') return { kind: 'embed', name: column };
  let cast: string | undefined;
  if (c.accept('::')) {
    cast = c.takeWhile(isIdentifierChar).trim();
    if (!cast) c.fail(['letter or digit']);
  }
  c.skipSpaces();
  if (!atItemEnd(c)) c.fail(cast ? ['","', 'end of input'] : ['"-"', '"->>"', '"->"', '"::"', '","', 'end of input']);
  return { kind: 'column', column, alias, cast };
}

/** `select=` (the empty string selects no column at all, as in PostgREST). */
export function parseSelect(text: string): SelectItem[] {
  const c = new Cursor(text, `select parameter (${text})`);
  const items: SelectItem[] = [];
  if (c.text.trim() === '') return items;
  do {
    const item = selectItem(c);
    items.push(item);
    if (item.kind === 'embed') return items; // answered as "no relationship" by the caller
    c.skipSpaces();
  } while (c.accept(','));
  if (!c.atEnd()) c.fail(['","', 'end of input']);
  return items;
}

export function parseOrder(text: string): OrderTerm[] {
  const c = new Cursor(text, `order (${text})`);
  const terms: OrderTerm[] = [];
  do {
    c.skipSpaces();
    const column = fieldName(c);
    c.skipSpaces();
    if (c.peek() === '(') {
      throw new PgrstError(
        400,
        'PGRST108',
        `'${column}' is not an embedded resource in this request`,
        null,
        `Verify that '${column}' is included in the 'select' query parameter.`,
      );
    }
    const term: OrderTerm = { column };
    if (c.accept('.asc')) term.direction = 'asc';
    else if (c.accept('.desc')) term.direction = 'desc';
    if (c.accept('.nullsfirst')) term.nulls = 'first';
    else if (c.accept('.nullslast')) term.nulls = 'last';
    c.skipSpaces();
    if (!c.atEnd() && c.peek() !== ',') {
      c.fail(term.nulls ? ['","', 'end of input'] : term.direction ? ['"nullsfirst"', '"nullslast"'] : ['"asc"', '"desc"', '"nullsfirst"', '"nullslast"']);
    }
    terms.push(term);
  } while (c.accept(','));
  return terms;
}

/** `columns=a,b` or `columns="a","b"` (postgrest-js quotes them). */
export function parseColumns(text: string): string[] {
  const c = new Cursor(text, `columns parameter (${text})`);
  const names: string[] = [];
  do {
    c.skipSpaces();
    names.push(fieldName(c));
    c.skipSpaces();
  } while (c.accept(','));
  if (!c.atEnd()) c.fail(['","', 'end of input']);
  return names;
}

export interface ParsedQuery {
  select: SelectItem[];
  columns?: string[];
  filters: Filter[];
  logic: LogicTree[];
  order: OrderTerm[];
  limit?: number;
  offset?: number;
}

const LOGIC_KEYS = new Set(['and', 'or', 'not.and', 'not.or']);

function notEmbedded(key: string): PgrstError {
  const resource = key.split('.')[0];
  return new PgrstError(
    400,
    'PGRST108',
    `'${resource}' is not an embedded resource in this request`,
    null,
    `Verify that '${resource}' is included in the 'select' query parameter.`,
  );
}

function integerParam(text: string): number | undefined {
  return /^-?\d+$/.test(text) ? Number(text) : undefined;
}

/** Splits the query string into PostgREST's parts; `ignored` names parameters that belong to the gateway. */
export function parseQuery(params: URLSearchParams, version: number, ignored: string[] = []): ParsedQuery {
  const query: ParsedQuery = { select: [{ kind: 'star' }], filters: [], logic: [], order: [] };
  for (const [key, value] of params) {
    if (ignored.includes(key)) continue;
    const lastSegment = key.split('.').pop() ?? key;
    if (key === 'select') query.select = parseSelect(value);
    else if (key === 'columns') query.columns = parseColumns(value);
    else if (key === 'on_conflict') continue;
    else if (LOGIC_KEYS.has(key)) query.logic.push(parseLogicTree(key as 'and' | 'or' | 'not.and' | 'not.or', value, version));
    else if (['order', 'limit', 'offset', 'and', 'or'].includes(lastSegment)) {
      if (key !== lastSegment) throw notEmbedded(key);
      if (key === 'order') query.order.push(...parseOrder(value));
      else query[key as 'limit' | 'offset'] = integerParam(value);
    } else {
      const path = new Cursor(key, `tree path (${key})`);
      const column = fieldName(path);
      if (path.peek() === '.') throw notEmbedded(key);
      if (!path.atEnd()) path.fail(['delimiter (.)', 'end of input']);
      query.filters.push(parseFilter(column, value, version));
    }
  }
  return query;
}
