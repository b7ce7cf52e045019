// Markdown <-> Notion blocks, pure functions (no I/O).
// Built on the `marked` lexer (already a dependency, current, ESM, no transitive deps) rather than
// @tryfabric/martian, which pins remark 9 / unified 9 and @notionhq/client v1 types and only goes one way.
import { Lexer, type Token, type Tokens } from 'marked';
import { type MarkdownInput, checkConvertedSize, checkNesting, refused } from '../markdown-limits.ts';

/** Notion's limit on one rich-text object's `text.content`. */
export const MAX_TEXT_LENGTH = 2000;
/** Notion takes at most 100 items in one rich_text array (developers.notion.com/reference/request-limits). */
export const MAX_RICH_TEXT_ITEMS = 100;

/** Notion's code block languages (anything else is answered with a validation error). */
export const NOTION_CODE_LANGUAGES: readonly string[] = [
  'abap',
  'abc',
  'agda',
  'arduino',
  'ascii art',
  'assembly',
  'bash',
  'basic',
  'bnf',
  'c',
  'c#',
  'c++',
  'clojure',
  'coffeescript',
  'coq',
  'css',
  'dart',
  'dhall',
  'diff',
  'docker',
  'ebnf',
  'elixir',
  'elm',
  'erlang',
  'f#',
  'flow',
  'fortran',
  'gherkin',
  'glsl',
  'go',
  'graphql',
  'groovy',
  'haskell',
  'hcl',
  'html',
  'idris',
  'java',
  'javascript',
  'json',
  'julia',
  'kotlin',
  'latex',
  'less',
  'lisp',
  'livescript',
  'llvm ir',
  'lua',
  'makefile',
  'markdown',
  'markup',
  'matlab',
  'mathematica',
  'mermaid',
  'nix',
  'notion formula',
  'objective-c',
  'ocaml',
  'pascal',
  'perl',
  'php',
  'plain text',
  'powershell',
  'prolog',
  'protobuf',
  'purescript',
  'python',
  'r',
  'racket',
  'reason',
  'ruby',
  'rust',
  'sass',
  'scala',
  'scheme',
  'scss',
  'shell',
  'smalltalk',
  'solidity',
  'sql',
  'swift',
  'toml',
  'typescript',
  'vb.net',
  'verilog',
  'vhdl',
  'visual basic',
  'webassembly',
  'xml',
  'yaml',
  'java/c/c++/c#',
];

/** Common fence names that differ from Notion's language names. */
const LANGUAGE_ALIASES: Record<string, string> = {
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  node: 'javascript',
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  py: 'python',
  python3: 'python',
  rb: 'ruby',
  rs: 'rust',
  golang: 'go',
  kt: 'kotlin',
  cs: 'c#',
  csharp: 'c#',
  cpp: 'c++',
  cxx: 'c++',
  hpp: 'c++',
  h: 'c',
  fs: 'f#',
  fsharp: 'f#',
  objc: 'objective-c',
  objective_c: 'objective-c',
  sh: 'shell',
  zsh: 'shell',
  console: 'shell',
  ps1: 'powershell',
  pwsh: 'powershell',
  bat: 'shell',
  yml: 'yaml',
  md: 'markdown',
  tex: 'latex',
  dockerfile: 'docker',
  make: 'makefile',
  hs: 'haskell',
  pl: 'perl',
  proto: 'protobuf',
  wasm: 'webassembly',
  vb: 'visual basic',
  jsonc: 'json',
  json5: 'json',
  htm: 'html',
  svg: 'xml',
  text: 'plain text',
  txt: 'plain text',
  plaintext: 'plain text',
  tf: 'hcl',
  terraform: 'hcl',
  gql: 'graphql',
  ml: 'ocaml',
};

/** Fence names written back for Notion languages whose name is not a usual fence name. */
const FENCE_NAMES: Record<string, string> = { 'plain text': '', 'c++': 'cpp', 'c#': 'csharp', 'f#': 'fsharp', 'objective-c': 'objc', 'visual basic': 'vb' };

export interface Annotations {
  bold: boolean;
  italic: boolean;
  strikethrough: boolean;
  underline: boolean;
  code: boolean;
  color: string;
}

