// Maps provider answers to the spec's error families, keeping the provider's own detail.
import type { UpstreamResponse } from '../http/client.ts';
import type { CompiledErrorRule, DetailSource, Provider, BaseTool } from '../toolspec/catalog.ts';
import { type CompiledTemplate, lookup, truthy } from '../template/template.ts';
import { ToolError } from '../tool-error.ts';

/** Fallback families, after the tool's and the provider's own rules. */
const DEFAULT_RULES: Array<{ test: (status: number) => boolean; code: string; message: string }> = [
  { test: (s) => s === 401, code: 'unauthorized', message: 'Unauthorized: the provider rejected the stored credentials' },
  { test: (s) => s === 403, code: 'forbidden', message: 'Forbidden: the provider denied access' },
  { test: (s) => s === 404, code: 'not_found', message: 'Not found' },
  { test: (s) => s === 409, code: 'conflict', message: 'Conflict' },
  { test: (s) => s === 429, code: 'rate_limited', message: 'Rate limited by the provider' },
  { test: (s) => s >= 500, code: 'provider_error', message: 'The provider failed to answer' },
  { test: (s) => s >= 400, code: 'bad_request', message: 'The provider refused the request' },
  { test: () => true, code: 'provider_error', message: 'Unexpected answer from the provider' },
];

/**
 * Human-readable detail from a provider error body, whatever its shape (JSON of any provider, or text):
 * `message`, Jira's `errorMessages` and `errors` object, an `errors` list (GitHub's `{resource, field, code}`,
 * JSON:API's `{title, detail, source}`, GraphQL's `{message, path}`), `error` as text or as an object,
 * OAuth's `error_description`, PostgREST's `details` and `hint`.
 */
export function providerDetail(body: unknown): string {
  return clip([...new Set(detailParts(body, 0))].join('; '));
}

function detailParts(body: unknown, depth: number): string[] {
  if (typeof body === 'string') return body.trim() ? [body.trim().replace(/\s+/g, ' ')] : [];
  if (Array.isArray(body)) return body.flatMap(errorItem);
  if (!body || typeof body !== 'object' || depth > 1) return [];
  const b = body as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof b.message === 'string') parts.push(b.message);
  if (Array.isArray(b.errorMessages)) parts.push(...b.errorMessages.filter((m): m is string => typeof m === 'string'));
  if (Array.isArray(b.errors)) parts.push(...b.errors.flatMap(errorItem));
  else if (b.errors && typeof b.errors === 'object') {
    for (const [field, msg] of Object.entries(b.errors)) parts.push(`${field}: ${String(msg)}`);
  }
  if (typeof b.error === 'string') parts.push(b.error);
  else parts.push(...detailParts(b.error, depth + 1));
  if (typeof b.error_description === 'string') parts.push(b.error_description);
  if (typeof b.details === 'string') parts.push(b.details);
  if (typeof b.hint === 'string') parts.push(b.hint);
  return parts;
}

/** One item of an `errors` list, as "<where>: <what>" when it says where. */
function errorItem(item: unknown): string[] {
  if (typeof item === 'string') return [item];
  if (!item || typeof item !== 'object') return [];
  const e = item as Record<string, unknown>;
  const text = [e.message, e.detail, e.title, e.code].find((t) => typeof t === 'string' && t !== '') as string | undefined;
  const source = (e.source ?? {}) as Record<string, unknown>;
  const field = [e.field, source.pointer, source.parameter, Array.isArray(e.path) ? e.path.join('.') : undefined].find(
    (f) => typeof f === 'string' && f !== '',
  ) as string | undefined;
  const where = field && (typeof e.resource === 'string' ? `${e.resource}.${field}` : field);
  if (!text) return where ? [where] : [];
  return [where ? `${where}: ${text}` : text];
}

function clip(text: string): string {
  return text.length > 1000 ? text.slice(0, 1000) + '…' : text;
}

/** The provider's machine code: at the provider's error_body.code, else a top-level `code` string. */
function providerCode(body: unknown, at: string[] | undefined): string | undefined {
  const value = at ? lookup(body, at) : (body as { code?: unknown } | null | undefined)?.code;
  if (typeof value === 'string') return value;
  return at && typeof value === 'number' ? String(value) : undefined;
}

