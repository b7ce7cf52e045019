// Supabase keys and the JWT check PostgREST does on `Authorization: Bearer`.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { PgrstError } from './errors.ts';

const base64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

/** An HS256 JWT, the kind Supabase's legacy anon/service_role keys and user access tokens are. */
export function signJwt(claims: Record<string, unknown>, secret: string): string {
  const head = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = base64url(JSON.stringify(claims));
  const signature = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  return `${head}.${body}.${base64url(signature)}`;
}

function jwtError(code: string, message: string, version: number, details: string | null = null): PgrstError {
  const description = version >= 13 ? message : message.replace(/"/g, '\\"');
  return new PgrstError(401, code, message, details, null, {
    'www-authenticate': `Bearer error="invalid_token", error_description="${description}"`,
  });
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Verifies an HS256 token and its `exp`; the messages follow PostgREST 13 (or 12 when version is 12). */
export function verifyJwt(token: string, secret: string, version: number): Record<string, unknown> {
  const v13 = version >= 13;
  if (token === '') throw jwtError('PGRST301', v13 ? 'Empty JWT is sent in Authorization header' : 'Expected 3 parts in JWT; got 1', version);
  const parts = token.split('.');
  if (parts.length !== 3) {
    const message = v13
      ? `Expected 3 parts in JWT; got ${parts.length}`
      : `JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got ${parts.length})`;
    throw jwtError('PGRST301', message, version);
  }
  const [head, body, signature] = parts;
  const header = decodeJson(head);
  const claims = decodeJson(body);
  if (!header || !claims) throw jwtError('PGRST301', v13 ? "JWT couldn't be decoded" : 'JWSError (CompactDecodeError Invalid JSON)', version);
  if (header.alg !== 'HS256') throw jwtError('PGRST301', v13 ? 'Wrong or unsupported encoding algorithm' : 'JWSError (JWSInvalidSignature)', version);
  const expected = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw jwtError('PGRST301', v13 ? 'JWT cryptographic operation failed' : 'JWSError JWSInvalidSignature', version);
  }
  if (typeof claims.exp === 'number' && claims.exp <= Date.now() / 1000) throw jwtError(v13 ? 'PGRST303' : 'PGRST301', 'JWT expired', version);
  return claims;
}

export interface ProjectKeys {
  jwtSecret: string;
  anonKey: string;
  serviceRoleKey: string;
  publishableKey: string;
  secretKey: string;
}

/** 2025-01-01: when keys derived from a seed were issued, so they are the same at every start. */
const SEEDED_IAT = 1_735_689_600;

/**
 * The project's keys: legacy JWT keys (ten years valid) and new-style opaque keys. Fresh per sandbox, or
 * derived from `seed` (a sandbox restarted with the same seed accepts the keys it gave before).
 */
export function makeProjectKeys(seed?: string, ref = 'sandbox'): ProjectKeys {
  const bytes = (label: string, n: number): Buffer => (seed === undefined ? randomBytes(n) : createHmac('sha256', seed).update(label).digest().subarray(0, n));
  const jwtSecret = bytes('jwt secret', 32).toString('hex');
  const iat = seed === undefined ? Math.floor(Date.now() / 1000) : SEEDED_IAT;
  const legacy = (role: string): string => signJwt({ iss: 'supabase', ref, role, iat, exp: iat + 10 * 365 * 86400 }, jwtSecret);
  return {
    jwtSecret,
    anonKey: legacy('anon'),
    serviceRoleKey: legacy('service_role'),
    publishableKey: `sb_publishable_${bytes('publishable key', 16).toString('base64url')}`,
    secretKey: `sb_secret_${bytes('secret key', 16).toString('base64url')}`,
  };
}

export interface RequestIdentity {
  role: string;
  claims: Record<string, unknown>;
}

export type GatewayRejection = { status: 401; body: { message: string; hint: string } };

/**
 * The Supabase gateway then PostgREST: the `apikey` (header or query) must be one of the project's keys;
 * the role comes from `Authorization: Bearer` when present (a JWT, or the same opaque key), else from the key.
 */
export function identify(
  keys: ProjectKeys,
  apikey: string | undefined,
  authorization: string | undefined,
  version: number,
): RequestIdentity | GatewayRejection {
  if (!apikey) return { status: 401, body: { message: 'No API key found in request', hint: 'No `apikey` request header or url param was found.' } };
  const opaqueRoles: Record<string, string> = { [keys.publishableKey]: 'anon', [keys.secretKey]: 'service_role' };
  const known = [keys.anonKey, keys.serviceRoleKey, keys.publishableKey, keys.secretKey];
  if (!known.includes(apikey)) {
    return { status: 401, body: { message: 'Invalid API key', hint: 'Double check your Supabase `anon` or `service_role` API key.' } };
  }
  const bearer = authorization?.match(/^Bearer(?:\s+(.*))?$/i);
  const token = bearer ? (bearer[1] ?? '').trim() : undefined;
  if (token !== undefined && opaqueRoles[token]) return { role: opaqueRoles[token], claims: { role: opaqueRoles[token] } };
  if (token === undefined && opaqueRoles[apikey]) return { role: opaqueRoles[apikey], claims: { role: opaqueRoles[apikey] } };
  const claims = verifyJwt(token ?? apikey, keys.jwtSecret, version);
  return { role: typeof claims.role === 'string' ? claims.role : 'anon', claims };
}
