// What a provider's account fields (provider.yaml `account.fields`) accept, and the defaults that stand in for
// fields an account does not have: the stored accounts, the engine and the exchanges' accounts read them here.
import type { AccountFieldSpec } from './types.ts';

/**
 * What is wrong with a value of a field, in words that name the field ("\"url\" (URL) must be ..."); null
 * when it is fine. Empty values are the caller's business (a required field, a default).
 */
export function accountFieldProblem(f: AccountFieldSpec, value: string): string | null {
  const named = `"${f.name}" (${f.title})`;
  // A token pasted with its line break would be stored, and refused only when a call puts it in a header.
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\x00-\x1f\x7f]/.test(value)) return `${named} must not contain a line break or another control character (often copied by accident)`;
  if (f.format === 'url') {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return `${named} must be a URL such as https://example.com`;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return `${named} must be an http(s) URL`;
    if (url.username || url.password) return `${named} must not contain credentials`;
    if (url.search || url.hash) return `${named} must not have a query or fragment`;
  }
  if (f.format === 'email' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) return `${named} must be an e-mail address`;
  if (f.pattern && !new RegExp(f.pattern, 'u').test(value)) return `${named} ${f.pattern_message ?? `must match ${f.pattern}`}`;
  return null;
}

/**
 * An account's fields with each missing field's default filled in: a field added to provider.yaml later, with
 * a default, then has its value for the accounts saved before it existed (instead of silently none).
 */
export function withFieldDefaults(fields: Readonly<Record<string, string>>, specs: readonly AccountFieldSpec[]): Readonly<Record<string, string>> {
  const missing = specs.filter((f) => f.default !== undefined && !fields[f.name]);
  if (missing.length === 0) return fields;
  return Object.freeze({ ...fields, ...Object.fromEntries(missing.map((f) => [f.name, f.default!])) });
}
