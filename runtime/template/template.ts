// Templates of the tool-spec language.
//
// We use a private Handlebars instance for the grammar (its parser and AST, with source positions) and
// compile that AST into small closures at load time instead of using Handlebars' string runtime, because:
// - a leaf that is exactly one expression must keep its JSON type (Handlebars only produces strings);
// - expressions inside a path segment must be URL-encoded, not HTML-escaped;
// - lookups must be strict and own-property only (no prototype access), with one code path.
// Only plain expressions, sub-expressions, literals and the pure helpers below are allowed: block helpers,
// partials, `this`, `../` and `@data` are refused at load. Logic beyond that belongs in a plugin.
import Handlebars from 'handlebars';

type Node = hbs.AST.Node;
type Expr = hbs.AST.Expression;

// Only the parser is used: templates run as the closures compiled below, never through Handlebars' runtime.
const hb = Handlebars.create();

/** A helper of the allow-list: a pure function of its arguments, and what the language reference says of it. */
export interface Helper {
  fn: (...args: unknown[]) => unknown;
  /** How it is called, e.g. `default value fallback`. */
  usage: string;
  does: string;
  /** Rendered by the reference's test with these arguments as `args`: the reference cannot say what is not so. */
  example: { template: string; args?: Record<string, unknown>; gives: unknown };
}

/** The allow-list, in the order the reference lists it. */
export const HELPERS: Readonly<Record<string, Helper>> = {
  default: {
    fn: (value, fallback) => (value === undefined || value === null || value === '' ? fallback : value),
    usage: 'default value fallback',
    does: 'The value, or the fallback when it is absent, null or "".',
    example: { template: "{{default args.fields '*all'}}", args: {}, gives: '*all' },
  },
  join: {
    fn: (list, sep) => (Array.isArray(list) ? list.map(String).join(typeof sep === 'string' ? sep : ',') : list),
    usage: 'join list [separator]',
    does: 'The items of a list as one text, separated by the separator (default ","); anything else as it is.',
    example: { template: "{{join args.labels ','}}", args: { labels: ['bug', 'ui'] }, gives: 'bug,ui' },
  },
  split: {
    fn: (text, sep) =>
      typeof text === 'string'
        ? text
            .split(typeof sep === 'string' ? sep : ',')
            .map((s) => s.trim())
            .filter((s) => s !== '')
        : text,
    usage: 'split text [separator]',
    does: 'A text cut at the separator (default ","), each part trimmed, empty parts left out.',
    example: { template: "{{split args.tags ','}}", args: { tags: 'red, small,' }, gives: ['red', 'small'] },
  },
  lower: {
    fn: (text) => (typeof text === 'string' ? text.toLowerCase() : text),
    usage: 'lower text',
    does: 'The text in lower case.',
    example: { template: '{{lower args.state}}', args: { state: 'Open' }, gives: 'open' },
  },
  upper: {
    fn: (text) => (typeof text === 'string' ? text.toUpperCase() : text),
    usage: 'upper text',
    does: 'The text in upper case.',
    example: { template: '{{upper args.key}}', args: { key: 'proj-1' }, gives: 'PROJ-1' },
  },
  trim: {
    fn: (text) => (typeof text === 'string' ? text.trim() : text),
    usage: 'trim text',
    does: 'The text without spaces around it.',
    example: { template: '{{trim args.title}}', args: { title: '  Found a bug ' }, gives: 'Found a bug' },
  },
  json: {
    fn: (value) => JSON.stringify(value),
    usage: 'json value',
    does: 'The value as JSON text (for a provider that takes JSON inside a string).',
    example: { template: '{{json args.filter}}', args: { filter: { done: false } }, gives: '{"done":false}' },
  },
  eq: {
    fn: (a, b) => a === b,
    usage: 'eq a b',
    does: 'Whether a and b are the same value.',
    example: { template: "{{eq args.state 'all'}}", args: { state: 'all' }, gives: true },
  },
  ne: {
    fn: (a, b) => a !== b,
    usage: 'ne a b',
    does: 'Whether a and b differ.',
    example: { template: "{{ne args.state 'all'}}", args: { state: 'open' }, gives: true },
  },
  not: {
    fn: (a) => !truthy(a),
    usage: 'not value',
    does: 'Whether the value is false, 0, "", null, absent or an empty list.',
    example: { template: '{{not args.labels}}', args: { labels: [] }, gives: true },
  },
  and: {
    fn: (...args) => args.every(truthy),
    usage: 'and a b ...',
    does: 'Whether every value is true (in the sense of not).',
    example: { template: '{{and args.to args.note}}', args: { to: 'shelf' }, gives: false },
  },
  or: {
    fn: (...args) => args.some(truthy),
    usage: 'or a b ...',
    does: 'Whether any value is true (in the sense of not).',
    example: { template: '{{or args.to args.note}}', args: { to: 'shelf' }, gives: true },
  },
  exists: {
    fn: (value) => value !== undefined && value !== null,
    usage: 'exists value',
    does: 'Whether the value is there (not absent, not null); "" and 0 exist.',
    example: { template: '{{exists args.page}}', args: { page: 0 }, gives: true },
  },
  concat: {
    fn: (...args) =>
      args
        .filter((a) => a !== undefined && a !== null)
        .map(String)
        .join(''),
    usage: 'concat a b ...',
    does: 'The values as one text, absent ones left out.',
    example: { template: "{{concat 'project = ' args.key}}", args: { key: 'PROJ' }, gives: 'project = PROJ' },
  },
  length: {
    fn: (value) => (Array.isArray(value) || typeof value === 'string' ? value.length : 0),
    usage: 'length value',
    does: 'The number of items of a list or characters of a text; 0 for anything else.',
    example: { template: '{{length args.labels}}', args: { labels: ['bug', 'ui'] }, gives: 2 },
  },
  pick: {
    fn: (cond, a, b) => (truthy(cond) ? a : b),
    usage: 'pick condition a b',
    does: 'a when the condition is true (in the sense of not), else b.',
    example: { template: "{{pick args.archived 'true' 'false'}}", args: { archived: true }, gives: 'true' },
  },
  wrap: {
    fn: (value, key) => {
      if (value === undefined || value === null || typeof key !== 'string') return undefined;
      return Array.isArray(value) ? value.map((item) => ({ [key]: item })) : { [key]: value };
    },
    usage: 'wrap value key',
    does: 'The value in an object under key; a list gives one object per item; absent stays absent (the key is dropped).',
    example: { template: "{{wrap args.components 'name'}}", args: { components: ['api', 'ui'] }, gives: [{ name: 'api' }, { name: 'ui' }] },
  },
};

