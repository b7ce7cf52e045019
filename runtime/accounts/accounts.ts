// Stored third-party accounts. Fields come from each provider.yaml; secret fields are encrypted at rest
// with AES-256-GCM under the master key, never returned (a mask shows their last 4 characters) and never
// logged. Decrypted credentials are kept in memory only briefly (KEY_CACHE_MS), for the calls that use them;
// they are never written anywhere (the lookup cache that may keep an account longer keeps it sealed).
//
// An account is pasted by its owner (`auth: token`) or connected by OAuth (`auth: oauth`, provider.yaml
// `connect`): then it also holds the token pair, encrypted apart from its fields, which connections.ts keeps
// fresh. Either kind has a health state (connected, needs_reauth, unreachable) that calls and pages read.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Cancellation } from '../cancellation.ts';
import type { AccountCredentials } from '../engine/engine.ts';
import type { ToolError } from '../tool-error.ts';
import type { Provider } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import { headerValueProblem } from '../http/guard.ts';
import { accountFieldProblem, withFieldDefaults } from '../toolspec/account-fields.ts';
import type { AccountFieldSpec } from '../toolspec/types.ts';
import type { StoreClock } from '../store/clock.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { TtlCache } from '../ttl-cache.ts';

/** A value encrypted by the Vault. */
export interface Sealed {
  v: 1;
  iv: string;
  tag: string;
  data: string;
}

export type AccountState = 'connected' | 'needs_reauth' | 'unreachable';

/** An OAuth connection held by an account. */
export interface ConnectionDoc {
  /** {access_token, refresh_token?}, encrypted together (bound to the account id and "connection"). */
  tokens: Sealed;
  /** Counts the token pairs: a refresh replaces only the pair it refreshed (a guarded update). */
  version: number;
  /** When the access token expires, when the provider said. */
  expires_at: Date | null;
  /** When the current refresh token was issued: a provider's idle expiry counts from here. */
  refreshed_at: Date;
  connected_at: Date;
  /** The choice (Jira site, Supabase project and key) the account was made from: a reconnect picks it again. */
  choice: string | null;
  /** What it reaches, in words ("the Jira site acme (https://acme.atlassian.net)"). */
  says: string;
  /** Whether a refresh token is held. */
  refreshable: boolean;
}

export interface AccountDoc extends Doc {
  /** Whose account it is: the owner's own, or (with `end_user_id`) one of the owner's end users'. */
  owner_id: string;
  /** The end user of the owner who connected it (runtime/access/end-users.ts); absent: the owner's own account. */
  end_user_id?: string;
  kind: string;
  name: string;
  /** Non-secret fields in clear (site URL, e-mail, base URL...). */
  fields: Record<string, string>;
  /** Secret fields, encrypted together as one JSON object. */
  sealed: Sealed | null;
  /** Last 4 characters of each secret, for the mask. */
  hints: Record<string, string>;
  created_at: Date;
  verified_at: Date | null;
  /** Created by the service for one of its own sandboxes (never set through the API): its fields cannot change. */
  sandbox?: true;
  /** How it holds its credentials: pasted by the owner (also when absent) or connected by OAuth. */
  auth?: 'token' | 'oauth';
  connection?: ConnectionDoc;
  /** Its health (absent: connected): needs_reauth refuses every call until the owner acts; unreachable is temporary. */
  state?: AccountState;
  /** Why it is in its state, in words (null when connected). */
  state_reason?: string | null;
  /** When its credentials were last checked (a refresh, a verification, a connect). */
  checked_at?: Date | null;
}

/** The tokens of a new connection (what a token endpoint granted), and what the account is made from. */
export interface ConnectedAccountInput {
  kind: string;
  name: string;
  sandbox: boolean;
  /** The account's fields, and its secret ones (a Supabase key), as the connection found them. */
  fields: Record<string, string>;
  secrets: Record<string, string>;
  tokens: { accessToken: string; refreshToken?: string; expiresIn?: number };
  choice: string | null;
  /** What it reaches, in words. */
  says: string;
  /** Whether the provider's verification request accepted it (false: the provider declares none). */
  verified: boolean;
}

/** What stored accounts need of connections.ts: a renewed connection, and the error of an account waiting for its owner. */
export interface Renewals {
  renew(accountId: string, staleVersion: number, cancellation?: Cancellation): Promise<AccountCredentials>;
  needsOwner(account: { id: string; name: string; kind: string; reason: string }): ToolError;
}

