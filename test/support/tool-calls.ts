// Calling tools in tests, one way for every suite: through an official MCP client (`toolCalls`), or as bare
// JSON-RPC over HTTP when the test looks at statuses and headers (`rpc`).
import { expect } from 'vitest';
import type { AnyClient } from './mcp-clients.ts';

/** A tools/call result as the clients return it. */
export interface ToolResult {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content?: unknown;
}

/** A failed call's `structuredContent.error`. */
export interface ToolFailure {
  code: string;
  message: string;
  retryable: boolean;
  provider_status: number | null;
}

/** The structuredContent of a result that must be a success (the failure is shown when it is not). */
export function succeeded(r: ToolResult): any {
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  return r.structuredContent;
}

/** The error of a result that must be a failure. */
export function failed(r: ToolResult): ToolFailure {
  expect(r.isError, JSON.stringify(r.structuredContent)).toBe(true);
  return r.structuredContent!.error as ToolFailure;
}

export interface ToolCalls {
  /** The result as it is. */
  call(name: string, args?: Record<string, unknown>): Promise<ToolResult>;
  /** A call that must succeed: its structuredContent. */
  ok<T = any>(name: string, args?: Record<string, unknown>): Promise<T>;
  /** A call that must fail: its error. */
  fails(name: string, args?: Record<string, unknown>): Promise<ToolFailure>;
}

/** Tool calls through a client; `client` may be a function when the client is connected later (in beforeAll). */
export function toolCalls(client: AnyClient | (() => AnyClient)): ToolCalls {
  const current = typeof client === 'function' ? client : () => client;
  const call = async (name: string, args: Record<string, unknown> = {}) => (await current().callTool({ name, arguments: args })) as ToolResult;
  return {
    call,
    ok: async <T>(name: string, args?: Record<string, unknown>) => succeeded(await call(name, args)) as T,
    fails: async (name, args) => failed(await call(name, args)),
  };
}

/** One JSON-RPC request to a server's MCP endpoint, without a client: the HTTP status, the JSON body, the headers. */
export async function rpc(
  baseUrl: string,
  serverId: string,
  key: string | undefined,
  method = 'tools/list',
  params?: Record<string, unknown>,
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${baseUrl}/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}
