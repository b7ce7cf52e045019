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
    // eslint-disable-next-line no-restricted-syntax -- a spec's schema: a property named "__proto__" stays a property
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
/** Pages of a list (`<variant>:<from>:<to>`) serialized once, for as long as the list is in use. */
const pages = new WeakMap<readonly ToolListing[], Map<string, JsonText>>();

/**
 * The tools/list entries of `tools[from, to)`, as serialized JSON. A list is the same array for as long as its
 * server's tools, the catalog and the credential's restrictions are unchanged (CallPipeline.listTools), and a
 * new one after any change, so a cached page never outlives a tool.
 */
export function describedTools(tools: readonly ToolListing[], from: number, to: number, version: string): JsonText {
  const variant = supportsStructured(version) ? 'structured' : 'plain';
  let byPage = pages.get(tools);
  if (!byPage) pages.set(tools, (byPage = new Map()));
  const page = `${variant}:${from}:${to}`;
  let text = byPage.get(page);
  if (!text)
    byPage.set(
      page,
      (text = new JsonText(
        `[${tools
          .slice(from, to)
          .map((tool) => entryText(tool, variant, version))
          .join(',')}]`,
      )),
    );
  return text;
}

function entryText(tool: ToolListing, variant: string, version: string): string {
  let byVariant = serialized.get(tool);
  if (!byVariant) serialized.set(tool, (byVariant = new Map()));
  let text = byVariant.get(variant);
  if (text === undefined) byVariant.set(variant, (text = JSON.stringify(describeTool(tool, version))));
  return text;
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