/** A rich-text object as sent to Notion (responses add `plain_text` and `href`). */
export interface RichText {
  type: 'text';
  text: { content: string; link: { url: string } | null };
  annotations: Annotations;
  plain_text?: string;
  href?: string | null;
}

export type NotionBlockType =
  | 'paragraph'
  | 'heading_1'
  | 'heading_2'
  | 'heading_3'
  | 'bulleted_list_item'
  | 'numbered_list_item'
  | 'to_do'
  | 'toggle'
  | 'quote'
  | 'callout'
  | 'code'
  | 'divider';

/** The body under a block's type key. Children of a request block go here, as Notion expects. */
export interface BlockBody {
  rich_text?: RichText[];
  color?: string;
  checked?: boolean;
  language?: string;
  caption?: RichText[];
  children?: NotionBlock[];
  [key: string]: unknown;
}

/** A block in the shape of Notion's append-children / create-page request. */
export interface NotionBlock {
  object: 'block';
  type: NotionBlockType;
  [type: string]: unknown;
}

/** A block as read back from the API (any type), with its children fetched into `children`. */
export interface NotionBlockWithChildren {
  type: string;
  id?: string;
  children?: NotionBlockWithChildren[];
  [type: string]: unknown;
}

const PLAIN: Annotations = { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default' };

// ------------------------------------------------------------------ markdown -> blocks

export function notionLanguage(fence: string | undefined): string {
  const name = (fence ?? '').trim().split(/\s+/)[0].toLowerCase();
  if (!name) return 'plain text';
  const mapped = LANGUAGE_ALIASES[name] ?? name;
  return NOTION_CODE_LANGUAGES.includes(mapped) ? mapped : 'plain text';
}

/** Cuts long text into pieces Notion accepts, without splitting a surrogate pair. */
function chunks(content: string): string[] {
  const pieces: string[] = [];
  let rest = content;
  while (rest.length > MAX_TEXT_LENGTH) {
    let cut = MAX_TEXT_LENGTH;
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

function textRun(content: string, annotations: Annotations, url: string | null): RichText {
  return { type: 'text', text: { content, link: url ? { url } : null }, annotations: { ...annotations } };
}

const sameStyle = (a: RichText, b: RichText) =>
  a.text.link?.url === b.text.link?.url && (Object.keys(PLAIN) as Array<keyof Annotations>).every((k) => a.annotations[k] === b.annotations[k]);

/** Merges neighbouring runs of the same style, then splits any run over the 2,000-character limit. */
function normalizeRuns(runs: RichText[]): RichText[] {
  const merged: RichText[] = [];
  for (const run of runs) {
    if (!run.text.content) continue;
    const last = merged[merged.length - 1];
    if (last && sameStyle(last, run)) last.text.content += run.text.content;
    else merged.push(run);
  }
  return merged.flatMap((run) => chunks(run.text.content).map((piece) => textRun(piece, run.annotations, run.text.link?.url ?? null)));
}

/**
 * The URL of a link as Notion takes it, or null: Notion accepts only absolute http(s) URLs in a text link
 * and refuses the whole request otherwise ("Invalid URL for link."), so a relative link, an #anchor,
 * mailto:, javascript: or data: keeps its words as plain text.
 */
function linkUrl(href: string): string | null {
  try {
    const url = new URL(href);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname ? href : null;
  } catch {
    return null;
  }
}

/** Inline tokens -> rich-text runs, carrying the annotations and link of enclosing tokens. */
function inlineRuns(tokens: Token[] | undefined, style: Annotations, url: string | null): RichText[] {
  const runs: RichText[] = [];
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'strong':
        runs.push(...inlineRuns(token.tokens, Object.assign({}, style, { bold: true }), url));
        break;
      case 'em':
        runs.push(...inlineRuns(token.tokens, Object.assign({}, style, { italic: true }), url));
        break;
      case 'del':
        runs.push(...inlineRuns(token.tokens, Object.assign({}, style, { strikethrough: true }), url));
        break;
      case 'codespan':
        runs.push(textRun(token.text, Object.assign({}, style, { code: true }), url));
        break;
      case 'link':
        runs.push(...inlineRuns(token.tokens, style, linkUrl(token.href)));
        break;
      case 'image':
        runs.push(textRun(token.text || token.href, style, linkUrl(token.href)));
        break;
      case 'br':
        runs.push(textRun('\n', style, url));
        break;
      case 'checkbox':
        break;
      default: {
        const nested = (token as Tokens.Text).tokens;
        if (nested?.length) runs.push(...inlineRuns(nested, style, url));
        else if ('text' in token && typeof token.text === 'string') runs.push(textRun(token.text, style, url));
      }
    }
  }
  return runs;
}

const richText = (tokens: Token[] | undefined) => normalizeRuns(inlineRuns(tokens, PLAIN, null));

function block(type: NotionBlockType, body: BlockBody): NotionBlock {
  if (body.children && body.children.length === 0) delete body.children;
  return { object: 'block', type, [type]: body };
}

function listItemBlock(item: Tokens.ListItem, ordered: boolean): NotionBlock {
  // The item's first paragraph is its text; whatever follows becomes nested children.
  const [first, ...rest] = item.tokens.filter((t) => t.type !== 'checkbox' && t.type !== 'space');
  const leading = first && (first.type === 'text' || first.type === 'paragraph');
  const rich_text = leading ? richText((first as Tokens.Text).tokens ?? [first]) : [];
  const children = blocksFrom(leading ? rest : [first, ...rest].filter(Boolean));
  if (item.task) return block('to_do', { rich_text, checked: item.checked === true, color: 'default', children });
  return block(ordered ? 'numbered_list_item' : 'bulleted_list_item', { rich_text, color: 'default', children });
}

function blocksFrom(tokens: Token[]): NotionBlock[] {
  const blocks: NotionBlock[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case 'heading': {
        const level = Math.min(token.depth, 3) as 1 | 2 | 3;
        blocks.push(block(`heading_${level}`, { rich_text: richText(token.tokens), color: 'default', is_toggleable: false }));
        break;
      }
      case 'paragraph':
      case 'text':
        blocks.push(block('paragraph', { rich_text: richText(token.tokens ?? [token]), color: 'default' }));
        break;
      case 'list':
        for (const item of token.items as Tokens.ListItem[]) blocks.push(listItemBlock(item, token.ordered));
        break;
      case 'blockquote': {
        const [first, ...rest] = token.tokens ?? [];
        const leading = first?.type === 'paragraph';
        blocks.push(
          block('quote', { rich_text: leading ? richText(first.tokens) : [], color: 'default', children: blocksFrom(leading ? rest : (token.tokens ?? [])) }),
        );
        break;
      }
      case 'code':
        blocks.push(block('code', { rich_text: normalizeRuns([textRun(token.text, PLAIN, null)]), language: notionLanguage(token.lang), caption: [] }));
        break;
      case 'hr':
        blocks.push(block('divider', {}));
        break;
      case 'space':
      case 'def':
        break;
      default:
        // Tables and raw HTML have no direct block here: keep their source text visible.
        if (token.raw.trim()) blocks.push(block('paragraph', { rich_text: normalizeRuns([textRun(token.raw.trim(), PLAIN, null)]), color: 'default' }));
    }
  }
  return blocks.flatMap(withinRichTextLimit);
}