/** Refresh an access token this long before it expires, rather than have a call find it expired. */
export const REFRESH_AHEAD_MS = 60_000;

/** An account's health, with the moment of its last check. */
export const accountState = (doc: AccountDoc): AccountState => doc.state ?? 'connected';

/** AES-256-GCM with a random 96-bit IV per value; the account id is bound as associated data. */
export class Vault {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  seal(plain: Record<string, string>, accountId: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(accountId));
    const data = Buffer.concat([cipher.update(JSON.stringify(plain), 'utf8'), cipher.final()]);
    return { v: 1, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  open(sealed: Sealed, accountId: string): Record<string, string> {
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(Buffer.from(accountId));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  }
}

/** A problem with the fields an owner sent, naming the field. */
export class AccountFieldError extends Error {}

export function parseMasterKey(text: string): Buffer {
  return /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
}

/** An account as the API shows it: fields, a mask of its secrets, how it is held and its health; never a token. */
export function publicAccount(doc: AccountDoc, provider: Provider | undefined): Record<string, unknown> {
  const oauth = doc.auth === 'oauth';
  // A connected account holds only the secrets its connection set; a pasted one says which are missing.
  const secrets = oauth ? Object.keys(doc.hints) : (provider?.spec.account.fields.filter((f) => f.secret).map((f) => f.name) ?? Object.keys(doc.hints));
  const hint = secrets.map((f) => (doc.hints[f] ? `${f}: ••••${doc.hints[f]}` : `${f}: (not set)`)).join(', ');
  // Fields with a default show it when the account was saved before the field existed: it is what calls use.
  const nonSecret = provider?.spec.account.fields.filter((f) => !f.secret) ?? [];
  return {
    id: doc._id,
    kind: doc.kind,
    name: doc.name,
    sandbox: doc.sandbox === true,
    ...withFieldDefaults(doc.fields, nonSecret),
    secret_hint: hint,
    created_at: doc.created_at,
    verified_at: doc.verified_at,
    auth: oauth ? 'oauth' : 'token',
    state: accountState(doc),
    state_reason: doc.state_reason ?? null,
    checked_at: doc.checked_at ?? doc.verified_at ?? null,
    ...(oauth && doc.connection
      ? {
          connection: {
            says: doc.connection.says,
            connected_at: doc.connection.connected_at,
            refreshed_at: doc.connection.refreshed_at,
            expires_at: doc.connection.expires_at,
            refreshable: doc.connection.refreshable,
          },
        }
      : {}),
  };
}

const connectionAad = (accountId: string) => `${accountId}\0connection`;

/** A cached account for calls: its owner, decrypted credentials and what calls must know of its health. */
interface CallEntry {
  ownerId: string;
  credentials: AccountCredentials;
  name: string;
  kind: string;
  state: AccountState;
  reason: string;
  expiresAt: number | null;
}

export class Accounts {
  private readonly accounts: Collection<AccountDoc>;
  /** Account id -> the stored account, sealed (null: no such account), for the hot path; follows the change feed. */
  private readonly docs: TtlCache<string, AccountDoc | null>;
  /** Account id -> owner and decrypted fields (null: no such account), made from `docs`, for KEY_CACHE_MS only. */
  private readonly cache: TtlCache<string, CallEntry | null>;
  /** Set once connections.ts is built (it needs this repository). */
  renewals?: Renewals;

  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly catalog: CatalogSource,
    private readonly vault: Vault,
    cacheMs: number,
    /** The feed that tells every instance of a change (store/changes.ts), so lookups may live longer. */
    changes?: ChangeFeed,
  ) {
    this.accounts = store.collection<AccountDoc>('accounts');
    this.clock = store.clock;
    this.docs = new TtlCache(cacheMs, undefined, changes && { feed: changes, name: 'accounts' });
    this.cache = new TtlCache(cacheMs);
    changes?.follow('accounts', this.cache);
  }

