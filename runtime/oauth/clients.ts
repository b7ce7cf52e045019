// OAuth clients, registered both ways the MCP authorization spec describes: dynamic client registration
// (RFC 7591, stored here) and client ID metadata documents (the client_id is an https URL whose JSON
// document we fetch through the outbound guard, size- and time-limited, and cache).
import type { HttpClient } from '../http/client.ts';
import { hiddenCharacterProblem } from '../names.ts';
import { randomId, randomToken, sameSecret, sha256 } from '../secrets.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { ToolError } from '../tool-error.ts';
import { TtlCache } from '../ttl-cache.ts';
import { OAuthError } from './errors.ts';

export type TokenAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';
export const TOKEN_AUTH_METHODS: TokenAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post'];

/** What the service knows of a client, however it was registered. */
export interface OAuthClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  token_endpoint_auth_method: TokenAuthMethod;
  /** Registered here (its name is the client's own claim) or described by a document at its client_id URL. */
  registration: 'dynamic' | 'metadata_document';
  client_uri?: string;
  /** SHA-256 of the secret of a confidential dynamically registered client. */
  secret_hash?: string;
}

type ClientDoc = Doc & OAuthClient & { created_at: Date };

const MAX_REDIRECT_URIS = 10;
const MAX_NAME = 100;
/** How the outbound client that fetches client ID metadata documents is limited: a document is small and quick. */
export const METADATA_FETCH_LIMITS = { maxResponseBytes: 5 * 1024, timeoutMs: 5000 };
/** Documents are cached this long unless their Cache-Control says less (never less than a minute). */
const DOCUMENT_TTL_MS = 10 * 60_000;
/** A document that could not be fetched or used is not fetched again for this long: its failure is the answer. */
const FAILED_DOCUMENT_TTL_MS = 30_000;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Why a redirect URI cannot be registered, or null: it must be absolute, without a fragment, and https,
 * or http on a loopback host (any port, RFC 8252 section 7.3). Custom schemes of native apps are refused.
 */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri.length > 2000) return 'must be a URL string of at most 2000 characters';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.hash || uri.includes('#')) return 'must not contain a fragment (#...)';
  if (url.username || url.password) return 'must not contain a user name or password';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'must use https, or http on a loopback address (127.0.0.1, [::1] or localhost)';
}

/** Is this client_id a client ID metadata document URL (rather than an id we issued)? */
export const isMetadataDocumentId = (clientId: string) => /^https?:\/\//i.test(clientId);

export class OAuthClients {
  private readonly clients: Collection<ClientDoc>;
  /** Documents by client_id URL: the fetch under way, then its outcome (a failure too, briefly). */
  private readonly documents = new TtlCache<string, Promise<OAuthClient>>(DOCUMENT_TTL_MS, 1000);

  constructor(
    store: Store,
    /** The guarded outbound client that fetches metadata documents (private addresses refused). */
    private readonly http: HttpClient,
    /**
     * Counts a fetch caused by a request from this client address; the seconds to wait when the address has
     * caused too many, else 0. Anyone can name any URL as a client_id: the service must not fetch for them without limit.
     */
    private readonly countFetch: (address: string) => Promise<number>,
  ) {
    this.clients = store.collection<ClientDoc>('oauth_clients');
  }