/** Block types whose text reads on naturally in a following block of the same type. */
const CONTINUES_AS_ITSELF = new Set(['paragraph', 'quote', 'code']);

/**
 * A block with more rich-text items than Notion takes (long text is already cut into 2,000-character
 * items) keeps the first 100; the rest follows in blocks of its own type (paragraph, quote, code) or in
 * paragraphs (after a heading or list item), right after it. Nothing is dropped.
 */
function withinRichTextLimit(b: NotionBlock): NotionBlock[] {
  const body = b[b.type] as BlockBody;
  const items = body.rich_text;
  if (!items || items.length <= MAX_RICH_TEXT_ITEMS) return [b];
  const continued = CONTINUES_AS_ITSELF.has(b.type);
  const out: NotionBlock[] = [block(b.type, Object.assign({}, body, { rich_text: items.slice(0, MAX_RICH_TEXT_ITEMS) }))];
  for (let i = MAX_RICH_TEXT_ITEMS; i < items.length; i += MAX_RICH_TEXT_ITEMS) {
    const rich_text = items.slice(i, i + MAX_RICH_TEXT_ITEMS);
    out.push(continued ? block(b.type, Object.assign({}, body, { rich_text, children: [] })) : block('paragraph', { rich_text, color: 'default' }));
  }
  return out;
}

