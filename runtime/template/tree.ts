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

export function compileTree(value: unknown, check: VariableCheck, at: string[] = []): CompiledTree {
  if (typeof value === 'string') {
    if (!isTemplate(value)) return { kind: 'const', value };
    return { kind: 'template', template: compileAt(value, check, at) };
  }
  if (isEach(value)) return compileEach(value, check, at);
  if (Array.isArray(value)) {
    const items = value.map((v, i) => compileTree(v, check, [...at, String(i)]));
    return items.every((i) => i.kind === 'const') ? { kind: 'const', value } : { kind: 'array', items };
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, compileTree(v, check, [...at, k])] as [string, CompiledTree]);
    return entries.every(([, t]) => t.kind === 'const') ? { kind: 'const', value } : { kind: 'object', entries };
  }
  return { kind: 'const', value };
}

function compileAt(text: string, check: VariableCheck, at: string[]): CompiledTemplate {
  try {
    return compileTemplate(text, check);
  } catch (err) {
    if (err instanceof TemplateError) throw new TreeTemplateError(at, err);
    throw err;
  }
}

const isEach = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && EACH_KEYS.some((k) => Object.hasOwn(value, k));

function compileEach(value: Record<string, unknown>, check: VariableCheck, at: string[]): CompiledTree {
  const problem = (key: string | undefined, message: string) => new TreeTemplateError(key === undefined ? at : [...at, key], new TemplateError(message));
  const stray = Object.keys(value).find((k) => !(EACH_KEYS as readonly string[]).includes(k));
  if (stray !== undefined) throw problem(stray, `a list mapped item by item has only ${EACH_KEYS.join(', ')}, not "${stray}"`);
  const list = value.$each;
  if (typeof list !== 'string')
    throw problem(Object.hasOwn(value, '$each') ? '$each' : undefined, '$each is missing: a template giving the list, e.g. "{{response.items}}"');
  const each = compileAt(list, check, [...at, '$each']);
  if (!each.single) throw problem('$each', '$each must be exactly one expression giving a list, e.g. "{{response.body.results}}"');
  // Inside $filter and $map, `item` is the item; every other variable is read as outside.
  const inner: VariableCheck = (parts) => (parts[0] === 'item' ? null : check(parts));
  const filter = value.$filter;
  if (filter !== undefined && typeof filter !== 'string') throw problem('$filter', '$filter must be a template, e.g. "{{not item.archived}}"');
  return {
    kind: 'each',
    list: each,
    filter: filter === undefined ? undefined : compileAt(filter, inner, [...at, '$filter']),
    map: value.$map === undefined ? undefined : compileTree(value.$map, inner, [...at, '$map']),
  };
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
        const itemView = { ...view, item };
        if (tree.filter && !truthy(tree.filter.render(itemView))) continue;
        const v = tree.map ? renderTree(tree.map, itemView) : item;
        if (v !== undefined) out.push(v);
      }
      return out;
    }
  }
}
