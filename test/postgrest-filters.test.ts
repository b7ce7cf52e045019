// Unit tests of the filter translation library (pure functions): exact parameters, and refusals with paths.
import { describe, expect, it } from 'vitest';
import {
  checkIdentifier,
  filterParams,
  FilterError,
  insertParams,
  isEmptyFilter,
  orderParams,
  pagingParams,
  readParams,
  selectParams,
  toQueryString,
} from '../plugins/postgrest/filters.ts';

function errorOf(run: () => unknown): FilterError {
  try {
    run();
  } catch (err) {
    if (err instanceof FilterError) return err;
    throw err;
  }
  throw new Error('expected a FilterError');
}

describe('filterParams', () => {
  it('turns each operator into one literal <op>.<value> parameter', () => {
    expect(
      filterParams({
        a: { eq: 'x' },
        b: { neq: 3 },
        c: { gt: 1.5, gte: -2 },
        d: { lt: '2024-01-01', lte: true },
        e: { like: 'A%_' },
        f: { ilike: '%smith%' },
        g: { is: null },
        h: { is: true },
        i: { is: false },
      }),
    ).toEqual([
      ['a', 'eq.x'],
      ['b', 'neq.3'],
      ['c', 'gt.1.5'],
      ['c', 'gte.-2'],
      ['d', 'lt.2024-01-01'],
      ['d', 'lte.true'],
      ['e', 'like.A%_'],
      ['f', 'ilike.%smith%'],
      ['g', 'is.null'],
      ['h', 'is.true'],
      ['i', 'is.false'],
    ]);
  });

  it('leaves reserved characters alone after <op>. (PostgREST reads the rest literally)', () => {
    const tricky = 'Hebdon, John (Jr.) "x" \\ 日本 %';
    expect(filterParams({ name: { eq: tricky } })).toEqual([['name', `eq.${tricky}`]]);
    expect(filterParams({ name: { eq: '' } })).toEqual([['name', 'eq.']]);
    expect(filterParams({ name: { neq: 'null' } })).toEqual([['name', 'neq.null']]);
  });

  it('always quotes in-list elements, escaping backslashes and double quotes', () => {
    expect(filterParams({ name: { in: ['a,b', '(c)', 'say "hi"', 'back\\slash', ' pad', 'dot.x', 7, false] } })).toEqual([
      ['name', 'in.("a,b","(c)","say \\"hi\\"","back\\\\slash"," pad","dot.x","7","false")'],
    ]);
  });

  it('sends in: [""] as eq. because PostgREST reads a lone empty element as the empty list', () => {
    expect(filterParams({ name: { in: [''] } })).toEqual([['name', 'eq.']]);
    expect(filterParams({ name: { in: ['', 'a'] } })).toEqual([['name', 'in.("","a")']]);
    expect(filterParams({ name: { in: [] } })).toEqual([['name', 'in.()']]);
  });

  it('puts filters on reserved parameter names inside and=(...) with quoted values', () => {
    expect(filterParams({ order: { eq: 'a,b' }, limit: { gt: 3 }, name: { eq: 'x' }, or: { in: ['p'] }, select: { is: null } })).toEqual([
      ['name', 'eq.x'],
      ['and', '(order.eq."a,b",limit.gt."3",or.in.("p"),select.is.null)'],
    ]);
  });

  it('sends * in like/ilike patterns unchanged: PostgREST reads it as the % wildcard', () => {
    expect(filterParams({ name: { ilike: '*smith*' }, title: { like: 'A*_%' } })).toEqual([
      ['name', 'ilike.*smith*'],
      ['title', 'like.A*_%'],
    ]);
    expect(filterParams({ order: { ilike: '*a,b*' } })).toEqual([['and', '(order.ilike."*a,b*")']]);
  });

  it('reports the JSON path of a wrong operator or value type', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ age: { in: 5 } }, 'filters.age.in', /in needs an array/],
      [{ age: { in: [1, null] } }, 'filters.age.in[1]', /null cannot be listed/],
      [{ age: { in: [1, { a: 1 }] } }, 'filters.age.in[1]', /got an object/],
      [{ age: { is: 'null' } }, 'filters.age.is', /is needs null, true or false/],
      [{ age: { eq: { a: 1 } } }, 'filters.age.eq', /got an object/],
      [{ age: { eq: [1] } }, 'filters.age.eq', /got an array/],
      [{ age: { eq: null } }, 'filters.age.eq', /use \{"is": null\}/],
      [{ age: { gt: Number.NaN } }, 'filters.age.gt', /finite number/],
      [{ age: { like: 5 } }, 'filters.age.like', /needs a string pattern/],
      [{ age: { between: [1, 2] } }, 'filters.age.between', /unknown operator "between"/],
      [{ age: {} }, 'filters.age', /has no operator/],
      [{ age: 5 }, 'filters.age', /must be an object of \{operator: value\}/],
      [[1], 'filters', /must be an object of \{column/],
    ];
    for (const [filters, path, message] of cases) {
      const err = errorOf(() => filterParams(filters));
      expect(err.path, JSON.stringify(filters)).toBe(path);
      expect(err.message, JSON.stringify(filters)).toMatch(message);
    }
  });

  it('refuses column names that are not identifiers, naming them', () => {
    for (const bad of ['my col', 'a.b', 'x"y', '1abc', 'a-b', 'é', '', 'a'.repeat(64)]) {
      const err = errorOf(() => filterParams({ [bad]: { eq: 1 } }));
      expect(err.message).toContain(JSON.stringify(bad));
      expect(err.path).toBe(`filters[${JSON.stringify(bad)}]`);
    }
    expect(filterParams({ _Ok_9: { eq: 1 }, ['a'.repeat(63)]: { eq: 2 } })).toHaveLength(2);
  });

  it('returns nothing for absent filters', () => {
    expect(filterParams(undefined)).toEqual([]);
    expect(filterParams(null)).toEqual([]);
    expect(filterParams({})).toEqual([]);
  });
});