/** Converts markdown into Notion blocks; nested list items and quote paragraphs go under `children`. */
export function markdownToBlocks(markdown: string): NotionBlock[] {
  return blocksFrom(Lexer.lex(markdown.replace(/\r\n?/g, '\n'), { gfm: true }));
}

/** The most blocks a page's content may make (nested ones included): ten of Notion's 100-block requests. */
export const MAX_CONTENT_BLOCKS = 1000;
/** The most JSON those blocks may take: about five of Notion's 500 KB requests. */
export const MAX_CONTENT_CHARS = 2 * 1024 * 1024;

/** markdownToBlocks within the plugins' markdown limits (plugins/markdown-limits.ts), to be run off the event loop. */
export function boundedMarkdownToBlocks(input: MarkdownInput): NotionBlock[] {
  checkNesting(input);
  const blocks = markdownToBlocks(input.text);
  const count = (list: readonly NotionBlock[]): number => list.reduce((n, b) => n + 1 + count((b[b.type] as BlockBody).children ?? []), 0);
  const total = count(blocks);
  if (total > MAX_CONTENT_BLOCKS) {
    throw refused(
      input.argument,
      `makes ${total.toLocaleString('en-US')} Notion blocks, more than the ${MAX_CONTENT_BLOCKS.toLocaleString('en-US')} a page is written with at most: shorten it`,
    );
  }
  checkConvertedSize(input, blocks, MAX_CONTENT_CHARS, 'Notion blocks');
  return blocks;
}

// ------------------------------------------------------------------ blocks -> markdown

interface InlineItem {
  plain_text?: string;
  text?: { content: string; link?: { url: string } | null };
  href?: string | null;
  annotations?: Partial<Annotations>;
  type?: string;
  equation?: { expression: string };
}

