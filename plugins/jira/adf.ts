// Markdown <-> Atlassian Document Format (ADF), pure functions, no I/O.
// Jira Cloud v3 takes descriptions and comment bodies only as ADF; callers write plain text or markdown.
// Built on the `marked` lexer (not marklassian: that one turns single newlines into spaces, drops block HTML,
// emits empty text nodes for empty code blocks and interprets `<adf>` tags in the caller's text).
import { Lexer, type Token, type Tokens } from 'marked';
import { type MarkdownInput, checkConvertedSize, checkNesting } from '../markdown-limits.ts';

export interface AdfMark {
  type: string;
  attrs?: Record<string, unknown>;
}

export interface AdfNode {
  type: string;
  attrs?: Record<string, unknown>;
  content?: AdfNode[];
  marks?: AdfMark[];
  text?: string;
}

export interface AdfDoc {
  type: 'doc';
  version: 1;
  content: AdfNode[];
}

// ---------------------------------------------------------------------------------------------
// markdown -> ADF
// ---------------------------------------------------------------------------------------------

/** The most ADF one conversion may produce (its JSON); Jira gets no more. */
export const MAX_ADF_CHARS = 1024 * 1024;

/** markdownToAdf within the plugins' markdown limits (plugins/markdown-limits.ts), to be run off the event loop. */
export function boundedMarkdownToAdf(input: MarkdownInput): AdfDoc {
  checkNesting(input);
  const doc = markdownToAdf(input.text);
  checkConvertedSize(input, doc, MAX_ADF_CHARS, 'Atlassian Document Format');
  return doc;
}

/** Converts plain text or markdown into a valid ADF document. A single newline becomes a hardBreak. */
export function markdownToAdf(text: string): AdfDoc {
  const tokens = new Lexer({ gfm: true, breaks: true }).lex(text.replace(/\r\n?/g, '\n'));
  return { type: 'doc', version: 1, content: blocks(tokens) };
}

function paragraph(content: AdfNode[]): AdfNode {
  return { type: 'paragraph', content };
}

/** Block tokens to block nodes; anything ADF would not accept here degrades to a text paragraph. */
function blocks(tokens: Token[]): AdfNode[] {
  const out: AdfNode[] = [];
  for (const token of tokens) {
    const node = block(token);
    if (node) out.push(node);
  }
  return out;
}

function block(token: Token): AdfNode | undefined {
  switch (token.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'paragraph':
    case 'text': {
      const t = token as Tokens.Paragraph | Tokens.Text;
      return paragraph(t.tokens ? inlines(t.tokens, []) : textNodes(t.text, []));
    }
    case 'heading': {
      const t = token as Tokens.Heading;
      return { type: 'heading', attrs: { level: t.depth }, content: inlines(t.tokens, []) };
    }
    case 'code': {
      const t = token as Tokens.Code;
      const node: AdfNode = { type: 'codeBlock' };
      if (t.lang) node.attrs = { language: t.lang.split(/\s/)[0] };
      // Newlines stay inside the text of a code block (no hardBreaks there).
      node.content = t.text ? [{ type: 'text', text: t.text }] : [];
      return node;
    }
    case 'blockquote': {
      const inner = blocks((token as Tokens.Blockquote).tokens).map((n) => restrict(n, QUOTE_CHILDREN));
      return { type: 'blockquote', content: inner.length ? inner : [paragraph([])] };
    }
    case 'hr':
      return { type: 'rule' };
    case 'list':
      return list(token as Tokens.List);
    case 'table':
      return table(token as Tokens.Table);
    case 'html':
      return paragraph(textNodes((token as Tokens.HTML).text.replace(/\n+$/, ''), []));
    default:
      // Unknown block (extension tokens): keep its source text.
      return 'raw' in token && token.raw.trim() ? paragraph(textNodes(token.raw.trim(), [])) : undefined;
  }
}