describe('isEmptyFilter', () => {
  it('is true only when no condition would be sent', () => {
    expect(isEmptyFilter(undefined)).toBe(true);
    expect(isEmptyFilter(null)).toBe(true);
    expect(isEmptyFilter({})).toBe(true);
    expect(isEmptyFilter({ id: {} })).toBe(true);
    expect(isEmptyFilter({ id: { eq: 1 } })).toBe(false);
    expect(isEmptyFilter({ id: {}, name: { is: null } })).toBe(false);
    expect(isEmptyFilter('x')).toBe(false);
  });
});

describe('order, select, paging', () => {
  it('builds order= in key order and refuses other directions', () => {
    expect(orderParams({ name: 'asc', age: 'DESC' })).toEqual([['order', 'name.asc,age.desc']]);
    expect(orderParams(undefined)).toEqual([]);
    expect(orderParams({})).toEqual([]);
    expect(errorOf(() => orderParams({ name: 'up' })).path).toBe('order_by.name');
    expect(errorOf(() => orderParams({ 'a b': 'asc' })).path).toBe('order_by["a b"]');
  });

  it('builds select= from a comma-separated list or *', () => {
    expect(selectParams(undefined)).toEqual([['select', '*']]);
    expect(selectParams(' * ')).toEqual([['select', '*']]);
    expect(selectParams('id, name ,email')).toEqual([['select', 'id,name,email']]);
    expect(errorOf(() => selectParams('id,,name')).message).toContain('""');
    expect(errorOf(() => selectParams('id,name:alias')).message).toContain('"name:alias"');
    expect(errorOf(() => selectParams(['id'])).path).toBe('columns');
  });

  it('defaults limit to 100 and bounds limit and offset', () => {
    expect(pagingParams(undefined, undefined)).toEqual([['limit', '100']]);
    expect(pagingParams(1000, 20)).toEqual([
      ['limit', '1000'],
      ['offset', '20'],
    ]);
    expect(pagingParams(1, 0)).toEqual([['limit', '1']]);
    expect(errorOf(() => pagingParams(0, 0)).path).toBe('limit');
    expect(errorOf(() => pagingParams(1001, 0)).path).toBe('limit');
    expect(errorOf(() => pagingParams(2.5, 0)).path).toBe('limit');
    expect(errorOf(() => pagingParams(10, -1)).path).toBe('offset');
  });

  it('puts a whole read together and encodes it once', () => {
    const params = readParams({ columns: 'id,name', filters: { name: { eq: 'a&b=c +%' } }, order_by: { id: 'desc' }, limit: 5, offset: 10 });
    expect(params).toEqual([
      ['select', 'id,name'],
      ['name', 'eq.a&b=c +%'],
      ['order', 'id.desc'],
      ['limit', '5'],
      ['offset', '10'],
    ]);
    const query = toQueryString(params);
    expect(query).toBe('select=id%2Cname&name=eq.a%26b%3Dc+%2B%25&order=id.desc&limit=5&offset=10');
    expect([...new URLSearchParams(query)]).toEqual(params);
  });
});

describe('identifiers and insert columns', () => {
  it('checkIdentifier names the table', () => {
    expect(checkIdentifier('todos', 'table', 'table')).toBe('todos');
    const err = errorOf(() => checkIdentifier('todos;drop', 'table', 'table'));
    expect(err.message).toBe('table: "todos;drop" is not a valid table name (letters, digits and _ only, not starting with a digit, at most 63 characters)');
    expect(errorOf(() => checkIdentifier(42, 'table', 'table')).message).toContain('number 42');
  });

  it('adds columns= only for a batch whose rows have different keys', () => {
    expect(insertParams({ a: 1 })).toEqual([]);
    expect(
      insertParams([
        { a: 1, b: 2 },
        { b: 3, a: 4 },
      ]),
    ).toEqual([]);
    expect(insertParams([{ a: 1 }, { b: 2 }, { a: 3, c: 4 }])).toEqual([['columns', 'a,b,c']]);
    expect(insertParams([])).toEqual([]);
    expect(errorOf(() => insertParams([{ a: 1 }, { 'b c': 2 }])).path).toBe('records[1]["b c"]');
    expect(errorOf(() => insertParams([{ a: 1 }, 'x'])).path).toBe('records[1]');
    expect(errorOf(() => insertParams('x')).path).toBe('records');
  });
});