/** The detail a source finds: text as it is, a list or an object read the built-in way. */
function detailFrom(source: DetailSource, body: unknown, view: Record<string, unknown>): string {
  const value = 'pointer' in source ? lookup(body, source.pointer) : safely(source.template, view);
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? providerDetail(value) : clip(String(value).trim());
}

/** Renders a template of an error rule; a value the answer lacks is written "?" (a provider's error is not ours). */
function safely(template: CompiledTemplate | string, view: Record<string, unknown>): unknown {
  return typeof template === 'string' ? template : template.render(view, undefined, '?');
}

function headerValues(res: UpstreamResponse, name: string): string[] {
  const value = res.headers[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function matches(
  rule: CompiledErrorRule,
  res: UpstreamResponse,
  code: string | undefined,
  detail: string,
  step: string | undefined,
  view: Record<string, unknown>,
): boolean {
  if (rule.status && !rule.status.has(res.status)) return false;
  if (rule.providerCodes && (code === undefined || !rule.providerCodes.has(code))) return false;
  if (rule.contains && !detail.toLowerCase().includes(rule.contains)) return false;
  if (rule.step && rule.step !== step) return false;
  for (const [name, wanted] of rule.headers ?? []) {
    const values = headerValues(res, name).map((v) => v.trim());
    if (typeof wanted === 'boolean' ? values.length > 0 !== wanted : !values.some((v) => wanted.includes(v))) return false;
  }
  return !rule.when || truthy(safely(rule.when, view));
}

/** A code rendered from the answer, in our snake_case form; '' when nothing usable is left. */
function snakeCase(value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number') return '';
  return String(value)
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^[^a-z]+|_+$/g, '');
}

/** The ToolError for a non-2xx provider answer. */
export function mapUpstreamError(
  tool: BaseTool | undefined,
  step: string | undefined,
  res: UpstreamResponse,
  view: Record<string, unknown>,
  provider: Provider | undefined = tool?.provider,
): ToolError {
  // Rules read the answer as `response`, beside the call's arguments and account.
  const errorView = Object.assign({}, view, { response: res });
  const errorBody = provider?.errorBody;
  const providerDetailText = errorBody?.detail ? detailFrom(errorBody.detail, res.body, errorView) : providerDetail(res.body);
  const code = providerCode(res.body, errorBody?.code);
  const rule = [...(tool?.errors ?? []), ...(provider?.errors ?? [])].find((r) => matches(r, res, code, providerDetailText, step, errorView));
  const fallback = DEFAULT_RULES.find((r) => r.test(res.status))!;
  const detail = rule?.detail ? detailFrom(rule.detail, res.body, errorView) : providerDetailText;
  let message = rule ? String(safely(rule.message, errorView) ?? '') || fallback.message : fallback.message;
  if (detail && !message.includes(detail)) message += `: ${detail}`;
  const transient = res.status === 429 || res.status >= 500;
  if (res.status === 429) {
    const after = res.headers['retry-after'];
    if (after) message += ` (retry after ${Array.isArray(after) ? after[0] : after} s)`;
  }
  const hint = rule?.hint === undefined ? '' : String(safely(rule.hint, errorView) ?? '');
  if (hint) message = `${message.replace(/[.\s]+$/, '')}. ${hint}`;
  const ourCode = !rule ? fallback.code : typeof rule.code === 'string' ? rule.code : snakeCase(safely(rule.code, errorView)) || fallback.code;
  return new ToolError(ourCode, message, { retryable: rule?.retryable ?? transient, providerStatus: res.status, refund: rule?.refund ?? transient });
}

/** Replaces each of the given secrets (too short ones are ignored) in a text with [redacted]. */
export function redactor(values: Array<string | undefined>): (text: string) => string {
  const secrets = values.filter((s): s is string => typeof s === 'string' && s.length >= 4);
  if (secrets.length === 0) return (t) => t;
  return (text) => secrets.reduce((t, s) => t.split(s).join('[redacted]'), text);
}
