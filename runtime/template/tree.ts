// Template trees: JSON values whose leaf strings are templates (request bodies, queries, mappings), and
// lists mapped item by item ({$each, $filter, $map}).
import { type CompiledTemplate, type VariableCheck, type View, TemplateError, compileTemplate, isTemplate, truthy } from './template.ts';

export type CompiledTree =
  | { kind: 'const'; value: unknown }
  | { kind: 'template'; template: CompiledTemplate }
  | { kind: 'object'; entries: Array<[string, CompiledTree]> }
  | { kind: 'array'; items: CompiledTree[] }
  | { kind: 'each'; list: CompiledTemplate; filter?: CompiledTemplate; map?: CompiledTree };

/** The keys of a list mapped item by item; inside $filter and $map the variable `item` is the item. */
export const EACH_KEYS = ['$each', '$filter', '$map'] as const;

/** Where a template error sits: the JSON pointer of the leaf inside the tree. */
export class TreeTemplateError extends TemplateError {
  constructor(
    readonly pointer: string[],
    cause: TemplateError,
  ) {
    super(cause.message, cause.line, cause.column);
  }
}

/** Every problem of a tree, each where it sits (a tree is checked whole, not up to its first problem). */
export class TreeTemplateErrors extends Error {
  constructor(readonly problems: TreeTemplateError[]) {
    super(problems.map((p) => `/${p.pointer.join('/')} ${p.message}`).join('; '));
  }
}

/** Compiles a tree; throws TreeTemplateErrors listing every problem. */
export function compileTree(value: unknown, check: VariableCheck): CompiledTree {
  const problems: TreeTemplateError[] = [];
  const tree = compileNode(value, check, [], problems);
  if (problems.length) throw new TreeTemplateErrors(problems);
  return tree;
}

/** The tree, and its problems in `problems` (where one is, the tree holds a constant: it is never rendered). */
function compileNode(value: unknown, check: VariableCheck, at: string[], problems: TreeTemplateError[]): CompiledTree {
  if (typeof value === 'string') {
    if (!isTemplate(value)) return { kind: 'const', value };
    const template = compileAt(value, check, at, problems);
    return template ? { kind: 'template', template } : { kind: 'const', value };
  }
  if (isEach(value)) return compileEach(value, check, at, problems) ?? { kind: 'const', value };
  if (Array.isArray(value)) {
    const items = value.map((v, i) => compileNode(v, check, [...at, String(i)], problems));
    return items.every((i) => i.kind === 'const') ? { kind: 'const', value } : { kind: 'array', items };
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, compileNode(v, check, [...at, k], problems)] as [string, CompiledTree]);
    return entries.every(([, t]) => t.kind === 'const') ? { kind: 'const', value } : { kind: 'object', entries };
  }
  return { kind: 'const', value };
}

function compileAt(text: string, check: VariableCheck, at: string[], problems: TreeTemplateError[]): CompiledTemplate | undefined {
  try {
    return compileTemplate(text, check);
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    problems.push(new TreeTemplateError(at, err));
    return undefined;
  }
}

const isEach = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && EACH_KEYS.some((k) => Object.hasOwn(value, k));

function compileEach(value: Record<string, unknown>, check: VariableCheck, at: string[], problems: TreeTemplateError[]): CompiledTree | undefined {
  const before = problems.length;
  const problem = (key: string | undefined, message: string) =>
    problems.push(new TreeTemplateError(key === undefined ? at : [...at, key], new TemplateError(message)));
  for (const stray of Object.keys(value).filter((k) => !(EACH_KEYS as readonly string[]).includes(k))) {
    problem(stray, `a list mapped item by item has only ${EACH_KEYS.join(', ')}, not "${stray}"`);
  }
  const list = value.$each;
  let each: CompiledTemplate | undefined;
  if (typeof list !== 'string') {
    problem(Object.hasOwn(value, '$each') ? '$each' : undefined, '$each is missing: a template giving the list, e.g. "{{response.items}}"');
  } else {
    each = compileAt(list, check, [...at, '$each'], problems);
    if (each && !each.single) problem('$each', '$each must be exactly one expression giving a list, e.g. "{{response.body.results}}"');
  }
  // Inside $filter and $map, `item` is the item; every other variable is read as outside.
  const inner: VariableCheck = (parts) => (parts[0] === 'item' ? null : check(parts));
  const filterText = value.$filter;
  if (filterText !== undefined && typeof filterText !== 'string') problem('$filter', '$filter must be a template, e.g. "{{not item.archived}}"');
  const filter = typeof filterText === 'string' ? compileAt(filterText, inner, [...at, '$filter'], problems) : undefined;
  const map = value.$map === undefined ? undefined : compileNode(value.$map, inner, [...at, '$map'], problems);
  if (problems.length > before || !each) return undefined;
  return { kind: 'each', list: each, filter, map };
}

/**
 * Renders a tree. A single-expression leaf that yields undefined is dropped from its object or array,
 * so optional arguments that were not given simply do not appear in the request.
 */
export function renderTree(tree: CompiledTree, view: View): unknown {
  switch (tree.kind) {
    case 'const':
      // Constant objects are copied: plugins may change the rendered request.
      return tree.value !== null && typeof tree.value === 'object' ? structuredClone(tree.value) : tree.value;
    case 'template':
      return tree.template.render(view);
    case 'array': {
      const out: unknown[] = [];
      for (const item of tree.items) {
        const v = renderTree(item, view);
        if (v !== undefined) out.push(v);
      }
      return out;
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, t] of tree.entries) {
        const v = renderTree(t, view);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    case 'each': {
      // Not a list (absent, null, another shape): the key is dropped, as for any value that was not given.
      const list = tree.list.render(view);
      if (!Array.isArray(list)) return undefined;
      const out: unknown[] = [];
      for (const item of list) {
        const itemView = Object.assign({}, view, { item });
        if (tree.filter && !truthy(tree.filter.render(itemView))) continue;
        const v = tree.map ? renderTree(tree.map, itemView) : item;
        if (v !== undefined) out.push(v);
      }
      return out;
    }
  }
}