const QUOTE_CHILDREN = new Set(['paragraph', 'bulletList', 'orderedList', 'codeBlock']);
const LIST_ITEM_CHILDREN = new Set(['paragraph', 'bulletList', 'orderedList', 'codeBlock']);

/** Keeps a node if its type is allowed in the parent, otherwise flattens it into a paragraph of its text. */
function restrict(node: AdfNode, allowed: Set<string>): AdfNode {
  if (allowed.has(node.type)) return node;
  return paragraph(textNodes(plainText(node), []));
}

function list(token: Tokens.List): AdfNode {
  const items = token.items.map((item): AdfNode => {
    const content = blocks(item.tokens.filter((t) => t.type !== 'checkbox')).map((n) => restrict(n, LIST_ITEM_CHILDREN));
    // A task item keeps its box as text so nothing is lost and the round trip is stable.
    if (item.task) {
      const box = item.checked ? '[x] ' : '[ ] ';
      if (content[0]?.type === 'paragraph') content[0].content = mergeTexts([...textNodes(box, []), ...(content[0].content ?? [])]);
      else content.unshift(paragraph(textNodes(box.trim(), [])));
    }
    // ADF requires a list item to start with a paragraph-like block.
    if (content.length === 0 || !['paragraph', 'codeBlock'].includes(content[0].type)) content.unshift(paragraph([]));
    return { type: 'listItem', content };
  });
  if (!token.ordered) return { type: 'bulletList', content: items };
  const start = typeof token.start === 'number' ? token.start : 1;
  return start === 1 ? { type: 'orderedList', content: items } : { type: 'orderedList', attrs: { order: start }, content: items };
}

function table(token: Tokens.Table): AdfNode {
  const row = (cells: Tokens.TableCell[], cellType: string): AdfNode => ({
    type: 'tableRow',
    content: cells.map((cell) => ({ type: cellType, content: [paragraph(inlines(cell.tokens, []))] })),
  });
  return { type: 'table', content: [row(token.header, 'tableHeader'), ...token.rows.map((r) => row(r, 'tableCell'))] };
}

/** Inline tokens to text/hardBreak nodes, carrying the marks of the enclosing tokens. */
function inlines(tokens: Token[], marks: AdfMark[]): AdfNode[] {
  const out: AdfNode[] = [];
  for (const token of tokens) out.push(...inline(token, marks));
  return mergeTexts(out);
}

function inline(token: Token, marks: AdfMark[]): AdfNode[] {
  switch (token.type) {
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inlines(t.tokens, marks) : textNodes(t.text, marks);
    }
    case 'escape':
      return textNodes((token as Tokens.Escape).text, marks);
    case 'strong':
      return inlines((token as Tokens.Strong).tokens, withMark(marks, { type: 'strong' }));
    case 'em':
      return inlines((token as Tokens.Em).tokens, withMark(marks, { type: 'em' }));
    case 'del':
      return inlines((token as Tokens.Del).tokens, withMark(marks, { type: 'strike' }));
    case 'codespan':
      return textNodes((token as Tokens.Codespan).text, withMark(marks, { type: 'code' }));
    case 'link': {
      const t = token as Tokens.Link;
      return inlines(t.tokens, withMark(marks, { type: 'link', attrs: { href: t.href } }));
    }
    case 'image': {
      // No media upload here: an image becomes a link to it.
      const t = token as Tokens.Image;
      return textNodes(t.text || t.href, withMark(marks, { type: 'link', attrs: { href: t.href } }));
    }
    case 'br':
      return [{ type: 'hardBreak' }];
    case 'html':
      return textNodes((token as Tokens.Tag).text, marks);
    default:
      return 'raw' in token ? textNodes(token.raw, marks) : [];
  }
}

/** ADF's `code` mark only combines with `link`; other marks are dropped inside code. */
function withMark(marks: AdfMark[], mark: AdfMark): AdfMark[] {
  if (mark.type === 'code') return [...marks.filter((m) => m.type === 'link'), mark];
  if (marks.some((m) => m.type === 'code') && mark.type !== 'link') return marks;
  return [...marks.filter((m) => m.type !== mark.type), mark];
}

