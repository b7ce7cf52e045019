// Which protocol revision a POST speaks, and whether its headers agree with its body.
//
// Modern (2026-07-28) requests carry a per-request envelope in params._meta and the MCP-Protocol-Version,
// Mcp-Method (and, for tools/call, Mcp-Name) headers; the body decides the era and the headers are checked
// against it. Everything else is legacy (2025-03-26 .. 2025-11-25): MCP-Protocol-Version header, or
// 2025-03-26 when it is absent. See docs/mcp.md for the table of answers.
import { DEFAULT_VERSION, ErrorCode, LEGACY_VERSIONS, MODERN_VERSIONS, RpcError, SUPPORTED_VERSIONS } from './protocol.ts';

export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

export interface Negotiated {
  version: string;
  modern: boolean;
}

type Headers = { version?: string; method?: string; name?: string };

const isLegacy = (v: string) => (LEGACY_VERSIONS as readonly string[]).includes(v);
const isModernVersion = (v: string) => (MODERN_VERSIONS as readonly string[]).includes(v);

function envelopeOf(message: unknown): Record<string, unknown> | undefined {
  const meta = (message as { params?: { _meta?: unknown } } | null)?.params?._meta;
  return meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

function claimsModern(message: unknown): boolean {
  return envelopeOf(message)?.[META.protocolVersion] !== undefined;
}

/** Decides the revision of a POST body (one message or a batch); throws RpcError with its HTTP status. */
export function negotiate(headers: Headers, payload: unknown): Negotiated {
  const header = headers.version || undefined;
  if (Array.isArray(payload)) {
    if (payload.some(claimsModern)) {
      throw new RpcError(ErrorCode.InvalidRequest, 'Bad Request: JSON-RPC batches may not contain requests for protocol revision 2026-07-28 or later', 400);
    }
    const version = legacyVersion(header);
    if (version !== DEFAULT_VERSION) {
      throw new RpcError(ErrorCode.InvalidRequest, `Bad Request: JSON-RPC batches are not supported in protocol version ${version}`, 400);
    }
    return { version, modern: false };
  }
  const envelope = envelopeOf(payload);
  const claimed = envelope?.[META.protocolVersion];
  if (claimed === undefined && (header === undefined || isLegacy(header))) return { version: legacyVersion(header), modern: false };
  if (claimed === undefined && header !== undefined && !SUPPORTED_VERSIONS.includes(header)) return { version: legacyVersion(header), modern: false };

  // Modern from here on: the header must be a supported version and agree with the envelope.
  if (header !== undefined && !SUPPORTED_VERSIONS.includes(header)) throw unsupported(header);
  if (claimed !== undefined && (typeof claimed !== 'string' || !isModernVersion(claimed))) throw unsupported(String(claimed));
  if (header === undefined)
    throw mismatch('(missing)', `the body envelope names protocol version ${claimed} but the required MCP-Protocol-Version header is absent`);
  if (!envelope) {
    throw new RpcError(
      ErrorCode.InvalidParams,
      `Invalid params: the MCP-Protocol-Version header names protocol revision ${header}, but the request is missing the required per-request envelope key(s): _meta`,
      400,
      {
        envelope: { missing: ['_meta'] },
      },
    );
  }
  if (claimed === undefined) {
    throw new RpcError(ErrorCode.InvalidParams, `Invalid _meta envelope for protocol revision ${header}: ${META.protocolVersion}: missing`, 400, {
      envelope: { key: META.protocolVersion, problem: 'missing' },
    });
  }
  if (claimed !== header) throw mismatch(header, `the body envelope names protocol version ${claimed} but the MCP-Protocol-Version header names ${header}`);
  const message = payload as { id?: unknown; method?: unknown; params?: { name?: unknown } };
  const isRequest = message.id !== undefined && typeof message.method === 'string';
  if (isRequest) {
    if (headers.method === undefined) throw mismatch('(missing)', `the body names method ${message.method} but the required Mcp-Method header is absent`);
    if (headers.method !== message.method)
      throw mismatch(headers.method, `the body names method ${message.method} but the Mcp-Method header names ${headers.method}`);
    if (message.method === 'tools/call' && typeof message.params?.name === 'string') {
      const name = message.params.name;
      if (headers.name === undefined)
        throw mismatch('(missing)', `the body carries params.name=${JSON.stringify(name)} but the required Mcp-Name header is absent`);
      if (decodeHeaderValue(headers.name) !== name)
        throw mismatch(headers.name, `the body carries params.name=${JSON.stringify(name)} but the Mcp-Name header names ${JSON.stringify(headers.name)}`);
    }
    if (envelope[META.clientCapabilities] === undefined || typeof envelope[META.clientCapabilities] !== 'object') {
      throw new RpcError(ErrorCode.InvalidParams, `Invalid _meta envelope for protocol revision ${header}: ${META.clientCapabilities}: missing`, 400, {
        envelope: { key: META.clientCapabilities, problem: 'missing' },
      });
    }
  }
  return { version: header, modern: true };
}

function legacyVersion(header: string | undefined): string {
  if (header === undefined) return DEFAULT_VERSION;
  if (!isLegacy(header)) {
    throw new RpcError(-32000, `Bad Request: Unsupported protocol version: ${header} (supported versions: ${SUPPORTED_VERSIONS.join(', ')})`, 400, {
      supported: SUPPORTED_VERSIONS,
      requested: header,
    });
  }
  return header;
}

function unsupported(requested: string): RpcError {
  return new RpcError(ErrorCode.UnsupportedProtocolVersion, `Unsupported protocol version: ${requested}`, 400, { supported: [...MODERN_VERSIONS], requested });
}

function mismatch(header: string, body: string): RpcError {
  return new RpcError(ErrorCode.HeaderMismatch, `Bad Request: the request headers and body disagree: ${body}`, 400, { mismatch: { header, body } });
}

/** Header values that need it are sent as =?base64?<utf-8 in base64>?=. */
export function decodeHeaderValue(value: string): string {
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return m ? Buffer.from(m[1], 'base64').toString('utf8') : value;
}

/** Fields every modern result carries; tools/list and server/discover add cache hints. */
export function modernResultFields(method: string, serverInfo: Record<string, unknown>, toolsTtlMs: number): Record<string, unknown> {
  const fields: Record<string, unknown> = { resultType: 'complete', _meta: { [META.serverInfo]: serverInfo } };
  if (method === 'tools/list') Object.assign(fields, { ttlMs: toolsTtlMs, cacheScope: 'private' });
  if (method === 'server/discover') Object.assign(fields, { ttlMs: 0, cacheScope: 'private' });
  return fields;
}
