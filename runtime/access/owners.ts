// Account owners and their management tokens (`mcpo_...`, stored as SHA-256).
import type { Collection, Doc, Store } from '../store/index.ts';
import { randomId, randomToken, sha256 } from '../secrets.ts';

export interface OwnerDoc extends Doc {
  email: string;
  created_at: Date;
}

export interface OwnerTokenDoc extends Doc {
  owner_id: string;
  hash: string;
  prefix: string;
  created_at: Date;
}

export const OWNER_TOKEN_PREFIX = 'mcpo_';

export class Owners {
  private readonly owners: Collection<OwnerDoc>;
  private readonly tokens: Collection<OwnerTokenDoc>;

  constructor(store: Store) {
    this.owners = store.collection<OwnerDoc>('owners');
    this.tokens = store.collection<OwnerTokenDoc>('owner_tokens');
  }

  /** Creates an owner and its first management token (returned once). */
  async create(email: string): Promise<{ owner: OwnerDoc; token: string }> {
    const owner: OwnerDoc = { _id: randomId('own_'), email: email.toLowerCase(), created_at: new Date() };
    await this.owners.insertOne(owner);
    return { owner, token: await this.issueToken(owner._id) };
  }

  async issueToken(ownerId: string): Promise<string> {
    const token = randomToken(OWNER_TOKEN_PREFIX);
    await this.tokens.insertOne({ _id: randomId('otk_'), owner_id: ownerId, hash: sha256(token), prefix: token.slice(0, 10), created_at: new Date() });
    return token;
  }

  get(id: string): Promise<OwnerDoc | null> {
    return this.owners.findOne({ _id: id });
  }

  /** The owner a bearer token belongs to, or null. */
  async authenticate(token: string): Promise<OwnerDoc | null> {
    if (!token.startsWith(OWNER_TOKEN_PREFIX)) return null;
    const t = await this.tokens.findOne({ hash: sha256(token) });
    return t ? this.owners.findOne({ _id: t.owner_id }) : null;
  }
}
