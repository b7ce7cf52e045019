// How tools and tool results look on the wire, per protocol revision.
import { JsonText } from './json-text.ts';
import type { ToolError } from '../tool-error.ts';
import type { ToolCallResult, ToolListing } from './backend.ts';

/** Meta key carrying a tool's price in tools/list. */
export const CREDITS_META_KEY = 'io.toolserver/credits';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['code', 'message', 'retryable', 'provider_status'],
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    retryable: { type: 'boolean' },
    provider_status: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    // account_needs_reauth: which account needs its owner, and where the owner reconnects it.
    account: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } },
    reconnect_url: { type: 'string' },
  },
};

/**
 * The advertised output schema: the tool's result OR {error}. Failed calls carry
 * structuredContent.error, and clients (SDK v1 among them) validate structuredContent even when
 * isError is set, so both shapes must be valid.
 */
export function advertisedOutputSchema(output: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'object',
    properties: { ...(output.properties as Record<string, unknown> | undefined), error: ERROR_SCHEMA },
    anyOf: [output, { type: 'object', required: ['error'], properties: { error: ERROR_SCHEMA } }],
  };
}

const supportsStructured = (version: string) => version >= '2025-06-18';

/** One tools/list entry. */
export function describeTool(tool: ToolListing, version: string): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    name: tool.name,
    description: `${tool.description.trim()}\n\nCost: ${tool.credits} credit${tool.credits === 1 ? '' : 's'} per call.`,
    inputSchema: tool.inputSchema,
    annotations: { title: tool.title, ...tool.annotations },
    _meta: { [CREDITS_META_KEY]: tool.credits },
  };
  if (supportsStructured(version)) {
    entry.title = tool.title;
    entry.outputSchema = advertisedOutputSchema(tool.outputSchema);
  }
  return entry;
}

/** Each tool's entry serialized once per protocol revision (entries differ only before and after 2025-06-18). */
const serialized = new WeakMap<ToolListing, Map<string, string>>();

/** tools/list entries, as serialized JSON. Exposed tools are rebuilt whenever a server's tools change, so a cached entry never outlives its tool. */
export function describedTools(tools: ToolListing[], version: string): JsonText {
  const variant = supportsStructured(version) ? 'structured' : 'plain';
  const entries = tools.map((tool) => {
    let byVariant = serialized.get(tool);
    if (!byVariant) serialized.set(tool, (byVariant = new Map()));
    let text = byVariant.get(variant);
    if (text === undefined) byVariant.set(variant, (text = JSON.stringify(describeTool(tool, version))));
    return text;
  });
  return new JsonText(`[${entries.join(',')}]`);
}

/** A tools/call result: the JSON as text, structuredContent from 2025-06-18 on, isError on failures. */
export function callResult(outcome: ToolCallResult, version: string): Record<string, unknown> {
  if (outcome.ok) {
    const result: Record<string, unknown> = { content: [{ type: 'text', text: JSON.stringify(outcome.result) }], isError: false };
    if (supportsStructured(version)) result.structuredContent = outcome.result;
    return result;
  }
  return errorResult(outcome.error, version);
}

export function errorResult(error: ToolError, version: string): Record<string, unknown> {
  const result: Record<string, unknown> = { content: [{ type: 'text', text: error.message }], isError: true };
  if (supportsStructured(version)) result.structuredContent = { error: error.toJSON() };
  return result;
}