/** Text with newlines becomes text nodes separated by hardBreaks; never an empty text node. */
function textNodes(text: string, marks: AdfMark[]): AdfNode[] {
  const out: AdfNode[] = [];
  text.split('\n').forEach((line, i) => {
    if (i > 0) out.push({ type: 'hardBreak' });
    if (line) out.push(marks.length ? { type: 'text', text: line, marks } : { type: 'text', text: line });
  });
  return out;
}

function sameMarks(a: AdfMark[] = [], b: AdfMark[] = []): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function mergeTexts(nodes: AdfNode[]): AdfNode[] {
  const out: AdfNode[] = [];
  for (const node of nodes) {
    const last = out[out.length - 1];
    if (node.type === 'text' && last?.type === 'text' && sameMarks(last.marks, node.marks)) {
      out[out.length - 1] = Object.assign({}, last, { text: `${last.text}${node.text}` });
    } else {
      out.push(node);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// ADF -> markdown
// ---------------------------------------------------------------------------------------------

/** Renders an ADF document (or any node) as readable markdown; unknown nodes fall back to their text. */
export function adfToMarkdown(doc: unknown): string {
  if (!isNode(doc)) return typeof doc === 'string' ? doc : '';
  const body = doc.type === 'doc' ? blocksMd(children(doc)) : blockMd(doc);
  return body.replace(/\n{3,}/g, '\n\n').trim();
}

/** Joins all text of a node (hardBreaks as newlines): the plain text Jira clients usually want. */
export function plainText(node: unknown): string {
  if (!isNode(node)) return '';
  if (node.type === 'text') return node.text ?? '';
  if (node.type === 'hardBreak') return '\n';
  const own = inlineAttrText(node);
  if (own !== undefined) return own;
  const parts = children(node).map(plainText);
  return isBlockContainer(node) ? parts.join('\n') : parts.join('');
}

function isNode(value: unknown): value is AdfNode {
  return typeof value === 'object' && value !== null && typeof (value as AdfNode).type === 'string';
}

function children(node: AdfNode): AdfNode[] {
  return Array.isArray(node.content) ? node.content.filter(isNode) : [];
}

const BLOCK_CONTAINERS = new Set([
  'doc',
  'blockquote',
  'bulletList',
  'orderedList',
  'listItem',
  'panel',
  'expand',
  'nestedExpand',
  'table',
  'tableRow',
  'tableCell',
  'tableHeader',
  'taskList',
  'decisionList',
  'layoutSection',
  'layoutColumn',
]);

function isBlockContainer(node: AdfNode): boolean {
  return BLOCK_CONTAINERS.has(node.type);
}

/** Text carried in attrs by inline nodes such as mentions, emoji, status lozenges and cards. */
function inlineAttrText(node: AdfNode): string | undefined {
  const a = node.attrs ?? {};
  const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  switch (node.type) {
    case 'mention': {
      const t = str(a.text);
      return t ? (t.startsWith('@') ? t : `@${t}`) : `@${str(a.id) ?? 'unknown'}`;
    }
    case 'emoji':
      return str(a.text) ?? str(a.shortName) ?? '';
    case 'status':
      return str(a.text) ?? '';
    case 'date': {
      const ms = Number(a.timestamp);
      return Number.isFinite(ms) ? new Date(ms).toISOString().slice(0, 10) : '';
    }
    case 'inlineCard':
    case 'blockCard':
    case 'embedCard':
      return str(a.url) ?? '';
    case 'media':
      return str(a.alt) ?? str(a.url) ?? '';
    default:
      return undefined;
  }
}

function blocksMd(nodes: AdfNode[]): string {
  return nodes
    .map(blockMd)
    .filter((s) => s !== '')
    .join('\n\n');
}

function blockMd(node: AdfNode): string {
  switch (node.type) {
    case 'paragraph':
      return inlineMd(children(node));
    case 'heading': {
      const level = Math.min(Math.max(Number(node.attrs?.level) || 1, 1), 6);
      return `${'#'.repeat(level)} ${inlineMd(children(node)).replace(/\n/g, ' ')}`;
    }
    case 'codeBlock': {
      const code = children(node).map(plainText).join('');
      const lang = typeof node.attrs?.language === 'string' ? node.attrs.language : '';
      const fence = code.includes('```') ? '````' : '```';
      return code ? `${fence}${lang}\n${code}\n${fence}` : `${fence}${lang}\n${fence}`;
    }
    case 'blockquote':
      return prefixLines(blocksMd(children(node)), '> ', '>');
    case 'rule':
      return '---';
    case 'bulletList':
    case 'orderedList':
    case 'taskList':
    case 'decisionList':
      return listMd(node);
    case 'table':
      return tableMd(node);
    case 'panel':
    case 'expand':
    case 'nestedExpand': {
      const title = typeof node.attrs?.title === 'string' && node.attrs.title ? `**${escapeMd(node.attrs.title)}**\n\n` : '';
      return title + blocksMd(children(node));
    }
    case 'mediaSingle':
    case 'mediaGroup':
      return children(node).map(plainText).filter(Boolean).join('\n');
    case 'text':
    case 'hardBreak':
    case 'mention':
    case 'emoji':
    case 'status':
    case 'date':
    case 'inlineCard':
      return inlineMd([node]);
    default: {
      // Unknown node: its inline children as text, or its block children as blocks.
      const kids = children(node);
      if (kids.length && kids.every((k) => !isBlockLike(k))) return inlineMd(kids);
      if (kids.length) return blocksMd(kids);
      return escapeMd(inlineAttrText(node) ?? (typeof node.text === 'string' ? node.text : ''));
    }
  }
}

function isBlockLike(node: AdfNode): boolean {
  return isBlockContainer(node) || ['paragraph', 'heading', 'codeBlock', 'rule', 'mediaSingle', 'mediaGroup', 'blockCard'].includes(node.type);
}

function listMd(node: AdfNode): string {
  const ordered = node.type === 'orderedList';
  let n = Number(node.attrs?.order) || 1;
  return children(node)
    .map((item) => {
      let marker = '- ';
      if (ordered) marker = `${n++}. `;
      if (item.type === 'taskItem') marker = item.attrs?.state === 'DONE' ? '- [x] ' : '- [ ] ';
      // Task and decision items hold inline content directly; list items hold blocks.
      const kids = children(item);
      const body = kids.length && kids.every((k) => !isBlockLike(k)) ? inlineMd(kids) : itemBlocksMd(kids);
      return marker + indent(body, ' '.repeat(marker.length));
    })
    .join('\n');
}

/** Blocks inside one list item: a nested list follows its paragraph directly to keep the list tight. */
function itemBlocksMd(nodes: AdfNode[]): string {
  let out = '';
  nodes.forEach((node, i) => {
    const md = blockMd(node);
    if (i > 0) out += node.type === 'bulletList' || node.type === 'orderedList' ? '\n' : '\n\n';
    out += md;
  });
  return out;
}

function tableMd(node: AdfNode): string {
  const rows = children(node).map((row) =>
    children(row).map((cell) =>
      children(cell)
        .map((b) => inlineMd(children(b)))
        .join(' ')
        .replace(/\|/g, '\\|')
        .replace(/\n/g, ' '),
    ),
  );
  if (rows.length === 0) return '';
  const width = Math.max(...rows.map((r) => r.length));
  const line = (cells: string[]) => `| ${Array.from({ length: width }, (_, i) => cells[i] ?? '').join(' | ')} |`;
  return [line(rows[0]), line(Array(width).fill('---')), ...rows.slice(1).map(line)].join('\n');
}

/** Indents every line but the first (continuation lines of a list item). */
function indent(text: string, pad: string): string {
  return text
    .split('\n')
    .map((l, i) => (i === 0 || l === '' ? l : pad + l))
    .join('\n');
}

function prefixLines(text: string, prefix: string, emptyPrefix: string): string {
  return text
    .split('\n')
    .map((l) => (l === '' ? emptyPrefix : prefix + l))
    .join('\n');
}

/** Marks that wrap runs of text, outermost first; `code` is applied per node (it admits only `link`). */
const MARK_ORDER = ['link', 'strong', 'em', 'strike'];

function openMark(mark: AdfMark): string {
  return mark.type === 'link' ? '[' : MARK_DELIMITERS[mark.type];
}

function closeMark(mark: AdfMark): string {
  if (mark.type !== 'link') return MARK_DELIMITERS[mark.type];
  return `](${String(mark.attrs?.href ?? '').replace(/[()\s]/g, (c) => encodeURIComponent(c))})`;
}

const MARK_DELIMITERS: Record<string, string> = { strong: '**', em: '*', strike: '~~' };

/**
 * Inline nodes to markdown. Marks shared by neighbouring text nodes stay open across them, and
 * delimiters never touch whitespace on their inner side (markdown would not see them as emphasis).
 */
function inlineMd(nodes: AdfNode[]): string {
  let out = '';
  const open: AdfMark[] = [];
  const closeDownTo = (depth: number) => {
    const trailing = out.match(/[ \t]*$/)![0];
    out = out.slice(0, out.length - trailing.length);
    while (open.length > depth) out += closeMark(open.pop()!);
    out += trailing;
  };
  for (const node of nodes) {
    const marks = node.type === 'text' ? (node.marks ?? []).filter((m) => MARK_ORDER.includes(m.type)) : [];
    marks.sort((a, b) => MARK_ORDER.indexOf(a.type) - MARK_ORDER.indexOf(b.type));
    let keep = 0;
    while (keep < open.length && keep < marks.length && sameMarks([open[keep]], [marks[keep]])) keep++;
    if (node.type === 'hardBreak') {
      closeDownTo(0);
      out += '\n';
      continue;
    }
    closeDownTo(keep);
    const raw = node.type === 'text' ? (node.text ?? '') : plainText(node);
    const code = node.type === 'text' && (node.marks ?? []).some((m) => m.type === 'code');
    if (!code && raw.trim() === '') {
      out += raw; // whitespace alone never opens a mark
      continue;
    }
    const lead = code ? '' : raw.match(/^\s*/)![0];
    out += lead;
    for (const mark of marks.slice(keep)) {
      out += openMark(mark);
      open.push(mark);
    }
    out += code ? codeSpan(raw) : escapeMd(raw.slice(lead.length), out === '' || out.endsWith('\n'));
  }
  closeDownTo(0);
  return out;
}

function codeSpan(text: string): string {
  const ticks = '`'.repeat(Math.max(0, ...(text.match(/`+/g) ?? []).map((t) => t.length)) + 1);
  return ticks.length > 1 || text.startsWith(' ') || text.endsWith(' ') ? `${ticks} ${text} ${ticks}` : `\`${text}\``;
}

/** Escapes characters that would otherwise turn literal text into markdown syntax. */
function escapeMd(text: string, atLineStart = true): string {
  return text
    .split('\n')
    .map((line, i) => {
      const inline = line
        .replace(/[\\`*~]|<(?=[A-Za-z/!?])|\](?=[([:])/g, '\\$&')
        .replace(/(^|[^A-Za-z0-9])_|_(?=[^A-Za-z0-9]|$)/g, (m) => m.replace('_', '\\_'));
      if (i === 0 && !atLineStart) return inline;
      // Block markers only matter at the start of a line.
      return inline.replace(/^(\s*)(#{1,6}\s|>|[-+]\s)/, '$1\\$2').replace(/^(\s*\d+)([.)]\s)/, '$1\\$2');
    })
    .join('\n');
}
