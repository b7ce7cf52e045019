// JSON-RPC 2.0 and MCP protocol constants shared by the endpoint.

/** Revisions with the initialize handshake, oldest first. */
export const LEGACY_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25'] as const;
/** Revisions without initialize: server/discover and per-request _meta. */
export const MODERN_VERSIONS = ['2026-07-28'] as const;
export const SUPPORTED_VERSIONS: readonly string[] = [...LEGACY_VERSIONS, ...MODERN_VERSIONS];
export const LATEST_LEGACY_VERSION = '2025-11-25';
/** Assumed when a request carries no MCP-Protocol-Version header. */
export const DEFAULT_VERSION = '2025-03-26';

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** The service cannot answer now: its store refuses writes or does not answer (HTTP 503, Retry-After). */
  Unavailable: -32001,
  /** Mcp-Method / Mcp-Name headers disagree with the body (2026-07-28). */
  HeaderMismatch: -32020,
  /** Protocol version not supported (2026-07-28). */
  UnsupportedProtocolVersion: -32022,
  /** The call needs the user to open a URL first (2025-11-25; retired in 2026-07-28 for input_required). */
  UrlElicitationRequired: -32042,
} as const;

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcError {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export interface JsonRpcResult {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: Record<string, unknown>;
}

export type JsonRpcResponse = JsonRpcResult | JsonRpcError;

/** A JSON-RPC failure raised while handling one request; `httpStatus` applies when it is the only answer. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly httpStatus = 200,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function rpcError(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcError {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** What one incoming message is. */
export type Classified =
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; method: string; params?: Record<string, unknown> }
  | { kind: 'response' }
  | { kind: 'invalid'; id: JsonRpcId | null; reason: string };

export function classify(value: unknown): Classified {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { kind: 'invalid', id: null, reason: 'a JSON-RPC message must be an object' };
  const m = value as Record<string, unknown>;
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  if (m.jsonrpc !== '2.0') return { kind: 'invalid', id, reason: 'jsonrpc must be "2.0"' };
  if (m.method === undefined && ('result' in m || 'error' in m)) return { kind: 'response' };
  if (typeof m.method !== 'string' || m.method === '') return { kind: 'invalid', id, reason: 'method must be a non-empty string' };
  if (m.params !== undefined && (m.params === null || typeof m.params !== 'object' || Array.isArray(m.params))) {
    return { kind: 'invalid', id, reason: 'params must be an object' };
  }
  if (!('id' in m)) return { kind: 'notification', method: m.method, params: m.params as Record<string, unknown> | undefined };
  if (id === null) return { kind: 'invalid', id: null, reason: 'id must be a string or a number' };
  return { kind: 'request', message: m as unknown as JsonRpcRequest };
}
