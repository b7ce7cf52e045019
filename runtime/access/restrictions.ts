// What a credential may do: one shape on API keys and on OAuth grants (connected apps), checked in one place.
// No restriction is the default: every tool of the server, including tools added later, forever, with no
// budget other than the owner's balance. The budget itself is counted in budgets.ts.
import type { ToolAnnotations } from '../toolspec/types.ts';
import { ToolError } from '../tool-error.ts';

export interface CreditLimit {
  credits: number;
  per: 'day' | 'month';
}

export interface Restrictions {
  /** Allow-list of tool names of the server; absent: every tool, including tools added later. */
  tools?: string[];
  /** `read`: only tools whose spec says readOnlyHint: true. */
  access: 'all' | 'read';
  /** After this time the credential is refused with the 401 of an invalid key. */
  expires_at?: Date;
  credit_limit?: CreditLimit;
}

export const UNRESTRICTED: Restrictions = { access: 'all' };

/** Who holds the restrictions, as refusals name it. */
export type Holder = 'key' | 'app';
const HOLDER_NAME: Record<Holder, string> = { key: 'This key', app: 'This connected app' };

/** A tool as the restrictions see it. */
export interface RestrictableTool {
  name: string;
  annotations: ToolAnnotations;
}

/** Whether the credential's end date has passed at `now` (the store's clock: store/clock.ts). */
export function isExpired(r: Restrictions | undefined, now: number): boolean {
  return r?.expires_at !== undefined && r.expires_at.getTime() <= now;
}

/** Whether the credential may list and call the tool. */
export function permits(r: Restrictions | undefined, tool: RestrictableTool): boolean {
  if (!r) return true;
  if (r.access === 'read' && tool.annotations.readOnlyHint !== true) return false;
  return !r.tools || r.tools.includes(tool.name);
}

/** Why the credential may not call the tool (a refusal naming its restriction), or null when it may. */
export function refusal(r: Restrictions | undefined, tool: RestrictableTool, holder: Holder): ToolError | null {
  if (!r || permits(r, tool)) return null;
  if (r.access === 'read' && tool.annotations.readOnlyHint !== true) {
    return new ToolError(
      'tool_not_allowed',
      `${HOLDER_NAME[holder]} is read-only: ${tool.name} changes data. Use a key without the read-only restriction to call it.`,
    );
  }
  return unlisted(r, tool.name, holder);
}

/** The refusal of a tool the credential's list of tools does not name, or null (no list, or named). */
export function unlisted(r: Restrictions | undefined, name: string, holder: Holder): ToolError | null {
  if (!r?.tools || r.tools.includes(name)) return null;
  return new ToolError(
    'tool_not_allowed',
    `${HOLDER_NAME[holder]} may call only ${listOf(r.tools)}: ${name} is not among them. Its owner can allow more tools on the API keys page.`,
  );
}

const listOf = (names: string[]) => (names.length > 8 ? `${names.slice(0, 8).join(', ')} and ${names.length - 8} more` : names.join(', '));

/** The list view: every restriction, null where there is none, and whole days left before expiry. */
export function restrictionsView(r: Restrictions | undefined, now = Date.now()) {
  const expires = r?.expires_at ?? null;
  return {
    tools: r?.tools ?? null,
    access: r?.access ?? 'all',
    expires_at: expires,
    expires_in_days: expires ? Math.max(0, Math.ceil((expires.getTime() - now) / 86_400_000)) : null,
    credit_limit: r?.credit_limit ?? null,
  };
}

/** True when the restriction set restricts nothing. */
export const unrestricted = (r: Restrictions | undefined): boolean => !r || (r.access === 'all' && !r.tools && !r.expires_at && !r.credit_limit);

/** The fields of a request body that set restrictions (null clears one), as JSON Schema properties. */
export const RESTRICTION_PROPERTIES = {
  tools: { type: ['array', 'null'], items: { type: 'string', minLength: 1, maxLength: 128 }, minItems: 1, maxItems: 500, uniqueItems: true },
  access: { enum: ['all', 'read'] },
  expires_at: { type: ['string', 'null'], format: 'date-time' },
  credit_limit: {
    type: ['object', 'null'],
    additionalProperties: false,
    required: ['credits', 'per'],
    properties: { credits: { type: 'integer', minimum: 1, maximum: 1_000_000_000 }, per: { enum: ['day', 'month'] } },
  },
} as const;

/** What is wrong with each restriction field, by its path in the body (see api/body-schema.ts). */
export const RESTRICTION_MESSAGES: Record<string, string> = {
  tools: '"tools" must be a list of at least one tool name of the server, each once, or null for every tool (including tools added later)',
  access: '"access" must be "all" or "read" (only tools whose spec says they do not change data)',
  expires_at: '"expires_at" must be an ISO 8601 time with a time zone (e.g. 2026-01-31T00:00:00Z), or null for no expiry',
  credit_limit: '"credit_limit" must be {"credits": <whole number>, "per": "day" or "month"}, or null for no budget',
  'credit_limit.credits': '"credit_limit.credits" must be a whole number of credits from 1 to 1,000,000,000',
  'credit_limit.per': '"credit_limit.per" must be "day" or "month" (UTC)',
};

export interface RestrictionInput {
  tools?: string[] | null;
  access?: 'all' | 'read';
  expires_at?: string | null;
  credit_limit?: CreditLimit | null;
}

/**
 * The restrictions after applying a request body (already shape-checked) to the current ones: a field left
 * out keeps its value, null clears it. `toolNames` are the tools the credential could name; a problem is
 * thrown as a message naming the field.
 */
export function applyRestrictions(current: Restrictions | undefined, input: RestrictionInput, toolNames: Iterable<string>, now = Date.now()): Restrictions {
  const next: Restrictions = { ...(current ?? UNRESTRICTED) };
  if (input.tools !== undefined) {
    if (input.tools === null) delete next.tools;
    else {
      const known = new Set(toolNames);
      const unknown = input.tools.filter((t) => !known.has(t));
      if (unknown.length) {
        throw new RestrictionError(
          `"tools": no tool named ${unknown.join(', ')}; ${known.size ? `the tools are ${[...known].sort().join(', ')}` : 'there are no tools yet'}`,
        );
      }
      next.tools = [...input.tools].sort();
    }
  }
  if (input.access !== undefined) next.access = input.access;
  if (input.expires_at !== undefined) {
    if (input.expires_at === null) delete next.expires_at;
    else {
      const at = new Date(input.expires_at);
      if (at.getTime() <= now) throw new RestrictionError(`"expires_at" must be in the future (${at.toISOString()} has passed)`);
      next.expires_at = at;
    }
  }
  if (input.credit_limit !== undefined) {
    if (input.credit_limit === null) delete next.credit_limit;
    else next.credit_limit = { credits: input.credit_limit.credits, per: input.credit_limit.per };
  }
  return next;
}

export class RestrictionError extends Error {}

/** What changed between two restriction sets, for the audit trail: {field: {from, to}}. */
export function restrictionChanges(before: Restrictions | undefined, after: Restrictions): Record<string, { from: unknown; to: unknown }> {
  const a = restrictionsView(before);
  const b = restrictionsView(after);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of ['tools', 'access', 'expires_at', 'credit_limit'] as const) {
    if (JSON.stringify(a[field]) !== JSON.stringify(b[field])) changes[field] = { from: a[field], to: b[field] };
  }
  return changes;
}
