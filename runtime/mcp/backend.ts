// The seam between the MCP endpoint and the rest of the service (implemented by pipeline/call-pipeline.ts).
// The endpoint only speaks protocol; everything with a cost or a rule goes through these calls, in this order
// for tools/call: authenticate -> authorize -> rate limit -> (find tool -> merge defaults -> validate ->
// charge -> execute -> record in the ledger -> refund or keep). The record is written first: it is what settles
// the charge (docs/architecture.md, "Refunds").
import type { Cancellation } from '../cancellation.ts';
import type { ToolError } from '../tool-error.ts';
import type { ToolAnnotations } from '../toolspec/types.ts';
import type { CallTrace } from '../tracing/spans.ts';

/** Who is calling, as the backend authenticated it; the endpoint passes it back unread (the backend may add to it). */
export interface Principal {
  /** The API key, or the OAuth grant of an access token (limits and the ledger count per credential). */
  keyId: string;
  ownerId: string;
  serverId: string;
}

/**
 * `tokenError`: why a presented OAuth access token is refused (sent as RFC 6750's error_description); `message`:
 * what is wrong when the generic words would not say it (an X-End-User header naming nobody the key may act for).
 */
export type AuthOutcome = { ok: true; principal: Principal } | { ok: false; status: 401 | 403; tokenError?: string; message?: string };

export interface RateOutcome {
  allowed: boolean;
  /** RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset (and Retry-After when refused). */
  headers: Record<string, string>;
  /** When refused by a limit other than the credential's own (its owner's across all keys): which, in words. */
  limit?: string;
}

/** A tool as a server exposes it (a base tool, or a custom tool built on one). */
export interface ToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
  credits: number;
}

export type ToolCallResult = { ok: true; result: Record<string, unknown> } | { ok: false; error: ToolError };

export interface CallOptions {
  cancellation: Cancellation;
  progress: (message: string) => void;
  /** The call's span when tracing is on (runtime/tracing/spans.ts). */
  trace?: CallTrace;
}

export interface McpBackend {
  /**
   * Authenticates the bearer key or OAuth access token and authorizes it for the server (the status table: README,
   * "MCP endpoint"). `endUser` is the X-End-User header, the owner's end user a trusted backend's key acts for;
   * `address` is the client's (a key's owner hears of a key used from a new network).
   */
  authenticate(serverId: string, authorization: string | undefined, from?: { endUser?: string; address?: string }): Promise<AuthOutcome>;
  /**
   * Counts `requests` JSON-RPC requests against the key's limits (a batch counts each of its requests): the outcome
   * itself when every window answered from memory, a promise when one waited for the store.
   */
  rateLimit(principal: Principal, requests?: number): RateOutcome | Promise<RateOutcome>;
  /** The server's tools, in a stable order. */
  listTools(principal: Principal): Promise<ToolListing[]>;
  /** Runs a tool call end to end; undefined when the server has no tool of that name. */
  callTool(principal: Principal, name: string, args: unknown, options: CallOptions): Promise<ToolCallResult | undefined>;
  /**
   * The `requestState` of a result that needs the client's input first (2026-07-28): integrity-protected, bound
   * to the caller, the method and a digest of its params, short-lived, good for one retry.
   */
  sealRequestState(principal: Principal, method: string, params: unknown): Promise<string>;
  /** Checks and spends a retry's `requestState`: null when it is good, else what is wrong with it, in words. */
  openRequestState(principal: Principal, method: string, params: unknown, state: unknown): Promise<string | null>;
}

/**
 * The backend cannot serve now (its store refuses writes, or does not answer): the endpoint answers HTTP 503
 * with Retry-After and a JSON-RPC error saying so. What counts as such is decided outside the endpoint
 * (McpEndpointOptions.unavailable), by the one function every route uses.
 */
export interface Unavailable {
  /** Why, in words, and when to try again. */
  message: string;
  retryAfterSeconds: number;
  /** For a tools/call: the call reached its provider (which may have acted) before the failure. */
  providerReached: boolean;
}
