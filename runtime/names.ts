// Names people read (servers, keys, accounts, management tokens, OAuth apps, e-mail addresses): text without
// control or invisible characters, so that a page shows what was typed. A right-to-left override (U+202E)
// would make "App (deifirev rotarepo eht yb)" read "App (by the operator verified)"; zero-width and other
// format characters make two names that look alike differ.

/** Control characters (Cc), format characters (Cf: bidi controls, zero-width characters...), line and paragraph separators. */
const HIDDEN = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}';
const HIDDEN_CHARACTER = new RegExp(`[${HIDDEN}]`, 'u');

/** A JSON Schema `pattern` (ajv compiles with the u flag): a visible character somewhere, and no hidden one. */
export const VISIBLE_TEXT_PATTERN = `^[^${HIDDEN}]*[^\\s${HIDDEN}][^${HIDDEN}]*$`;

/** What is wrong with a name, as the end of a sentence naming the field ("must not ..."); null when nothing is. */
export function hiddenCharacterProblem(text: string): string | null {
  const found = HIDDEN_CHARACTER.exec(text);
  if (!found) return null;
  const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  return `must not contain control or invisible characters (U+${code} at character ${[...text.slice(0, found.index)].length + 1})`;
}

/**
 * A name set apart from the text around it (FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE), for plain text
 * such as a page title or a sentence, where <bdi> cannot go: whatever direction marks it holds stay inside.
 */
export const isolated = (name: string): string => `\u2068${name}\u2069`;
