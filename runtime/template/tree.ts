// Template trees: JSON values whose leaf strings are templates (request bodies, queries, mappings).
import { type CompiledTemplate, type VariableCheck, type View, TemplateError, compileTemplate, isTemplate } from './template.ts';

export type CompiledTree =
  | { kind: 'const'; value: unknown }
  | { kind: 'template'; template: CompiledTemplate }
  | { kind: 'object'; entries: Array<[string, CompiledTree]> }
  | { kind: 'array'; items: CompiledTree[] };

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
    try {
      return { kind: 'template', template: compileTemplate(value, check) };
    } catch (err) {
      if (err instanceof TemplateError) throw new TreeTemplateError(at, err);
      throw err;
    }
  }
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
  }
}
