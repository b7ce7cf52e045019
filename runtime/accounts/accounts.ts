// Stored third-party accounts. Fields come from each provider.yaml; secret fields are encrypted at rest
// with AES-256-GCM under the master key, never returned (a mask shows their last 4 characters) and never
// logged. Decrypted credentials are kept in memory only briefly (the lookup cache, KEY_CACHE_MS), for
// the calls that use them; they are never written anywhere.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { AccountCredentials } from '../engine/engine.ts';
import type { Provider } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import { headerValueProblem } from '../http/guard.ts';
import { accountFieldProblem, withFieldDefaults } from '../toolspec/account-fields.ts';
import type { AccountFieldSpec } from '../toolspec/types.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import { TtlCache } from '../ttl-cache.ts';

interface Sealed {
  v: 1;
  iv: string;
  tag: string;
  data: string;
}

export interface AccountDoc extends Doc {
  owner_id: string;
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
}

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

export function publicAccount(doc: AccountDoc, provider: Provider | undefined): Record<string, unknown> {
  const secrets = provider?.spec.account.fields.filter((f) => f.secret).map((f) => f.name) ?? Object.keys(doc.hints);
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
  };
}

export class Accounts {
  private readonly accounts: Collection<AccountDoc>;
  /** Account id -> owner and decrypted fields (null: no such account), for the hot path. */
  private readonly cache: TtlCache<string, { ownerId: string; credentials: AccountCredentials } | null>;

  constructor(
    store: Store,
    private readonly catalog: CatalogSource,
    private readonly vault: Vault,
    cacheMs: number,
  ) {
    this.accounts = store.collection<AccountDoc>('accounts');
    this.cache = new TtlCache(cacheMs);
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

  async create(ownerId: string, kind: string, name: string, body: Record<string, unknown>, sandbox = false): Promise<AccountDoc> {
    const provider = this.providerFor(kind);
    const { plain, secret } = this.checkFields(provider, body, false);
    const id = randomId('acct_');
    const doc: AccountDoc = {
      _id: id,
      owner_id: ownerId,
      kind,
      name,
      fields: plain,
      ...this.sealed(secret, id),
      created_at: new Date(),
      verified_at: null,
      ...(sandbox ? { sandbox: true as const } : {}),
    };
    await this.accounts.insertOne(doc);
    return doc;
  }

  /** How many accounts the owner has (its quota counts them). */
  count(ownerId: string): Promise<number> {
    return this.accounts.countDocuments({ owner_id: ownerId });
  }

  list(ownerId: string): Promise<AccountDoc[]> {
    return this.accounts.find({ owner_id: ownerId }, { sort: { created_at: 1 } });
  }

  get(ownerId: string, id: string): Promise<AccountDoc | null> {
    return this.accounts.findOne({ _id: id, owner_id: ownerId });
  }

  async update(ownerId: string, id: string, name: string | undefined, body: Record<string, unknown>): Promise<AccountDoc | null> {
    const doc = await this.get(ownerId, id);
    if (!doc) return null;
    const provider = this.providerFor(doc.kind);
    if (doc.sandbox && Object.keys(body).length) {
      throw new AccountFieldError(`"${doc.name}" is a sandbox account: the service sets its fields and only its name can change`);
    }
    const { plain, secret } = this.checkFields(provider, body, true);
    const secrets = { ...(doc.sealed ? this.vault.open(doc.sealed, id) : {}), ...secret };
    const set: Record<string, unknown> = {
      fields: { ...doc.fields, ...plain },
      ...this.sealed(secrets, id),
      verified_at: null,
    };
    if (name !== undefined) set.name = name;
    const updated = await this.accounts.findOneAndUpdate({ _id: id, owner_id: ownerId }, { $set: set });
    this.cache.delete(id);
    return updated;
  }

  async delete(ownerId: string, id: string): Promise<boolean> {
    const n = await this.accounts.deleteOne({ _id: id, owner_id: ownerId });
    this.cache.delete(id);
    return n > 0;
  }

  async markVerified(id: string): Promise<void> {
    await this.accounts.updateOne({ _id: id }, { $set: { verified_at: new Date() } });
  }

  /** Decrypted credentials of an owner's account (cached briefly: decryption is costly per call). */
  async credentials(ownerId: string, id: string): Promise<AccountCredentials | null> {
    let entry = this.cache.get(id);
    if (entry === undefined) {
      const doc = await this.accounts.findOne({ _id: id });
      const fields = doc && Object.freeze({ ...doc.fields, ...(doc.sealed ? this.vault.open(doc.sealed, id) : {}) });
      entry = doc && { ownerId: doc.owner_id, credentials: doc.sandbox ? { fields: fields!, sandboxOwner: doc.owner_id } : { fields: fields! } };
      this.cache.set(id, entry);
    }
    return entry && entry.ownerId === ownerId ? entry.credentials : null;
  }
}

function checkField(f: AccountFieldSpec, value: string): void {
  const problem = accountFieldProblem(f, value);
  if (problem) throw new AccountFieldError(problem);
}
