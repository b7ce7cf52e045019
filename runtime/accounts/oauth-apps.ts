// The OAuth apps the operator registered at the providers (one per provider with a `connect` block): from the
// environment (OAUTH_<PROVIDER>_CLIENT_ID / _CLIENT_SECRET), or set through the operator API. A client secret
// is encrypted at rest like an account's secrets, and never returned, logged or audited. A provider without an
// app offers the token form only.
import type { Collection, Doc, Store } from '../store/port.ts';
import { oauthEnvName } from '../toolspec/language.ts';
import { TtlCache } from '../ttl-cache.ts';
import type { Sealed, Vault } from './accounts.ts';
import type { OAuthApp } from './token-endpoint.ts';

interface OAuthAppDoc extends Doc {
  /** _id is the provider id. */
  client_id: string;
  secret: Sealed;
  updated_at: Date;
}

/** An app as the operator API shows it: never its secret. */
export interface PublicOAuthApp {
  provider: string;
  client_id: string;
  /** Where it is configured: the environment wins over the operator API. */
  source: 'environment' | 'api';
  updated_at: Date | null;
}

const secretAad = (provider: string) => `oauth app\0${provider}`;

export { oauthEnvName };

export class OAuthApps {
  private readonly apps: Collection<OAuthAppDoc>;
  /** Apps set through the API, briefly cached (pages ask on every view; other instances see a change within it). */
  private readonly cache: TtlCache<string, OAuthAppDoc | null>;

  constructor(
    store: Store,
    private readonly vault: Vault,
    /** From the environment, by the <PROVIDER> of OAUTH_<PROVIDER>_CLIENT_ID. */
    private readonly environment: ReadonlyMap<string, OAuthApp>,
    cacheMs: number,
  ) {
    this.apps = store.collection<OAuthAppDoc>('oauth_apps');
    this.cache = new TtlCache(cacheMs);
  }

  /** The provider's app (with its secret), or null when none is configured. */
  async get(provider: string): Promise<OAuthApp | null> {
    const env = this.fromEnvironment(provider);
    if (env) return env;
    const doc = await this.stored(provider);
    return doc && { clientId: doc.client_id, clientSecret: this.vault.open(doc.secret, secretAad(provider)).secret };
  }

  /** Whether the provider has an app (without opening its secret). */
  async has(provider: string): Promise<boolean> {
    return this.fromEnvironment(provider) !== undefined || (await this.stored(provider)) !== null;
  }

  async describe(provider: string): Promise<PublicOAuthApp | null> {
    const env = this.fromEnvironment(provider);
    if (env) return { provider, client_id: env.clientId, source: 'environment', updated_at: null };
    const doc = await this.stored(provider);
    return doc && { provider, client_id: doc.client_id, source: 'api', updated_at: doc.updated_at };
  }

  isFromEnvironment(provider: string): boolean {
    return this.fromEnvironment(provider) !== undefined;
  }

  private fromEnvironment(provider: string): OAuthApp | undefined {
    return this.environment.get(oauthEnvName(provider));
  }

  async set(provider: string, app: OAuthApp): Promise<void> {
    const doc = { client_id: app.clientId, secret: this.vault.seal({ secret: app.clientSecret }, secretAad(provider)), updated_at: new Date() };
    await this.apps.updateOne({ _id: provider }, { $set: doc }, { upsert: true });
    this.cache.delete(provider);
  }

  async remove(provider: string): Promise<boolean> {
    const n = await this.apps.deleteOne({ _id: provider });
    this.cache.delete(provider);
    return n > 0;
  }

  private async stored(provider: string): Promise<OAuthAppDoc | null> {
    let doc = this.cache.get(provider);
    if (doc === undefined) {
      doc = await this.apps.findOne({ _id: provider });
      this.cache.set(provider, doc);
    }
    return doc;
  }
}