  /** Validates the body of a create (all required fields) or an update (only the fields given). */
  private checkFields(provider: Provider, body: Record<string, unknown>, partial: boolean): { plain: Record<string, string>; secret: Record<string, string> } {
    const known = new Set(provider.spec.account.fields.map((f) => f.name));
    for (const k of Object.keys(body)) {
      if (!known.has(k)) throw new AccountFieldError(`"${k}" is not a field of a ${provider.spec.account.kind} account (fields: ${[...known].join(', ')})`);
    }
    const plain: Record<string, string> = {};
    const secret: Record<string, string> = {};
    for (const f of provider.spec.account.fields) {
      const given = body[f.name];
      // A new account that leaves a field with a default out gets the default (checked like any value).
      const value = !partial && (given === undefined || given === null || given === '') ? (f.default ?? given) : given;
      if (value === undefined || value === null || value === '') {
        if (!partial && (f.required ?? true)) throw new AccountFieldError(`"${f.name}" (${f.title}) is required`);
        continue;
      }
      if (typeof value !== 'string') throw new AccountFieldError(`"${f.name}" must be a string`);
      checkField(f, value);
      const header = [...provider.authHeaders, ...provider.headers].find((h) => h.fields.includes(f.name));
      const problem = header && headerValueProblem(value);
      if (problem)
        throw new AccountFieldError(`"${f.name}" (${f.title}) is sent in the ${header.name} header, so it must be ASCII: it ${problem.replace(/: .*/, '')}`);
      (f.secret ? secret : plain)[f.name] = f.format === 'url' ? value.replace(/\/+$/, '') : value;
    }
    return { plain, secret };
  }

  /** The secret fields encrypted together, and the last 4 characters of each for the mask. */
  private sealed(secrets: Record<string, string>, id: string): Pick<AccountDoc, 'sealed' | 'hints'> {
    return {
      sealed: Object.keys(secrets).length ? this.vault.seal(secrets, id) : null,
      hints: Object.fromEntries(Object.entries(secrets).map(([k, v]) => [k, v.slice(-4)])),
    };
  }

  /** The provider of each account kind, from the catalog in use. */
  get providersByKind(): ReadonlyMap<string, Provider> {
    return new Map([...this.catalog.current.providers.values()].map((p) => [p.spec.account.kind, p]));
  }

  providerFor(kind: unknown): Provider {
    const providers = this.providersByKind;
    const provider = typeof kind === 'string' ? providers.get(kind) : undefined;
    if (!provider) throw new AccountFieldError(`"kind" must be one of: ${[...providers.keys()].join(', ')}`);
    return provider;
  }

  /** A sandbox account: fields the service chose, checked like any, marked so that they never change. */
  createSandbox(ownerId: string, kind: string, name: string, body: Record<string, unknown>): Promise<AccountDoc> {
    return this.create(ownerId, kind, name, body, true);
  }

  async create(ownerId: string, kind: string, name: string, body: Record<string, unknown>, sandbox = false, endUserId?: string): Promise<AccountDoc> {
    const provider = this.providerFor(kind);
    const { plain, secret } = this.checkFields(provider, body, false);
    const id = randomId('acct_');
    const doc: AccountDoc = {
      _id: id,
      owner_id: ownerId,
      ...(endUserId ? { end_user_id: endUserId } : {}),
      kind,
      name,
      fields: plain,
      ...this.sealed(secret, id),
      created_at: this.clock.date(),
      verified_at: null,
      ...(sandbox ? { sandbox: true as const } : {}),
      auth: 'token',
      state: 'connected',
      state_reason: null,
      checked_at: null,
    };
    await this.accounts.insertOne(doc);
    return doc;
  }

  /** A new account connected by OAuth (the owner's, or an end user's); verified by the caller before it is saved. */
  async createConnected(ownerId: string, input: ConnectedAccountInput, endUserId?: string): Promise<AccountDoc> {
    const provider = this.providerFor(input.kind);
    const id = randomId('acct_');
    const now = this.clock.date();
    const doc: AccountDoc = {
      _id: id,
      owner_id: ownerId,
      ...(endUserId ? { end_user_id: endUserId } : {}),
      kind: input.kind,
      name: input.name,
      created_at: now,
      verified_at: input.verified ? now : null,
      ...(input.sandbox ? { sandbox: true as const } : {}),
      ...this.connectedParts(provider, id, input, 1, now),
    };
    await this.accounts.insertOne(doc);
    return doc;
  }

