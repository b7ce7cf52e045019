// Descriptions from a document, made into what a tool spec shows a model: markdown kept, the document's
// call-outs unwrapped, whole paragraphs while they fit, and a long first paragraph cut after a sentence.

/** Paragraphs of a markdown description, each on one line, quote markers and `[!NOTE]` call-outs removed. */
export function paragraphs(text: string): string[] {
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n/)
    .map((p) =>
      p
        .split('\n')
        .map((line) => line.replace(/^\s*>\s?/, '').replace(/^\s*\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$/i, ''))
        .filter((line) => line.trim())
        // A list keeps its lines apart; prose lines join.
        .join(/^\s*([-*+]|\d+\.)\s/m.test(p) ? '\n' : ' ')
        .replace(/[ \t]+/g, ' ')
        .trim(),
    )
    .filter(Boolean);
}

/**
 * At most `limit` characters: whole paragraphs while they fit; if even the first does not, its sentences
 * while they fit, else its words and an ellipsis.
 */
export function shorten(text: string, limit: number): string {
  const parts = paragraphs(text);
  const kept: string[] = [];
  // Paragraphs are one line each, apart by one newline: a folded YAML block shows them as paragraphs.
  for (const p of parts) {
    if ([...kept, p].join('\n').length > limit) break;
    kept.push(p);
  }
  // A paragraph that announces what follows ("...the following media types:") says nothing alone.
  if (kept.length > 1 && kept.length < parts.length && /:$/.test(kept[kept.length - 1])) kept.pop();
  if (kept.length || !parts.length) return kept.join('\n');
  const first = parts[0].replace(/\n/g, ' ');
  const sentences = first.match(/[^.!?]+[.!?]+(\s|$)/g) ?? [];
  let cut = '';
  for (const s of sentences) {
    if ((cut + s).trimEnd().length > limit) break;
    cut += s;
  }
  if (cut.trim()) return cut.trim();
  const words = first.slice(0, limit - 1);
  return `${words.slice(0, words.lastIndexOf(' ') > 0 ? words.lastIndexOf(' ') : words.length).trimEnd()}…`;
}

/** "list-for-repo" / "listForRepo" / "list_for_repo" -> "list for repo" (for titles and field titles). */
export function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[^A-Za-z0-9]+/g, ' ')
    .trim()
    .toLowerCase();
}

const ACRONYMS: Record<string, string> = { api: 'API', url: 'URL', uri: 'URI', id: 'ID', ids: 'IDs', http: 'HTTP', oauth: 'OAuth', sso: 'SSO' };

/** A name as a title: words, the first one capitalized, acronyms in capitals ("api_key" -> "API key"). */
export function titled(name: string): string {
  const text = words(name)
    .split(' ')
    .map((w) => ACRONYMS[w] ?? w)
    .join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