  /** RFC 7591 registration: validates the metadata and answers the client information response. */
  async register(meta: Record<string, unknown>): Promise<Record<string, unknown>> {
    const client = parseMetadata(meta, 'dynamic');
    const clientId = randomId('mcpc_', 16);
    let secret: string | undefined;
    if (client.token_endpoint_auth_method !== 'none') {
      secret = randomToken('mcpcs_');
      client.secret_hash = sha256(secret);
    }
    const now = new Date();
    await this.clients.insertOne({ ...client, _id: clientId, client_id: clientId, created_at: now });
    const { secret_hash: _hidden, registration: _how, ...shown } = client;
    return {
      ...shown,
      client_id: clientId,
      client_id_issued_at: Math.floor(now.getTime() / 1000),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }

  /**
   * The client named by client_id, for a request from `address`; an unknown id or an unusable document is
   * `invalid_client`, and too many document fetches for one address `temporarily_unavailable` (429).
   */
  async find(clientId: string, address: string): Promise<OAuthClient> {
    if (isMetadataDocumentId(clientId)) return this.document(clientId, address);
    const doc = /^mcpc_\w{1,40}$/.test(clientId) ? await this.clients.findOne({ _id: clientId }) : null;
    if (!doc)
      throw new OAuthError(
        'invalid_client',
        `Unknown client_id "${clientId.slice(0, 100)}": register the client first (POST /oauth/register) or use a client ID metadata document URL`,
        401,
      );
    return doc;
  }

  /**
   * Checks the client's credentials at the token and revocation endpoints: a public client sends only its
   * client_id; a confidential one its secret, the way it registered (Basic header or form field).
   */
  async authenticate(presented: { clientId?: string; secret?: string; method: 'basic' | 'post' | 'none' }, address: string): Promise<OAuthClient> {
    if (!presented.clientId)
      throw new OAuthError('invalid_client', 'client_id is required (in the form, or with the secret in an Authorization: Basic header)', 401);
    const client = await this.find(presented.clientId, address);
    const expected = client.token_endpoint_auth_method;
    if (expected === 'none') {
      if (presented.secret) throw new OAuthError('invalid_client', 'This client is public (token_endpoint_auth_method "none"): it has no secret to send', 401);
      return client;
    }
    if (!presented.secret || !client.secret_hash)
      throw new OAuthError('invalid_client', `This client authenticates with ${expected}: the client secret is missing`, 401);
    if (!sameSecret(sha256(presented.secret), client.secret_hash)) throw new OAuthError('invalid_client', 'Wrong client secret', 401);
    return client;
  }

  private document(clientId: string, address: string): Promise<OAuthClient> {
    const cached = this.documents.get(clientId);
    if (cached) return cached;
    const problem = metadataUrlProblem(clientId);
    if (problem) return Promise.reject(new OAuthError('invalid_client', `The client_id URL ${problem}`, 401));
    // One fetch per document at a time, whoever asks; its outcome is kept, a failure briefly (unless the
    // fetch was refused for this address only: another address may fetch it).
    const fetched = this.fetchDocument(clientId, address);
    const client = fetched.then((f) => f.client);
    this.documents.set(clientId, client);
    fetched.then(
      (f) => this.documents.set(clientId, client, f.ttlMs),
      (err: unknown) =>
        err instanceof OAuthError && err.status === 429 ? this.documents.delete(clientId) : this.documents.set(clientId, client, FAILED_DOCUMENT_TTL_MS),
    );
    return client;
  }

  private async fetchDocument(clientId: string, address: string): Promise<{ client: OAuthClient; ttlMs: number }> {
    const wait = await this.countFetch(address);
    if (wait)
      throw new OAuthError('temporarily_unavailable', `Too many client ID metadata documents were fetched for your address; try again in ${wait} s`, 429, wait);
    let answer;
    try {
      answer = await this.http.send({
        method: 'GET',
        url: new URL(clientId),
        headers: { accept: 'application/json' },
        timeoutMs: METADATA_FETCH_LIMITS.timeoutMs,
        retry: false,
        followRedirects: false,
      });
    } catch (err) {
      const why =
        err instanceof ToolError
          ? err.message.replace(/the provider('s)?/gi, (m) => (m.endsWith("'s") ? "the client's host's" : 'the host'))
          : 'it could not be fetched';
      throw new OAuthError('invalid_client', `The client ID metadata document at ${clientId} could not be read: ${why}`, 401);
    }
    if (answer.status !== 200)
      throw new OAuthError(
        'invalid_client',
        `The client ID metadata document at ${clientId} answered HTTP ${answer.status}, not 200 with the client's JSON metadata`,
        401,
      );
    if (answer.body === null || typeof answer.body !== 'object' || Array.isArray(answer.body)) {
      throw new OAuthError('invalid_client', `The client ID metadata document at ${clientId} is not a JSON object`, 401);
    }
    const meta = answer.body as Record<string, unknown>;
    if (meta.client_id !== clientId)
      throw new OAuthError(
        'invalid_client',
        `The client ID metadata document at ${clientId} must contain "client_id": "${clientId}" (it has ${JSON.stringify(meta.client_id ?? null)})`,
        401,
      );
    let client: OAuthClient;
    try {
      client = { ...parseMetadata(meta, 'metadata_document'), client_id: clientId };
    } catch (err) {
      if (err instanceof OAuthError)
        throw new OAuthError('invalid_client', `The client ID metadata document at ${clientId} is not usable: ${err.description}`, 401);
      throw err;
    }
    return { client, ttlMs: cacheLifetime(answer.headers['cache-control']) };
  }
}

/** Why a client_id URL cannot name a metadata document (the draft's rules), or null. */
function metadataUrlProblem(clientId: string): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'is not a valid URL';
  }
  if (url.protocol !== 'https:') return 'must use https';
  if (url.pathname === '/' || url.pathname === '') return 'must have a path (e.g. https://app.example/oauth/client.json)';
  if (url.hash || url.username || url.password) return 'must not contain a fragment, user name or password';
  if (/(^|\/)\.\.?(\/|$)/.test(clientId.slice(url.origin.length).split('?')[0])) return 'must not contain "." or ".." path segments';
  return null;
}

/** max-age of a Cache-Control header, kept between one minute and the default lifetime. */
function cacheLifetime(header: unknown): number {
  const m = /max-age=(\d+)/i.exec(String(header ?? ''));
  if (!m) return DOCUMENT_TTL_MS;
  return Math.min(DOCUMENT_TTL_MS, Math.max(60_000, Number(m[1]) * 1000));
}

/** Client metadata (RFC 7591 section 2) as this service supports it; anything unusable is `invalid_client_metadata`. */
function parseMetadata(meta: Record<string, unknown>, registration: OAuthClient['registration']): OAuthClient {
  const bad = (what: string) => new OAuthError('invalid_client_metadata', what);
  const uris = meta.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) throw new OAuthError('invalid_redirect_uri', '"redirect_uris" must be a non-empty array of URLs');
  if (uris.length > MAX_REDIRECT_URIS) throw new OAuthError('invalid_redirect_uri', `"redirect_uris" may hold at most ${MAX_REDIRECT_URIS} URLs`);
  for (const [i, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', `redirect_uris[${i}] ${problem}`);
  }
  const method = (meta.token_endpoint_auth_method ?? (registration === 'dynamic' ? 'client_secret_basic' : 'none')) as TokenAuthMethod;
  if (!TOKEN_AUTH_METHODS.includes(method)) throw bad(`"token_endpoint_auth_method" must be one of ${TOKEN_AUTH_METHODS.join(', ')}`);
  if (registration === 'metadata_document' && method !== 'none')
    throw bad('a client ID metadata document client has no shared secret: its "token_endpoint_auth_method" must be "none"');
  if (registration === 'metadata_document' && ('client_secret' in meta || 'client_secret_expires_at' in meta))
    throw bad('a client ID metadata document must not contain a client secret');
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const v = meta[field];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x))) throw bad(`"${field}" may only contain ${allowed.join(' and ')}`);
  }
  const name = meta.client_name;
  if (name !== undefined && (typeof name !== 'string' || !name.trim() || name.length > MAX_NAME))
    throw bad(`"client_name" must be a non-empty string of at most ${MAX_NAME} characters`);
  // The consent page shows it to the owner: what they read must be what the application registered.
  const hidden = typeof name === 'string' ? hiddenCharacterProblem(name) : null;
  if (hidden) throw bad(`"client_name" ${hidden}`);
  const clientUri = meta.client_uri;
  if (clientUri !== undefined && (typeof clientUri !== 'string' || !/^https?:\/\//.test(clientUri) || clientUri.length > 2000))
    throw bad('"client_uri" must be an http(s) URL');
  return {
    client_id: '',
    client_name: typeof name === 'string' ? name.trim() : 'Unnamed client',
    redirect_uris: uris as string[],
    token_endpoint_auth_method: method,
    registration,
    ...(typeof clientUri === 'string' ? { client_uri: clientUri } : {}),
  };
}
