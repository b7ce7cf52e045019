// JQL evaluation: field definitions (values, literal resolution, functions, sorting) and compilation of a
// parsed query into a predicate and a comparator. Unknown fields, values and functions fail like Jira does.
import { adfText } from './adf-check.ts';
import { JqlError, parseJql, type Clause, type Operand, type Operator, type OrderKey } from './jql-parse.ts';
import { PRIORITIES, RESOLUTIONS, STATUS_CATEGORIES, type Issue, type JiraStore } from './model.ts';

export interface JqlContext {
  store: JiraStore;
  /** null = anonymous: sees no project, currentUser() matches nobody. */
  callerId: string | null;
  now: number;
}

export interface CompiledJql {
  /** False when the query has no search clause (only ORDER BY, or empty). */
  bounded: boolean;
  matches(issue: Issue): boolean;
  compare(a: Issue, b: Issue): number;
}

type Value = string | number;
type SortValue = Array<string | number> | string | number | null;
type Resolved = Value[] | string; // values, or an error message

/** Stands for EMPTY inside a list of literals (`IN (a, EMPTY)`, `resolution = Unresolved`). */
const EMPTY = '\u0000EMPTY';

interface FieldDef {
  ops: Operator[];
  values(issue: Issue): Value[];
  resolve(text: string, name: string): Resolved;
  functions?: Record<string, (args: string[]) => Resolved>;
  compare?(a: Value, b: Value): number | null;
  /** Absent: the field cannot be used in ORDER BY. */
  sort?(issue: Issue): SortValue;
}

const EQUALITY: Operator[] = ['=', '!=', 'in', 'not in', 'is', 'is not'];
const ORDERED: Operator[] = [...EQUALITY, '>', '<', '>=', '<='];
const TEXT: Operator[] = ['~', '!~', 'is', 'is not'];

const MINUTE = 60_000;
const UNIT_MS: Record<string, number> = { m: MINUTE, h: 60 * MINUTE, d: 24 * 60 * MINUTE, w: 7 * 24 * 60 * MINUTE };

const ALL_FUNCTIONS = new Set([
  'currentuser',
  'now',
  'startofday',
  'endofday',
  'startofweek',
  'endofweek',
  'startofmonth',
  'endofmonth',
  'startofyear',
  'endofyear',
  'standardissuetypes',
  'subtaskissuetypes',
  'releasedversions',
  'unreleasedversions',
  'opensprints',
  'closedsprints',
  'futuresprints',
]);

const ci = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const numeric = (a: Value, b: Value) => (typeof a === 'number' && typeof b === 'number' ? a - b : null);
const unknownValue = (text: string, name: string) => `The value '${text}' does not exist for the field '${name}'.`;

/** Parses and compiles JQL for one caller; throws JqlError with all problems found. */
export function compileJql(src: string, ctx: JqlContext): CompiledJql {
  const query = parseJql(src);
  const defs = fieldDefs(ctx);
  const errors: string[] = [];
  const match = query.where ? compileClause(query.where, defs, errors) : () => true;
  const order = compileOrder(query.orderBy.length ? query.orderBy : [{ field: 'key', desc: true, pos: 0 }], defs, errors);
  if (errors.length) throw new JqlError([...new Set(errors)]);
  return { bounded: query.where !== null, matches: match, compare: order };
}

function lookup(defs: Map<string, FieldDef>, name: string): FieldDef | undefined {
  return defs.get(name.toLowerCase());
}

function compileClause(clause: Clause, defs: Map<string, FieldDef>, errors: string[]): (issue: Issue) => boolean {
  if (clause.kind === 'not') {
    const inner = compileClause(clause.clause, defs, errors);
    return (i) => !inner(i);
  }
  if (clause.kind !== 'term') {
    const parts = clause.parts.map((p) => compileClause(p, defs, errors));
    return clause.kind === 'and' ? (i) => parts.every((p) => p(i)) : (i) => parts.some((p) => p(i));
  }
  const def = lookup(defs, clause.field);
  if (!def) {
    errors.push(`Field '${clause.field}' does not exist or you do not have permission to view it.`);
    return () => false;
  }
  const { op } = clause;
  if (!def.ops.includes(op)) errors.push(`The operator '${op.toUpperCase()}' is not supported by the '${clause.field}' field.`);
  const literals = resolveOperand(clause.operand, def, clause.field, errors);
  return (issue) => test(def, op, def.values(issue), literals);
}

