// The official MCP clients, connected to a server of the service with an API key.
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export type AnyClient = ClientV1 | ClientV2;

/** SDK v1 client (protocol 2025-11-25 with initialize). */
export async function connectV1(baseUrl: string, serverId: string, key: string): Promise<ClientV1> {
  const client = new ClientV1({ name: 'test-v1', version: '1.0.0' });
  await client.connect(new TransportV1(new URL(`${baseUrl}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

/** SDK v2 client; `legacy` uses initialize, `modern` pins 2026-07-28 (server/discover, per-request _meta). */
export async function connectV2(baseUrl: string, serverId: string, key: string, era: 'legacy' | 'modern' | 'auto' = 'modern'): Promise<ClientV2> {
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const client = new ClientV2({ name: 'test-v2', version: '2.0.0' }, { versionNegotiation: { mode } as never });
  await client.connect(new TransportV2(new URL(`${baseUrl}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}