/** The allow-list as functions, by name. */
export const helpers: Readonly<Record<string, Helper['fn']>> = Object.fromEntries(Object.entries(HELPERS).map(([name, h]) => [name, h.fn]));
/** Truthiness of template conditions: empty strings, empty arrays, null, undefined, false and 0 are false. */
export function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return Boolean(value);
}

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype', '__defineGetter__', '__lookupGetter__']);

/** A variable a template reads, as its dotted parts (e.g. ["args", "issue_key"]). */
export type VariablePath = string[];

/** Decides whether a template may read a variable; returns a reason when it may not. */
export type VariableCheck = (path: VariablePath) => string | null;

/** A problem found while compiling, with its position inside the template text (1-based). */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly line = 1,
    readonly column = 1,
  ) {
    super(message);
  }
}

export type View = Record<string, unknown>;
type Eval = (view: View) => unknown;

/** A compiled leaf: render(view) gives its value; variables lists what it reads. */
export interface CompiledTemplate {
  readonly source: string;
  readonly variables: VariablePath[];
  /** True when the template is exactly one expression (keeps its JSON type). */
  readonly single: boolean;
  /**
   * Renders; `encode` is applied to every expression's output inside multi-part templates. A multi-part
   * template that needs a value the view lacks throws RenderError, or writes `missing` in its place when given.
   */
  render(view: View, encode?: (s: string) => string, missing?: string): unknown;
}

/** True when the string contains a template expression at all (plain strings skip compilation). */
export function isTemplate(text: string): boolean {
  return text.includes('{{');
}