function resolveOperand(operand: Operand, def: FieldDef, field: string, errors: string[]): Value[] {
  if (operand.kind === 'empty') return [EMPTY];
  if (operand.kind === 'list') return operand.items.flatMap((item) => resolveOperand(item, def, field, errors));
  const result = operand.kind === 'value' ? def.resolve(operand.text, field) : callFunction(operand.name, operand.args, def, field);
  if (typeof result === 'string') {
    errors.push(result);
    return [];
  }
  return result;
}

function callFunction(name: string, args: string[], def: FieldDef, field: string): Resolved {
  const fn = def.functions?.[name.toLowerCase()];
  if (fn) return fn(args);
  if (!ALL_FUNCTIONS.has(name.toLowerCase())) return `Unable to find JQL function '${name}()'.`;
  return `A value provided by the function '${name}' is invalid for the field '${field}'.`;
}

function test(def: FieldDef, op: Operator, values: Value[], literals: Value[]): boolean {
  const equalsAny = () => (literals.includes(EMPTY) && values.length === 0) || values.some((v) => literals.includes(v));
  const compareAny = (ok: (c: number) => boolean) =>
    values.some((v) =>
      literals.some((l) => {
        const c = (def.compare ?? numeric)(v, l);
        return c !== null && ok(c);
      }),
    );
  switch (op) {
    case '=':
    case 'in':
      return equalsAny();
    case '!=':
    case 'not in':
      // Like Jira, a negative match never includes issues where the field is empty.
      return values.length > 0 && !equalsAny();
    case 'is':
      return values.length === 0;
    case 'is not':
      return values.length > 0;
    case '~':
      return values.some((v) => literals.some((l) => l !== EMPTY && textMatches(String(v), String(l))));
    case '!~':
      return !values.some((v) => literals.some((l) => l !== EMPTY && textMatches(String(v), String(l))));
    case '>':
      return compareAny((c) => c > 0);
    case '<':
      return compareAny((c) => c < 0);
    case '>=':
      return compareAny((c) => c >= 0);
    case '<=':
      return compareAny((c) => c <= 0);
  }
}

/**
 * Word search as Jira's `~` does it (without stemming): every word of the query must start a word of the
 * text, case-insensitively; a trailing `*` is a prefix wildcard; a query in inner quotes is a phrase.
 */
export function textMatches(text: string, query: string): boolean {
  const hay = text.toLowerCase().replace(/\s+/g, ' ');
  const phrase = /^"(.*)"$/s.exec(query.trim());
  if (phrase) return hay.includes(phrase[1].toLowerCase().replace(/\s+/g, ' ').trim());
  const words = hay.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const terms = query
    .toLowerCase()
    .split(/[^\p{L}\p{N}*?]+/u)
    .map((t) => t.replace(/[*?]+/g, ''))
    .filter(Boolean);
  return terms.length > 0 && terms.every((t) => words.some((w) => w.startsWith(t)));
}

function compileOrder(keys: OrderKey[], defs: Map<string, FieldDef>, errors: string[]): (a: Issue, b: Issue) => number {
  const sorters: Array<{ sort: (i: Issue) => SortValue; desc: boolean }> = [];
  for (const key of keys) {
    const def = lookup(defs, key.field);
    if (!def) errors.push(`Field '${key.field}' does not exist or you do not have permission to view it.`);
    else if (!def.sort) errors.push(`Not able to sort using field '${key.field}'.`);
    else sorters.push({ sort: def.sort, desc: key.desc });
  }
  return (a, b) => {
    for (const { sort, desc } of sorters) {
      const c = compareSortValues(sort(a), sort(b));
      if (c !== 0) return desc ? -c : c;
    }
    return Number(b.id) - Number(a.id);
  };
}