  /**
   * Connects an existing account again, in place (its id, name and every tool bound to it stay): the new
   * grant's tokens and fields replace the old ones; a pasted account becomes a connected one.
   */
  async reconnect(ownerId: string, id: string, input: ConnectedAccountInput): Promise<AccountDoc | null> {
    // The owner's own or an end user's (the flow found it for its holder).
    const doc = await this.accounts.findOne({ _id: id, owner_id: ownerId });
    if (!doc) return null;
    const provider = this.providerFor(doc.kind);
    const now = this.clock.date();
    await this.docs.announce(id);
    const updated = await this.accounts.findOneAndUpdate(
      { _id: id, owner_id: ownerId },
      {
        $set: Object.assign({}, this.connectedParts(provider, id, input, (doc.connection?.version ?? 0) + 1, now), {
          verified_at: input.verified ? now : null,
        }),
      },
    );
    this.forget(id);
    return updated;
  }

  /** Fields, secrets, tokens and health of a connected account, checked and sealed. */
  private connectedParts(provider: Provider, id: string, input: ConnectedAccountInput, version: number, now: Date) {
    // Calls through connect.api read what the connection found; others read the provider's own fields, which
    // the connection must then fill as an owner would (a Supabase project's URL and key).
    const given = Object.assign({}, input.fields, input.secrets);
    const own = new Set(provider.spec.account.fields.map((f) => f.name));
    const { plain, secret } = provider.connect?.api
      ? { plain: connectedFields(input.fields), secret: connectedFields(input.secrets) }
      : this.checkFields(provider, Object.fromEntries(Object.entries(given).filter(([k]) => own.has(k))), false);
    const fields = Object.assign({}, connectedFields(Object.fromEntries(Object.entries(input.fields).filter(([k]) => !own.has(k)))), plain);
    const { accessToken, refreshToken, expiresIn } = input.tokens;
    const connection: ConnectionDoc = {
      tokens: this.vault.seal({ access_token: accessToken, ...(refreshToken ? { refresh_token: refreshToken } : {}) }, connectionAad(id)),
      version,
      expires_at: expiresIn ? new Date(now.getTime() + expiresIn * 1000) : null,
      refreshed_at: now,
      connected_at: now,
      choice: input.choice,
      says: input.says,
      refreshable: Boolean(refreshToken),
    };
    return {
      fields,
      ...this.sealed(secret, id),
      auth: 'oauth' as const,
      connection,
      state: 'connected' as const,
      state_reason: null,
      checked_at: now,
    };
  }

  /** The owner's accounts that need them (every page says so). */
  needingOwner(ownerId: string): Promise<AccountDoc[]> {
    return this.accounts.find({ owner_id: ownerId, end_user_id: null, state: 'needs_reauth' }, { sort: { created_at: 1 } });
  }

  /** Every account connected by OAuth, of every owner (connections.ts keeps them alive). */
  connectedAccounts(): Promise<AccountDoc[]> {
    return this.accounts.find({ auth: 'oauth' });
  }

  /** Any owner's account by id (connections.ts: refreshes and checks). */
  byId(id: string): Promise<AccountDoc | null> {
    return this.accounts.findOne({ _id: id });
  }

  /** The token pair of a connected account. */
  connectionTokens(doc: AccountDoc): { access_token: string; refresh_token?: string } {
    return this.vault.open(doc.connection!.tokens, connectionAad(doc._id)) as { access_token: string; refresh_token?: string };
  }

  /**
   * Stores a refreshed token pair (and the fields the refresh changed) over the pair it refreshed, and only
   * over it: null when another pair replaced it meanwhile (a reconnect). The write is acknowledged before the
   * new access token is used: a rotated refresh token must never be lost.
   */
  async storeRefreshed(
    doc: AccountDoc,
    tokens: { accessToken: string; refreshToken?: string; expiresIn?: number },
    secrets?: Record<string, string>,
  ): Promise<AccountDoc | null> {
    const id = doc._id;
    const now = this.clock.date();
    const refreshToken = tokens.refreshToken ?? this.connectionTokens(doc).refresh_token;
    const set: Record<string, unknown> = {
      'connection.tokens': this.vault.seal({ access_token: tokens.accessToken, ...(refreshToken ? { refresh_token: refreshToken } : {}) }, connectionAad(id)),
      'connection.version': doc.connection!.version + 1,
      'connection.expires_at': tokens.expiresIn ? new Date(now.getTime() + tokens.expiresIn * 1000) : null,
      'connection.refreshable': Boolean(refreshToken),
      ...(tokens.refreshToken ? { 'connection.refreshed_at': now } : {}),
      ...(secrets ? this.sealed(Object.assign({}, doc.sealed ? this.vault.open(doc.sealed, id) : undefined, secrets), id) : {}),
      state: 'connected',
      state_reason: null,
      checked_at: now,
    };
    await this.docs.announce(id);
    const updated = await this.accounts.findOneAndUpdate({ _id: id, 'connection.version': doc.connection!.version }, { $set: set });
    this.forget(id);
    return updated;
  }

