// Rich text: request forms checked against Notion's limits, stored in response form.
import { invalidField, fixOne, validation } from './errors.ts';
import { isObject, type Json } from './util.ts';

export const COLORS = ['default', 'gray', 'brown', 'orange', 'yellow', 'green', 'blue', 'purple', 'pink', 'red'] as const;
const BACKGROUNDS = COLORS.filter((c) => c !== 'default').map((c) => `${c}_background`);
const ALL_COLORS: readonly string[] = [...COLORS, ...BACKGROUNDS];

export const MAX_TEXT_LENGTH = 2000;
export const MAX_RICH_TEXT_ITEMS = 100;

export interface Annotations {
  bold: boolean;
  italic: boolean;
  strikethrough: boolean;
  underline: boolean;
  code: boolean;
  color: string;
}

export interface RichTextItem {
  type: 'text' | 'mention' | 'equation';
  text?: { content: string; link: { url: string } | null };
  mention?: Json;
  equation?: { expression: string };
  annotations: Annotations;
  plain_text: string;
  href: string | null;
}

/** How a mention renders as plain text; supplied by the store (page titles, user names). */
export type MentionResolver = (mention: Json, path: string) => { plain: string; href: string | null };

function annotationsFrom(raw: unknown, path: string): Annotations {
  const a: Annotations = { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default' };
  if (raw === undefined) return a;
  if (!isObject(raw)) throw invalidField(path, 'an object', raw);
  for (const flag of ['bold', 'italic', 'strikethrough', 'underline', 'code'] as const) {
    const v = raw[flag];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw invalidField(`${path}.${flag}`, 'a boolean', v);
    a[flag] = v;
  }
  if (raw.color !== undefined) {
    if (typeof raw.color !== 'string' || !ALL_COLORS.includes(raw.color)) {
      throw invalidField(`${path}.color`, ALL_COLORS.map((c) => `\`"${c}"\``).join(', '), raw.color);
    }
    a.color = raw.color;
  }
  return a;
}

/** Validates a request rich-text array at `path` and returns the response form. */
export function parseRichText(raw: unknown, path: string, resolveMention: MentionResolver): RichTextItem[] {
  if (!Array.isArray(raw)) throw invalidField(path, 'an array', raw);
  if (raw.length > MAX_RICH_TEXT_ITEMS) throw invalidField(`${path}.length`, `≤ \`${MAX_RICH_TEXT_ITEMS}\``, raw.length);
  return raw.map((item, i) => parseItem(item, `${path}[${i}]`, resolveMention));
}

function parseItem(item: unknown, path: string, resolveMention: MentionResolver): RichTextItem {
  if (!isObject(item)) throw invalidField(path, 'an object', item);
  const annotations = annotationsFrom(item.annotations, `${path}.annotations`);
  if (isObject(item.text)) {
    const { content, link } = item.text;
    if (typeof content !== 'string') throw invalidField(`${path}.text.content`, 'a string', content);
    if (content.length > MAX_TEXT_LENGTH) {
      throw invalidField(`${path}.text.content.length`, `≤ \`${MAX_TEXT_LENGTH}\``, content.length);
    }
    let url: string | null = null;
    if (link !== undefined && link !== null) {
      if (!isObject(link) || typeof link.url !== 'string') throw invalidField(`${path}.text.link.url`, 'a string', isObject(link) ? link.url : link);
      url = link.url;
      if (!isLinkUrl(url)) throw validation('Content creation Failed. Fix the following: \nInvalid URL for link.');
    }
    return { type: 'text', text: { content, link: url ? { url } : null }, annotations, plain_text: content, href: url };
  }
  if (isObject(item.equation)) {
    const expression = item.equation.expression;
    if (typeof expression !== 'string') throw invalidField(`${path}.equation.expression`, 'a string', expression);
    return { type: 'equation', equation: { expression }, annotations, plain_text: expression, href: null };
  }
  if (isObject(item.mention)) {
    const { plain, href } = resolveMention(item.mention, `${path}.mention`);
    return { type: 'mention', mention: item.mention, annotations, plain_text: plain, href };
  }
  throw fixOne(['text', 'mention', 'equation'].map((k) => `${path}.${k} should be defined, instead was \`undefined\`.`));
}

export const plainText = (items: readonly RichTextItem[]) => items.map((t) => t.plain_text).join('');

/** Builds response-form rich text from a plain string (used by the seed and for titles). */
export function textItems(content: string, annotations: Partial<Annotations> = {}, url: string | null = null): RichTextItem[] {
  if (!content) return [];
  return [
    {
      type: 'text',
      text: { content, link: url ? { url } : null },
      annotations: { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default', ...annotations },
      plain_text: content,
      href: url,
    },
  ];
}

/**
 * Notion accepts only absolute http(s) URLs in a text link; anything else (a relative path, "#anchor",
 * "mailto:", "javascript:", "data:") is answered 400 validation_error "Invalid URL for link." (the message
 * seen in reports against the real API, e.g. tryfabric/martian#41; http(s) only: dvanoni/notero#459).
 */
function isLinkUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}