/** Escapes characters markdown would read as markup; intraword underscores are left alone. */
function escapeText(text: string): string {
  return text.replace(/[\\*`[\]~<>]|(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])/gu, (c) => `\\${c}`);
}

function codeSpan(content: string): string {
  const fence = content.includes('`') ? '``' : '`';
  const pad = content.startsWith('`') || content.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${content}${pad}${fence}`;
}

type Marker = { key: string; open: string; close: string };

/** Rich text -> inline markdown; a stack of open markers keeps nested styles well-formed. */
export function richTextToMarkdown(items: readonly InlineItem[]): string {
  let out = '';
  const open: Marker[] = [];
  const closeFrom = (index: number) => {
    // Closing delimiters must follow non-space text, so trailing spaces move outside.
    const trailing = /\s*$/.exec(out)![0];
    out = out.slice(0, out.length - trailing.length);
    while (open.length > index) out += open.pop()!.close;
    out += trailing;
  };
  for (const item of items) {
    const a = Object.assign({}, PLAIN, item.annotations);
    const url = item.href ?? item.text?.link?.url ?? null;
    const content = item.type === 'equation' && item.equation ? `$${item.equation.expression}$` : (item.plain_text ?? item.text?.content ?? '');
    if (!content) continue;
    const wanted: Marker[] = [];
    if (url) wanted.push({ key: `link:${url}`, open: '[', close: `](${url})` });
    if (a.strikethrough) wanted.push({ key: 'strike', open: '~~', close: '~~' });
    if (a.bold) wanted.push({ key: 'bold', open: '**', close: '**' });
    if (a.italic) wanted.push({ key: 'italic', open: '*', close: '*' });
    let keep = 0;
    while (keep < open.length && keep < wanted.length && open[keep].key === wanted[keep].key) keep++;
    if (open.length > keep) closeFrom(keep);
    const [, lead, body, tail] = /^(\s*)([\s\S]*?)(\s*)$/.exec(content)!;
    if (!body) {
      out += content;
      continue;
    }
    out += lead;
    for (const marker of wanted.slice(keep)) {
      out += marker.open;
      open.push(marker);
    }
    out += a.code ? codeSpan(body) : escapeText(body);
    out += tail;
  }
  closeFrom(0);
  return out;
}

const bodyOf = (b: NotionBlockWithChildren) =>
  (b[b.type] ?? {}) as BlockBody & {
    title?: string;
    url?: string;
    expression?: string;
    icon?: { emoji?: string } | null;
    external?: { url: string };
    file?: { url: string };
  };
const childrenOf = (b: NotionBlockWithChildren) => b.children ?? (bodyOf(b).children as NotionBlockWithChildren[] | undefined) ?? [];
const indent = (text: string, prefix: string) =>
  text
    .split('\n')
    .map((line) => (line ? prefix + line : line))
    .join('\n');
const LIST_TYPES = ['bulleted_list_item', 'numbered_list_item', 'to_do'];

function fenceFor(code: string): string {
  const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  return '`'.repeat(longest + 1);
}

/** One block (and its children) as markdown; `number` is its position in a numbered list. */
function blockToMarkdown(b: NotionBlockWithChildren, number: number): string {
  const body = bodyOf(b);
  const text = richTextToMarkdown(body.rich_text ?? []);
  const kids = childrenOf(b);
  // Nested lists follow their item directly; other children need a blank line to stay out of the item's text.
  const nested = (prefixWidth: number) =>
    kids.length ? `${LIST_TYPES.includes(kids[0].type) ? '\n' : '\n\n'}${indent(blocksToMarkdown(kids), ' '.repeat(prefixWidth))}` : '';
  switch (b.type) {
    case 'heading_1':
    case 'heading_2':
    case 'heading_3':
      return `${'#'.repeat(Number(b.type.slice(-1)))} ${text}${kids.length ? `\n\n${blocksToMarkdown(kids)}` : ''}`;
    case 'bulleted_list_item':
      return `- ${text}${nested(2)}`;
    case 'numbered_list_item':
      return `${number}. ${text}${nested(`${number}. `.length)}`;
    case 'to_do':
      return `- [${body.checked ? 'x' : ' '}] ${text}${nested(2)}`;
    case 'quote':
    case 'callout': {
      const icon = b.type === 'callout' && body.icon?.emoji ? `${body.icon.emoji} ` : '';
      const inner = [icon + text, kids.length ? blocksToMarkdown(kids) : ''].filter(Boolean).join('\n\n');
      return inner
        .split('\n')
        .map((line) => (line ? `> ${line}` : '>'))
        .join('\n');
    }
    case 'toggle':
      return `<details>\n<summary>${text}</summary>\n\n${blocksToMarkdown(kids)}\n\n</details>`;
    case 'code': {
      const source = (body.rich_text ?? []).map((t) => t.plain_text ?? t.text.content).join('');
      const fence = fenceFor(source);
      const language = body.language ?? 'plain text';
      return `${fence}${FENCE_NAMES[language] ?? language}\n${source}\n${fence}`;
    }
    case 'divider':
      return '---';
    case 'equation':
      return `$$\n${body.expression ?? ''}\n$$`;
    case 'child_page':
    case 'child_database':
      return `[${escapeText(body.title || 'Untitled')}](https://www.notion.so/${(b.id ?? '').replace(/-/g, '')})`;
    case 'bookmark':
    case 'embed':
    case 'link_preview':
      return `[${escapeText(body.url ?? '')}](${body.url ?? ''})`;
    case 'image': {
      const caption = richTextToMarkdown(body.caption ?? []);
      return `![${caption}](${body.external?.url ?? body.file?.url ?? ''})`;
    }
    default:
      // Paragraph and any other block carrying rich text. Indenting children would turn them into a
      // code block, so they follow unindented.
      return `${text}${kids.length ? `\n\n${blocksToMarkdown(kids)}` : ''}`;
  }
}

/** Converts blocks (children nested under `children`) to markdown; the inverse of markdownToBlocks. */
export function blocksToMarkdown(blocks: readonly NotionBlockWithChildren[]): string {
  const parts: string[] = [];
  let number = 0;
  blocks.forEach((b, i) => {
    number = b.type === 'numbered_list_item' ? number + 1 : 0;
    const previous = blocks[i - 1];
    // Items of one list sit on consecutive lines; everything else is separated by a blank line.
    const tight =
      previous &&
      LIST_TYPES.includes(b.type) &&
      LIST_TYPES.includes(previous.type) &&
      (b.type === 'numbered_list_item') === (previous.type === 'numbered_list_item');
    const rendered = blockToMarkdown(b, number);
    if (i > 0) parts.push(tight ? '\n' : '\n\n');
    parts.push(rendered);
  });
  return parts.join('');
}