  /** Records the account's health; the document as it was before, or null when there is no such account. */
  async setState(id: string, state: AccountState, reason: string | null): Promise<AccountDoc | null> {
    await this.docs.announce(id);
    const before = await this.accounts.findOneAndUpdate(
      { _id: id },
      { $set: { state, state_reason: state === 'connected' ? null : reason, checked_at: this.clock.date() } },
      { returnDocument: 'before' },
    );
    this.forget(id);
    return before;
  }

  /** How many accounts of its own the owner has (its end users' are bounded by theirs) (its quota counts them). */
  count(ownerId: string): Promise<number> {
    return this.accounts.countDocuments({ owner_id: ownerId, end_user_id: null });
  }

  /** The owner's own accounts (its end users' are theirs: listed per end user). */
  list(ownerId: string): Promise<AccountDoc[]> {
    return this.accounts.find({ owner_id: ownerId, end_user_id: null }, { sort: { created_at: 1 } });
  }

  /** One of the owner's own accounts (never an end user's: a tool cannot be bound to it). */
  get(ownerId: string, id: string): Promise<AccountDoc | null> {
    return this.accounts.findOne({ _id: id, owner_id: ownerId, end_user_id: null });
  }

  /** An end user's accounts, newest first; of one kind when `kind` is given. */
  ofEndUser(ownerId: string, endUserId: string, kind?: string): Promise<AccountDoc[]> {
    return this.accounts.find({ owner_id: ownerId, end_user_id: endUserId, ...(kind ? { kind } : {}) }, { sort: { created_at: -1 } });
  }

  /** The accounts of several end users of an owner (a page of them), in one query, newest first. */
  ofEndUsers(ownerId: string, endUserIds: string[]): Promise<AccountDoc[]> {
    return this.accounts.find({ owner_id: ownerId, end_user_id: { $in: endUserIds } }, { sort: { created_at: -1 } });
  }

  /** Removes one account of an end user (replaced by a new one, or refused by its provider). */
  async deleteOfEndUser(ownerId: string, endUserId: string, id: string): Promise<boolean> {
    await this.docs.announce(id);
    const n = await this.accounts.deleteOne({ _id: id, owner_id: ownerId, end_user_id: endUserId });
    this.forget(id);
    return n > 0;
  }

  /** Removes every account of an end user (their deletion); how many. */
  async deleteForEndUser(ownerId: string, endUserId: string): Promise<number> {
    const docs = await this.ofEndUser(ownerId, endUserId);
    for (const doc of docs) await this.docs.announce(doc._id);
    const n = await this.accounts.deleteMany({ owner_id: ownerId, end_user_id: endUserId });
    for (const doc of docs) this.forget(doc._id);
    return n;
  }

  async update(ownerId: string, id: string, name: string | undefined, body: Record<string, unknown>): Promise<AccountDoc | null> {
    const doc = await this.get(ownerId, id);
    if (!doc) return null;
    const provider = this.providerFor(doc.kind);
    if (doc.sandbox && Object.keys(body).length) {
      throw new AccountFieldError(`"${doc.name}" is a sandbox account: the service sets its fields and only its name can change`);
    }
    if (doc.auth === 'oauth' && Object.keys(body).length) {
      throw new AccountFieldError(
        `"${doc.name}" is connected by OAuth: its connection sets its fields; reconnect it to change them (only its name can change here)`,
      );
    }
    const { plain, secret } = this.checkFields(provider, body, true);
    const secrets = Object.assign({}, doc.sealed ? this.vault.open(doc.sealed, id) : undefined, secret);
    // New credentials are unchecked: whatever the old ones' health was, it says nothing of them.
    const set: Record<string, unknown> = Object.keys(body).length
      ? {
          fields: Object.assign({}, doc.fields, plain),
          ...this.sealed(secrets, id),
          verified_at: null,
          state: 'connected',
          state_reason: null,
          checked_at: null,
        }
      : {};
    if (name !== undefined) set.name = name;
    if (!Object.keys(set).length) return doc;
    await this.docs.announce(id);
    const updated = await this.accounts.findOneAndUpdate({ _id: id, owner_id: ownerId }, { $set: set });
    this.forget(id);
    return updated;
  }

