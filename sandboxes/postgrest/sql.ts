// Syntax tree -> SQL text with $n placeholders. Every value is a parameter (sent untyped, so Postgres
// coerces it to the column type exactly like PostgREST's "unknown" literals); identifiers are quoted.
import type { Filter, LogicTree, OrderTerm, SelectItem } from './grammar.ts';
import { PgrstError } from './errors.ts';

export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `"table"."column"`: a qualified reference, so Postgres reports unknown columns as `column todos.x does not exist`. */
export function columnRef(table: string, column: string): string {
  return `${quoteIdent(table)}.${quoteIdent(column)}`;
}

const OPERATOR_SQL: Record<string, string> = {
  eq: '=',
  neq: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
  like: 'LIKE',
  ilike: 'ILIKE',
  match: '~',
  imatch: '~*',
  cs: '@>',
  cd: '<@',
  ov: '&&',
  sl: '<<',
  sr: '>>',
  nxr: '&<',
  nxl: '&>',
  adj: '-|-',
};
const FTS_FUNCTION: Record<string, string> = { fts: 'to_tsquery', plfts: 'plainto_tsquery', phfts: 'phraseto_tsquery', wfts: 'websearch_to_tsquery' };
const IS_SQL = { null: 'NULL', not_null: 'NOT NULL', true: 'TRUE', false: 'FALSE', unknown: 'UNKNOWN' } as const;

/** A Postgres array literal `{"a","b"}` (quotes and backslashes escaped). */
export function arrayLiteral(values: string[]): string {
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
}

function filterSql(table: string, filter: Filter, params: SqlParams): string {
  const column = columnRef(table, filter.column);
  const op = filter.operation;
  let condition: string;
  switch (op.kind) {
    case 'simple': {
      // PostgREST replaces every `*` of a like/ilike pattern by `%`.
      const value = op.op === 'like' || op.op === 'ilike' ? op.value.replace(/\*/g, '%') : op.value;
      const operand = op.quantifier ? `${op.quantifier.toUpperCase()}(${params.add(value)})` : params.add(value);
      condition = `${column} ${OPERATOR_SQL[op.op]} ${operand}`;
      break;
    }
    case 'in':
      // Like PostgREST, a single empty element means the empty list: `in.()` and `in.("")` match nothing.
      condition = op.values.length === 1 && op.values[0] === '' ? `${column} = ANY('{}')` : `${column} = ANY(${params.add(arrayLiteral(op.values))})`;
      break;
    case 'is':
      condition = `${column} IS ${IS_SQL[op.value]}`;
      break;
    case 'isdistinct':
      condition = `${column} IS DISTINCT FROM ${params.add(op.value)}`;
      break;
    case 'fts': {
      const language = op.language ? `${params.add(op.language)}::regconfig, ` : '';
      condition = `${column} @@ ${FTS_FUNCTION[op.op]}(${language}${params.add(op.value)})`;
      break;
    }
  }
  return filter.negated ? `NOT (${condition})` : condition;
}

function logicSql(table: string, tree: LogicTree, params: SqlParams): string {
  if (tree.kind === 'filter') return filterSql(table, tree.filter, params);
  const joined = tree.children.map((child) => logicSql(table, child, params)).join(tree.op === 'and' ? ' AND ' : ' OR ');
  return `${tree.negated ? 'NOT ' : ''}(${joined})`;
}

/** `WHERE ...` for the horizontal filters and logic trees (ANDed), or '' when there are none. */
export function whereClause(table: string, filters: Filter[], logic: LogicTree[], params: SqlParams): string {
  const conditions = [...filters.map((f) => filterSql(table, f, params)), ...logic.map((t) => logicSql(table, t, params))];
  return conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
}

/** Casts in select are type names; only letters, digits, `_` and spaces (e.g. `double precision`) pass. */
function castType(type: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_ ]*$/.test(type)) throw new PgrstError(400, 'PGRST100', `"failed to parse select parameter" (invalid cast ${type})`);
  return type;
}

/** The select list over a source named like the table. */
export function selectList(table: string, items: SelectItem[]): string {
  return items
    .map((item) => {
      if (item.kind === 'star') return `${quoteIdent(table)}.*`;
      if (item.kind === 'embed') throw new Error('embeds are rejected before SQL is built');
      const ref = columnRef(table, item.column);
      const expr = item.cast ? `CAST(${ref} AS ${castType(item.cast)})` : ref;
      return item.alias || item.cast ? `${expr} AS ${quoteIdent(item.alias ?? item.column)}` : expr;
    })
    .join(', ');
}

export function orderClause(table: string, terms: OrderTerm[]): string {
  if (terms.length === 0) return '';
  const sql = terms.map((t) => {
    const direction = t.direction ? ` ${t.direction.toUpperCase()}` : '';
    const nulls = t.nulls ? ` NULLS ${t.nulls.toUpperCase()}` : '';
    return `${columnRef(table, t.column)}${direction}${nulls}`;
  });
  return `ORDER BY ${sql.join(', ')}`;
}

/** The JSON body PostgREST builds in SQL: an array of the rows, or the single row for `vnd.pgrst.object`. */
export function jsonBody(single: boolean): string {
  return single ? `coalesce((json_agg(_pgrst_t) -> 0)::text, 'null')` : `coalesce(json_agg(_pgrst_t), '[]')::text`;
}