/** Empty values sort after everything (last in ASC, first in DESC). */
function compareSortValues(a: SortValue, b: SortValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  const xs = Array.isArray(a) ? a : [a];
  const ys = Array.isArray(b) ? b : [b];
  for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
    const x = xs[i];
    const y = ys[i];
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    if (c !== 0) return c;
  }
  return xs.length - ys.length;
}

// ---------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------

const INVALID_DATE = (text: string, name: string) =>
  `Date value '${text}' for field '${name}' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'.`;

/** Absolute dates (UTC) or periods relative to now: `-7d`, `-2w`, `-24h`, `-30m`, `4w 2d`. */
function parseDate(text: string, now: number): number | null {
  const t = text.trim();
  const abs = /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:\s+(\d{1,2}):(\d{2}))?$/.exec(t);
  if (abs) return Date.UTC(+abs[1], +abs[2] - 1, +abs[3], +(abs[4] ?? 0), +(abs[5] ?? 0));
  const rel = /^([+-]?)\s*((?:\d+\s*[wdhm]\s*)+)$/.exec(t);
  if (!rel) return null;
  let total = 0;
  for (const [, n, unit] of rel[2].matchAll(/(\d+)\s*([wdhm])/g)) total += Number(n) * UNIT_MS[unit];
  return rel[1] === '-' ? now - total : now + total;
}

type Period = 'day' | 'week' | 'month' | 'year';

/** Adds an offset such as `-1`, `+2w` or `-1M` (unit defaults to the function's period). */
function shift(ms: number, arg: string | undefined, period: Period): number | null {
  if (arg === undefined) return ms;
  const m = /^([+-]?)(\d+)([yMwdhm]?)$/.exec(arg.trim());
  if (!m) return null;
  const n = Number(m[2]) * (m[1] === '-' ? -1 : 1);
  const unit = m[3] || { day: 'd', week: 'w', month: 'M', year: 'y' }[period];
  const d = new Date(ms);
  if (unit === 'y') d.setUTCFullYear(d.getUTCFullYear() + n);
  else if (unit === 'M') d.setUTCMonth(d.getUTCMonth() + n);
  else return ms + n * UNIT_MS[unit];
  return d.getTime();
}

/** Start of the day/week (Sunday, as for an en_US user)/month/year containing ms, in UTC. */
function startOf(ms: number, period: Period): number {
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === 'day') return day;
  if (period === 'week') return day - d.getUTCDay() * UNIT_MS.d;
  if (period === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return Date.UTC(d.getUTCFullYear(), 0, 1);
}

function endOf(ms: number, period: Period): number {
  const start = startOf(ms, period);
  const next = period === 'day' ? start + UNIT_MS.d : period === 'week' ? start + UNIT_MS.w : shift(start, '1', period)!;
  return next - 1;
}

function dateFunctions(now: number): Record<string, (args: string[]) => Resolved> {
  const fns: Record<string, (args: string[]) => Resolved> = { now: () => [now] };
  for (const period of ['day', 'week', 'month', 'year'] as Period[]) {
    const title = period[0].toUpperCase() + period.slice(1);
    for (const [prefix, edge] of [
      ['start', startOf],
      ['end', endOf],
    ] as const) {
      const name = `${prefix}Of${title}`;
      fns[name.toLowerCase()] = (args) => {
        const base = shift(now, args[0], period);
        return base === null ? `The argument '${args[0]}' of function '${name}' is invalid.` : [edge(base, period)];
      };
    }
  }
  return fns;
}

function dateField(get: (i: Issue) => number | null, now: number): FieldDef {
  return {
    ops: ORDERED,
    values: (i) => {
      const v = get(i);
      return v === null ? [] : [v];
    },
    resolve: (text, name) => {
      const ms = parseDate(text, now);
      return ms === null ? INVALID_DATE(text, name) : [ms];
    },
    functions: dateFunctions(now),
    sort: get,
  };
}

// ---------------------------------------------------------------------------------------------
// Field definitions
// ---------------------------------------------------------------------------------------------