/** Compiles one template string, checking every variable it reads with `check`. */
export function compileTemplate(source: string, check: VariableCheck): CompiledTemplate {
  let program: hbs.AST.Program;
  try {
    program = hb.parse(source);
  } catch (err) {
    const msg = (err as Error).message.split('\n')[0];
    const m = /line (\d+)/.exec((err as Error).message);
    throw new TemplateError(`template syntax error: ${msg}`, m ? Number(m[1]) : 1, 1);
  }
  const variables: VariablePath[] = [];
  const parts: Array<string | Eval> = [];
  for (const stmt of program.body) {
    if (stmt.type === 'ContentStatement') parts.push((stmt as hbs.AST.ContentStatement).value);
    else if (stmt.type === 'CommentStatement') continue;
    else if (stmt.type === 'MustacheStatement') {
      const m = stmt as hbs.AST.MustacheStatement;
      parts.push(compileCall(m.path, m.params, m.hash, stmt, check, variables));
    } else throw refuse(stmt, `${describe(stmt)} is not allowed in templates (write a plugin for logic)`);
  }
  const single = parts.length === 1 && typeof parts[0] !== 'string';
  return {
    source,
    variables,
    single,
    render(view, encode, missing) {
      if (single) return (parts[0] as Eval)(view);
      let out = '';
      for (const part of parts) {
        if (typeof part === 'string') {
          out += part;
          continue;
        }
        const value = part(view);
        if ((value === undefined || value === null) && missing !== undefined) {
          out += missing;
          continue;
        }
        if (value === undefined || value === null) {
          throw new RenderError(`template "${source}" needs a value that was not given`);
        }
        const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
        out += encode ? encode(text) : text;
      }
      return out;
    },
  };
}

/** A run-time rendering failure (a required value is missing); never carries values. */
export class RenderError extends Error {}

function compileCall(path: Expr, params: Expr[], hash: hbs.AST.Hash | undefined, at: Node, check: VariableCheck, variables: VariablePath[]): Eval {
  if (hash && hash.pairs.length > 0) throw refuse(at, 'hash arguments (key=value) are not allowed in templates');
  if (params.length === 0) return compileExpr(path, check, variables);
  if (path.type !== 'PathExpression') throw refuse(at, 'only a helper name can be called');
  const name = (path as hbs.AST.PathExpression).original;
  const fn = Object.hasOwn(helpers, name) ? helpers[name] : undefined;
  if (!fn) throw refuse(at, `unknown helper "${name}" (allowed: ${Object.keys(helpers).join(', ')})`);
  const args = params.map((p) => compileExpr(p, check, variables));
  return (view) => fn(...args.map((a) => a(view)));
}

function compileExpr(expr: Expr, check: VariableCheck, variables: VariablePath[]): Eval {
  switch (expr.type) {
    case 'StringLiteral':
    case 'NumberLiteral':
    case 'BooleanLiteral': {
      const value = (expr as hbs.AST.StringLiteral).value;
      return () => value;
    }
    case 'NullLiteral':
      return () => null;
    case 'UndefinedLiteral':
      return () => undefined;
    case 'SubExpression': {
      const sub = expr as hbs.AST.SubExpression;
      return compileCall(sub.path, sub.params, sub.hash, expr, check, variables);
    }
    case 'PathExpression': {
      const p = expr as hbs.AST.PathExpression;
      if (p.data) throw refuse(expr, `@data variables are not allowed ("${p.original}")`);
      if (p.depth > 0 || p.original.startsWith('this') || p.parts.length === 0) {
        throw refuse(expr, `"${p.original}" is not allowed: name a variable from its root (e.g. args.name)`);
      }
      if (Object.hasOwn(helpers, p.original) && p.parts.length === 1) {
        const fn = helpers[p.original];
        return () => fn();
      }
      const parts = p.parts;
      const bad = parts.find((s: string) => FORBIDDEN_SEGMENTS.has(s));
      if (bad) throw refuse(expr, `access to "${bad}" is not allowed`);
      const reason = check(parts);
      if (reason) throw refuse(expr, reason);
      variables.push(parts);
      return (view) => lookup(view, parts);
    }
    default:
      throw refuse(expr, `${describe(expr)} is not allowed in templates`);
  }
}

/** Own-property lookup along a path; undefined when any step is missing. */
export function lookup(root: unknown, parts: readonly string[]): unknown {
  let value: unknown = root;
  for (const part of parts) {
    if (value === null || value === undefined) return undefined;
    if (Array.isArray(value)) {
      if (part === 'length') value = value.length;
      else value = /^\d+$/.test(part) ? value[Number(part)] : undefined;
    } else if (typeof value === 'object') {
      value = Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
    } else return undefined;
  }
  return value;
}

function refuse(node: Node, message: string): TemplateError {
  const loc = (node as { loc?: hbs.AST.SourceLocation }).loc;
  return new TemplateError(message, loc?.start.line ?? 1, (loc?.start.column ?? 0) + 1);
}

function describe(node: Node): string {
  switch (node.type) {
    case 'BlockStatement':
      return 'a block helper ({{#...}})';
    case 'PartialStatement':
    case 'PartialBlockStatement':
      return 'a partial ({{> ...}})';
    case 'DecoratorBlock':
    case 'Decorator':
      return 'a decorator';
    default:
      return node.type;
  }
}
