// Structural ADF check, the subset of the ADF schema Jira enforces on description/comment bodies:
// a `doc` of version 1, known node and mark types, non-empty text, lists holding list items.

const BLOCKS = new Set([
  'paragraph',
  'heading',
  'bulletList',
  'orderedList',
  'codeBlock',
  'blockquote',
  'rule',
  'table',
  'panel',
  'mediaSingle',
  'mediaGroup',
  'expand',
  'taskList',
  'decisionList',
  'blockCard',
  'embedCard',
  'layoutSection',
  'extension',
  'bodiedExtension',
]);
const INLINES = new Set(['text', 'hardBreak', 'mention', 'emoji', 'date', 'status', 'inlineCard', 'placeholder', 'inlineExtension', 'mediaInline']);
const INNER = new Set(['listItem', 'tableRow', 'tableCell', 'tableHeader', 'media', 'taskItem', 'decisionItem', 'nestedExpand', 'layoutColumn']);
const MARKS = new Set([
  'strong',
  'em',
  'strike',
  'code',
  'underline',
  'link',
  'subsup',
  'textColor',
  'backgroundColor',
  'alignment',
  'indentation',
  'annotation',
  'border',
]);

/** Which children a container accepts (containers not listed accept any known node). */
const ALLOWED_CHILDREN: Record<string, Set<string>> = {
  paragraph: INLINES,
  heading: INLINES,
  codeBlock: new Set(['text']),
  bulletList: new Set(['listItem']),
  orderedList: new Set(['listItem']),
  table: new Set(['tableRow']),
  tableRow: new Set(['tableCell', 'tableHeader']),
  taskList: new Set(['taskItem', 'taskList']),
  taskItem: INLINES,
  decisionList: new Set(['decisionItem']),
  decisionItem: INLINES,
};

/** Returns a description of the first problem, or null when the value is a valid ADF document. */
export function adfProblem(value: unknown): string | null {
  if (!isObject(value) || value.type !== 'doc') return 'not a doc node';
  if (value.version !== 1) return 'doc.version must be 1';
  if (!Array.isArray(value.content)) return 'doc.content must be an array';
  for (const child of value.content) {
    const problem = nodeProblem(child, 'doc');
    if (problem) return problem;
  }
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nodeProblem(node: unknown, parent: string): string | null {
  if (!isObject(node) || typeof node.type !== 'string') return `a child of ${parent} is not a node`;
  const type = node.type;
  if (!BLOCKS.has(type) && !INLINES.has(type) && !INNER.has(type)) return `unknown node type '${type}'`;
  if (parent === 'doc' && !BLOCKS.has(type)) return `'${type}' cannot be a child of doc`;
  const allowed = ALLOWED_CHILDREN[parent];
  if (allowed && !allowed.has(type)) return `'${type}' cannot be a child of ${parent}`;
  if (type === 'text') {
    if (typeof node.text !== 'string' || node.text.length === 0) return 'text nodes must have non-empty text';
    return marksProblem(node.marks);
  }
  if (type === 'heading') {
    const level = isObject(node.attrs) ? node.attrs.level : undefined;
    if (typeof level !== 'number' || level < 1 || level > 6) return 'heading.attrs.level must be 1-6';
  }
  if ((type === 'bulletList' || type === 'orderedList') && (!Array.isArray(node.content) || node.content.length === 0)) {
    return `${type} needs at least one listItem`;
  }
  if (node.content === undefined) return null;
  if (!Array.isArray(node.content)) return `${type}.content must be an array`;
  for (const child of node.content) {
    const problem = nodeProblem(child, type);
    if (problem) return problem;
  }
  return null;
}

function marksProblem(marks: unknown): string | null {
  if (marks === undefined) return null;
  if (!Array.isArray(marks)) return 'marks must be an array';
  for (const mark of marks) {
    if (!isObject(mark) || typeof mark.type !== 'string' || !MARKS.has(mark.type)) return 'unknown mark';
    if (mark.type === 'link' && !(isObject(mark.attrs) && typeof mark.attrs.href === 'string')) return 'link mark needs attrs.href';
  }
  const types = marks.map((m) => (m as { type: string }).type);
  if (types.includes('code') && types.some((t) => !['code', 'link', 'annotation'].includes(t))) return 'code mark combines only with link';
  return null;
}

/** Plain text of an ADF value: text nodes joined, blocks separated by newlines (for JQL text search). */
export function adfText(value: unknown): string {
  if (!isObject(value)) return '';
  if (value.type === 'text') return typeof value.text === 'string' ? value.text : '';
  if (value.type === 'hardBreak') return '\n';
  const attrs = isObject(value.attrs) ? value.attrs : {};
  if (typeof attrs.text === 'string') return attrs.text;
  const parts = Array.isArray(value.content) ? value.content.map(adfText) : [];
  return INLINES.has(String(value.type)) || value.type === 'paragraph' || value.type === 'heading' ? parts.join('') : parts.join('\n');
}
