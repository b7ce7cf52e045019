// Maps provider answers to the spec's error families, keeping the provider's own detail.
import type { UpstreamResponse } from '../http/client.ts';
import type { CompiledErrorRule, Provider, BaseTool } from '../toolspec/catalog.ts';
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

/** Human-readable detail from a provider error body, whatever its shape (JSON of any provider, or text). */
export function providerDetail(body: unknown): string {
  if (typeof body === 'string') return clip(body.trim().replace(/\s+/g, ' '));
  if (!body || typeof body !== 'object') return '';
  const b = body as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof b.message === 'string') parts.push(b.message);
  if (Array.isArray(b.errorMessages)) parts.push(...b.errorMessages.filter((m): m is string => typeof m === 'string'));
  if (b.errors && typeof b.errors === 'object' && !Array.isArray(b.errors)) {
    for (const [field, msg] of Object.entries(b.errors)) parts.push(`${field}: ${String(msg)}`);
  }
  if (typeof b.details === 'string') parts.push(b.details);
  if (typeof b.hint === 'string') parts.push(b.hint);
  return clip(parts.join('; '));
}

function clip(text: string): string {
  return text.length > 1000 ? text.slice(0, 1000) + '…' : text;
}

function providerCode(body: unknown): string | undefined {
  if (body && typeof body === 'object' && typeof (body as { code?: unknown }).code === 'string') return (body as { code: string }).code;
  return undefined;
}

function matches(rule: CompiledErrorRule, status: number, code: string | undefined, detail: string, step: string | undefined): boolean {
  if (rule.status && !rule.status.has(status)) return false;
  if (rule.providerCodes && (code === undefined || !rule.providerCodes.has(code))) return false;
  if (rule.contains && !detail.toLowerCase().includes(rule.contains)) return false;
  if (rule.step && rule.step !== step) return false;
  return true;
}

/** The ToolError for a non-2xx provider answer. */
export function mapUpstreamError(
  tool: BaseTool | undefined,
  step: string | undefined,
  res: UpstreamResponse,
  view: Record<string, unknown>,
  provider: Provider | undefined = tool?.provider,
): ToolError {
  const detail = providerDetail(res.body);
  const code = providerCode(res.body);
  const rule = [...(tool?.errors ?? []), ...(provider?.errors ?? [])].find((r) => matches(r, res.status, code, detail, step));
  const fallback = DEFAULT_RULES.find((r) => r.test(res.status))!;
  let message = rule ? (typeof rule.message === 'string' ? rule.message : String(rule.message.render(view) ?? '')) : fallback.message;
  if (detail && !message.includes(detail)) message += `: ${detail}`;
  const transient = res.status === 429 || res.status >= 500;
  if (res.status === 429) {
    const after = res.headers['retry-after'];
    if (after) message += ` (retry after ${Array.isArray(after) ? after[0] : after} s)`;
  }
  if (rule?.hint) message = `${message.replace(/[.\s]+$/, '')}. ${rule.hint}`;
  return new ToolError(rule?.code ?? fallback.code, message, { retryable: rule?.retryable ?? transient, providerStatus: res.status, refund: transient });
}

/** Replaces each of the given secrets (too short ones are ignored) in a text with [redacted]. */
export function redactor(values: Array<string | undefined>): (text: string) => string {
  const secrets = values.filter((s): s is string => typeof s === 'string' && s.length >= 4);
  if (secrets.length === 0) return (t) => t;
  return (text) => secrets.reduce((t, s) => t.split(s).join('[redacted]'), text);
}
