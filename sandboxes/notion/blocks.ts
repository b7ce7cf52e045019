// Block children in requests: Notion's type shapes, nesting and size limits.
import { fixOne, invalidField, validation } from './errors.ts';
import type { BlockRecord, ParentRef, Workspace } from './model.ts';
import { parseRichText } from './richtext.ts';
import { isObject, newId, type Json } from './util.ts';

export const MAX_CHILDREN = 100;
/** Notion accepts two levels of nesting in one request. */
const MAX_DEPTH = 2;

/** Notion's code block languages. */
export const CODE_LANGUAGES = [
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

const TEXT_BLOCKS = ['paragraph', 'heading_1', 'heading_2', 'heading_3', 'bulleted_list_item', 'numbered_list_item', 'to_do', 'toggle', 'quote', 'callout'];
const BLOCK_TYPES = [...TEXT_BLOCKS, 'code', 'divider', 'bookmark', 'equation', 'image'];
const WITH_CHILDREN = ['paragraph', 'bulleted_list_item', 'numbered_list_item', 'to_do', 'toggle', 'quote', 'callout'];

/** A validated block of a request, before it gets an id. */
export interface BlockDraft {
  type: string;
  data: Json;
  children: BlockDraft[];
}

export function canHaveChildren(type: string, data: Json): boolean {
  return WITH_CHILDREN.includes(type) || (type.startsWith('heading_') && data.is_toggleable === true);
}

/** Validates a `children` array at `path` (for example `body.children`). */
export function parseChildren(ws: Workspace, raw: unknown, path: string, depth = 1): BlockDraft[] {
  if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
  if (raw.length > MAX_CHILDREN) throw invalidField(`${path}.length`, `≤ \`${MAX_CHILDREN}\``, raw.length);
  return raw.map((block, i) => parseBlock(ws, block, `${path}[${i}]`, depth));
}

function parseBlock(ws: Workspace, raw: unknown, path: string, depth: number): BlockDraft {
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  const type = typeof raw.type === 'string' ? raw.type : BLOCK_TYPES.find((t) => raw[t] !== undefined);
  if (!type || !BLOCK_TYPES.includes(type) || !isObject(raw[type])) {
    throw fixOne(BLOCK_TYPES.map((t) => `${path}.${t} should be defined, instead was \`undefined\`.`));
  }
  const body = raw[type] as Json;
  const at = `${path}.${type}`;
  const data: Json = {};
  if (TEXT_BLOCKS.includes(type)) {
    data.rich_text = parseRichText(body.rich_text, `${at}.rich_text`, ws.resolveMention);
    data.color = typeof body.color === 'string' ? body.color : 'default';
  }
  if (type.startsWith('heading_')) data.is_toggleable = body.is_toggleable === true;
  if (type === 'to_do') {
    if (body.checked !== undefined && typeof body.checked !== 'boolean') throw invalidField(`${at}.checked`, 'a boolean', body.checked);
    data.checked = body.checked === true;
  }
  if (type === 'callout') data.icon = isObject(body.icon) ? body.icon : null;
  if (type === 'code') {
    data.caption = body.caption === undefined ? [] : parseRichText(body.caption, `${at}.caption`, ws.resolveMention);
    data.rich_text = parseRichText(body.rich_text, `${at}.rich_text`, ws.resolveMention);
    const language = body.language ?? 'plain text';
    if (typeof language !== 'string' || !CODE_LANGUAGES.includes(language)) {
      throw invalidField(`${at}.language`, CODE_LANGUAGES.map((l) => `\`"${l}"\``).join(', '), body.language);
    }
    data.language = language;
  }
  if (type === 'bookmark' || type === 'image') {
    const url = type === 'image' ? (isObject(body.external) ? body.external.url : undefined) : body.url;
    if (typeof url !== 'string') throw invalidField(type === 'image' ? `${at}.external.url` : `${at}.url`, 'a string', url);
    data.caption = body.caption === undefined ? [] : parseRichText(body.caption, `${at}.caption`, ws.resolveMention);
    Object.assign(data, type === 'image' ? { type: 'external', external: { url } } : { url });
  }
  if (type === 'equation') {
    if (typeof body.expression !== 'string') throw invalidField(`${at}.expression`, 'a string', body.expression);
    data.expression = body.expression;
  }
  let children: BlockDraft[] = [];
  if (body.children !== undefined) {
    if (depth >= MAX_DEPTH || !canHaveChildren(type, data)) throw invalidField(`${at}.children`, 'not present', body.children);
    children = parseChildren(ws, body.children, `${at}.children`, depth + 1);
  }
  return { type, data, children };
}

/** Stores drafts under `parent` and returns the new top-level ids. */
export function insertBlocks(ws: Workspace, drafts: readonly BlockDraft[], parent: ParentRef): string[] {
  return drafts.map((draft) => {
    const record: BlockRecord = { ...ws.stamp(), id: newId(), type: draft.type, data: draft.data, parent, children: [] };
    ws.blocks.set(record.id, record);
    record.children = insertBlocks(ws, draft.children, { kind: 'block', id: record.id });
    return record.id;
  });
}

/** Copies a block tree (template application). */
export function copyBlocks(ws: Workspace, ids: readonly string[], parent: ParentRef): string[] {
  return ids.flatMap((id) => {
    const source = ws.blocks.get(id);
    if (!source || source.inTrash) return [];
    const copy: BlockRecord = { ...ws.stamp(), id: newId(), type: source.type, data: structuredClone(source.data), parent, children: [] };
    ws.blocks.set(copy.id, copy);
    copy.children = copyBlocks(ws, source.children, { kind: 'block', id: copy.id });
    return [copy.id];
  });
}

export function requireChildrenAllowed(type: string, data: Json): void {
  if (!canHaveChildren(type, data)) throw validation(`Block type ${type} does not support children.`);
}
