// Markdown in the catalog's descriptions (tool specs, provider.yaml), rendered for the pages: everything is
// escaped, and only inline code and written-out links with an http(s) or mailto: target become markup, in
// paragraphs and lists. Raw HTML shows as text; a bare URL stays text (descriptions name example hosts that
// are not meant to be followed); asterisks and underscores stay as written, since the descriptions use them
// literally (PostgREST's `*` wildcards, "*milk*" patterns) far more than for emphasis.
import { Lexer, type Token } from 'marked';

const SAFE_LINK = /^(https?:\/\/|mailto:)/i;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function inline(tokens: Token[] | undefined): string {
  return (tokens ?? []).map(inlineToken).join('');
}

function inlineToken(t: Token): string {
  switch (t.type) {
    case 'codespan':
      return `<code>${escapeHtml(t.text)}</code>`;
    case 'em':
    case 'strong':
      return escapeHtml(t.raw);
    case 'link':
      // Written as [text](url) and pointing somewhere safe; anything else is its text.
      return t.raw.startsWith('[') && SAFE_LINK.test(t.href)
        ? `<a href="${escapeHtml(t.href)}" rel="noopener noreferrer">${inline(t.tokens)}</a>`
        : t.raw.startsWith('[')
          ? inline(t.tokens)
          : escapeHtml(t.raw);
    case 'br':
      return '<br>';
    case 'text':
      return t.tokens ? inline(t.tokens) : escapeHtml(t.text);
    case 'escape':
      return escapeHtml(t.text);
    default:
      // html, images, strike-through, anything else: what was written, as text.
      return 'tokens' in t && Array.isArray(t.tokens) ? inline(t.tokens) : escapeHtml(t.raw);
  }
}

function block(t: Token): string {
  switch (t.type) {
    case 'space':
      return '';
    case 'list':
      return `<ul>${t.items.map((item: { tokens: Token[] }) => `<li>${listItem(item)}</li>`).join('')}</ul>`;
    case 'code':
      return `<p><code>${escapeHtml(t.text)}</code></p>`;
    default:
      return `<p>${blockInline(t)}</p>`;
  }
}

/** A block's content as inline text (headings, quotes and paragraphs alike). */
function blockInline(t: Token): string {
  if ('tokens' in t && Array.isArray(t.tokens)) return t.type === 'blockquote' ? t.tokens.map(blockInline).join(' ') : inline(t.tokens);
  return escapeHtml('text' in t && typeof t.text === 'string' ? t.text : t.raw);
}

const listItem = (item: { tokens: Token[] }) => item.tokens.map((x) => (x.type === 'text' ? inlineToken(x) : blockInline(x))).join(' ');

const lexer = () => new Lexer({ gfm: true });

/** Paragraphs and lists. */
export function markdownBlock(text: string): string {
  return lexer().lex(text.trim()).map(block).join('');
}

/** One run of text (a field's hint): blocks joined by a space. */
export function markdownInline(text: string): string {
  return lexer()
    .lex(text.trim())
    .filter((t) => t.type !== 'space')
    .map((t) => (t.type === 'list' ? t.items.map(listItem).join('; ') : blockInline(t)))
    .join(' ');
}