/** A field whose literals name a fixed set of things (by id or name). */
function enumField(values: (i: Issue) => Value[], find: (text: string) => Value[], extra: Partial<FieldDef> = {}): FieldDef {
  return {
    ops: EQUALITY,
    values,
    resolve: (text, name) => {
      const found = find(text);
      return found.length ? found : unknownValue(text, name);
    },
    ...extra,
  };
}

function textField(get: (i: Issue) => string, sortable = false): FieldDef {
  return {
    ops: TEXT,
    values: (i) => {
      const t = get(i);
      return t.trim() ? [t] : [];
    },
    resolve: (text, name) => (/^[*?]/.test(text.trim()) ? `The text query '${text}' for field '${name}' is not allowed to start with a wildcard.` : [text]),
    sort: sortable ? (i) => get(i).toLowerCase() : undefined,
  };
}

function fieldDefs(ctx: JqlContext): Map<string, FieldDef> {
  const { store, callerId, now } = ctx;
  const projects = store.visibleProjects(callerId);
  const issueByRef = (ref: string) => store.findIssue(callerId, ref);
  const keyOf = (i: Issue) => i.key.toUpperCase();
  const keySort = (i: Issue): SortValue => [store.project(i.projectId).key, Number(i.key.split('-').pop())];

  // Issue keys compare by number within one project ("key > DEMO-3").
  const issueRefField = (get: (i: Issue) => Issue | undefined, sortable: boolean): FieldDef => ({
    ops: ORDERED,
    values: (i) => {
      const target = get(i);
      return target ? [keyOf(target)] : [];
    },
    resolve: (text, name) => {
      if (!/^\d+$/.test(text) && !/^[A-Za-z][A-Za-z0-9_]*-\d+$/.test(text)) return `The issue key '${text}' for field '${name}' is invalid.`;
      const issue = issueByRef(text);
      return issue ? [keyOf(issue)] : `An issue with key '${text}' does not exist for field '${name}'.`;
    },
    compare: (a, b) => {
      const [pa, na] = String(a).split(/-(?=\d+$)/);
      const [pb, nb] = String(b).split(/-(?=\d+$)/);
      return pa === pb ? Number(na) - Number(nb) : null;
    },
    sort: sortable ? (i) => (get(i) ? keySort(get(i)!) : null) : undefined,
  });

  const userField = (get: (i: Issue) => string | null): FieldDef =>
    enumField(
      (i) => (get(i) ? [get(i)!] : []),
      (text) =>
        store.users.filter((u) => u.accountId === text || ci(u.displayName, text) || (u.emailVisible && u.email && ci(u.email, text))).map((u) => u.accountId),
      {
        functions: { currentuser: () => (callerId ? [callerId] : []) },
        sort: (i) => store.user(get(i))?.displayName.toLowerCase() ?? null,
      },
    );

  const components = projects.flatMap((p) => p.components);
  const versions = projects.flatMap((p) => p.versions);
  const versionsBy =
    (released: boolean) =>
    (args: string[]): Resolved => {
      const scope = args.length ? projects.filter((p) => args.some((a) => ci(a, p.key) || a === p.id)) : projects;
      return scope.flatMap((p) => p.versions.filter((v) => v.released === released).map((v) => v.id));
    };
  const categoryOrder: string[] = ['new', 'indeterminate', 'done'];

  const defs: Record<string, FieldDef> = {
    project: enumField(
      (i) => [i.projectId],
      (t) => projects.filter((p) => ci(p.key, t) || p.id === t || ci(p.name, t)).map((p) => p.id),
      { sort: (i) => store.project(i.projectId).key },
    ),
    issuetype: enumField(
      (i) => [i.issueTypeId],
      (t) => store.issueTypes.filter((x) => x.id === t || ci(x.name, t)).map((x) => x.id),
      {
        functions: {
          standardissuetypes: () => store.issueTypes.filter((x) => !x.subtask).map((x) => x.id),
          subtaskissuetypes: () => store.issueTypes.filter((x) => x.subtask).map((x) => x.id),
        },
        sort: (i) => store.issueType(i.issueTypeId).name.toLowerCase(),
      },
    ),
    status: enumField(
      (i) => [i.statusId],
      (t) => store.statuses.filter((s) => s.id === t || ci(s.name, t)).map((s) => s.id),
      { sort: (i) => store.statuses.findIndex((s) => s.id === i.statusId) },
    ),
    statuscategory: enumField(
      (i) => [store.status(i.statusId).category],
      (t) =>
        Object.values(STATUS_CATEGORIES)
          .filter((c) => ci(c.key, t) || ci(c.name, t) || String(c.id) === t)
          .map((c) => c.key),
      { sort: (i) => categoryOrder.indexOf(store.status(i.statusId).category) },
    ),
    // Priorities compare by importance: "priority > Medium" means High or Highest.
    priority: enumField(
      (i) => (i.priorityId ? [PRIORITIES.length - PRIORITIES.findIndex((p) => p.id === i.priorityId)] : []),
      (t) => PRIORITIES.flatMap((p, idx) => (p.id === t || ci(p.name, t) ? [PRIORITIES.length - idx] : [])),
      { ops: ORDERED, sort: (i) => (i.priorityId ? PRIORITIES.length - PRIORITIES.findIndex((p) => p.id === i.priorityId) : null) },
    ),
    resolution: enumField(
      (i) => (i.resolutionId ? [i.resolutionId] : []),
      (t) => (ci(t, 'Unresolved') ? [EMPTY] : RESOLUTIONS.filter((r) => r.id === t || ci(r.name, t)).map((r) => r.id)),
      { sort: (i) => RESOLUTIONS.find((r) => r.id === i.resolutionId)?.name ?? null },
    ),
    assignee: userField((i) => i.assigneeId),
    reporter: userField((i) => i.reporterId),
    creator: userField((i) => i.creatorId),
    labels: {
      ops: EQUALITY,
      values: (i) => i.labels.map((l) => l.toLowerCase()),
      resolve: (text) => [text.toLowerCase()],
      sort: (i) => (i.labels.length ? [...i.labels].sort()[0].toLowerCase() : null),
    },
    component: enumField(
      (i) => i.componentIds,
      (t) => components.filter((c) => c.id === t || ci(c.name, t)).map((c) => c.id),
    ),
    fixversion: enumField(
      (i) => i.fixVersionIds,
      (t) => versions.filter((v) => v.id === t || ci(v.name, t)).map((v) => v.id),
      { functions: { releasedversions: versionsBy(true), unreleasedversions: versionsBy(false) } },
    ),
    created: dateField((i) => i.created, now),
    updated: dateField((i) => i.updated, now),
    resolved: dateField((i) => i.resolutionDate, now),
    duedate: dateField((i) => (i.duedate ? Date.parse(`${i.duedate}T00:00:00Z`) : null), now),
    summary: textField((i) => i.summary, true),
    description: textField((i) => adfText(i.description)),
    environment: textField((i) => adfText(i.environment)),
    comment: textField((i) => i.comments.map((c) => adfText(c.body)).join('\n')),
    text: textField((i) => [i.summary, adfText(i.description), adfText(i.environment), ...i.comments.map((c) => adfText(c.body))].join('\n')),
    key: issueRefField((i) => i, true),
    parent: issueRefField((i) => (i.parentId ? store.issues.get(i.parentId) : undefined), false),
    // No boards in this sandbox: every issue's sprint is EMPTY and no sprint value exists.
    sprint: enumField(
      () => [],
      () => [],
      {
        functions: { opensprints: () => [], closedsprints: () => [], futuresprints: () => [] },
        sort: () => null,
      },
    ),
  };
  const aliases: Record<string, string> = {
    type: 'issuetype',
    issuekey: 'key',
    id: 'key',
    issue: 'key',
    createddate: 'created',
    updateddate: 'updated',
    due: 'duedate',
    resolutiondate: 'resolved',
    label: 'labels',
    components: 'component',
    fixversions: 'fixversion',
  };
  const map = new Map(Object.entries(defs));
  for (const [alias, target] of Object.entries(aliases)) map.set(alias, defs[target]);
  return map;
}