  async delete(ownerId: string, id: string): Promise<boolean> {
    await this.docs.announce(id);
    const n = await this.accounts.deleteOne({ _id: id, owner_id: ownerId, end_user_id: null });
    this.forget(id);
    return n > 0;
  }

  async markVerified(id: string): Promise<void> {
    const now = this.clock.date();
    await this.docs.announce(id);
    await this.accounts.updateOne({ _id: id }, { $set: { verified_at: now, state: 'connected', state_reason: null, checked_at: now } });
    this.forget(id);
  }

  /** Decrypted credentials of an owner's account (cached briefly: decryption is costly per call). */
  async credentials(ownerId: string, id: string): Promise<AccountCredentials | null> {
    const entry = await this.entry(id);
    return entry && entry.ownerId === ownerId ? entry.credentials : null;
  }

  /**
   * The credentials a call through the account uses: refused (the ToolError of renewals.needsOwner) while the
   * account needs its owner; a connection whose access token is about to expire is renewed first.
   */
  async forCall(ownerId: string, id: string, cancellation?: Cancellation): Promise<AccountCredentials | null> {
    const entry = await this.entry(id);
    if (!entry || entry.ownerId !== ownerId) return null;
    if (entry.state === 'needs_reauth' && this.renewals) throw this.renewals.needsOwner({ id, name: entry.name, kind: entry.kind, reason: entry.reason });
    const connection = entry.credentials.connection;
    if (connection && entry.expiresAt !== null && entry.expiresAt - this.clock.now() < REFRESH_AHEAD_MS) return connection.renew(cancellation);
    return entry.credentials;
  }

  /** Builds a credentials' object from a stored account (also for connections.ts, after a refresh). */
  credentialsOf(doc: AccountDoc): AccountCredentials {
    const fields = Object.freeze(Object.assign({}, doc.fields, doc.sealed ? this.vault.open(doc.sealed, doc._id) : undefined));
    const credentials: AccountCredentials = doc.sandbox ? { fields, sandboxOwner: doc.owner_id } : { fields };
    if (doc.auth === 'oauth' && doc.connection) {
      const version = doc.connection.version;
      const renewals = this.renewals;
      credentials.connection = {
        accessToken: this.connectionTokens(doc).access_token,
        renew: (cancellation) => (renewals ? renewals.renew(doc._id, version, cancellation) : Promise.reject(new Error('connections are not set up'))),
      };
    }
    return credentials;
  }

  /** Drops what this instance keeps of the account (after a change here). */
  private forget(id: string): void {
    this.docs.delete(id);
    this.cache.delete(id);
  }

  private entry(id: string): Promise<CallEntry | null> {
    return this.cache.fetch(id, async () => {
      const doc = await this.docs.fetch(id, () => this.accounts.findOne({ _id: id }));
      return (
        doc && {
          ownerId: doc.owner_id,
          credentials: this.credentialsOf(doc),
          name: doc.name,
          kind: doc.kind,
          state: accountState(doc),
          reason: doc.state_reason ?? '',
          expiresAt: doc.auth === 'oauth' ? (doc.connection?.expires_at?.getTime() ?? null) : null,
        }
      );
    });
  }
}

/** A connection's fields as strings without control characters (what a provider answered, stored as is). */
function connectedFields(values: Record<string, string>): Record<string, string> {
  // eslint-disable-next-line no-control-regex -- what a provider answered, kept as one line of text
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, String(v).replace(/[\x00-\x1f\x7f]/g, ' ')]));
}

function checkField(f: AccountFieldSpec, value: string): void {
  const problem = accountFieldProblem(f, value);
  if (problem) throw new AccountFieldError(problem);
}
