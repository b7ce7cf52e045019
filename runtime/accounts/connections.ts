// Connected accounts stay valid: a connection's tokens are refreshed before they expire, and once when a
// provider refuses the access token; an account a provider will not renew says it needs its owner, and every
// call through it is refused until the owner reconnects it.
//
// One refresh per account at a time, across every instance and worker: in a process, callers share one
// refresh; across processes, a lease in the store (store/lease.ts) lets one process ask the provider while the
// others wait for the new token pair to appear in the store. A rotated refresh token is written (and the write
// acknowledged) before the new access token is used: Atlassian revokes every token of a grant whose spent
// refresh token comes back after its 10-minute leeway, so losing the new one would lose the account.
//
// Every change of an account's health (connected, needs_reauth, unreachable) is in the audit trail and goes
// to the owner's webhook (state-webhooks.ts); an owner's own account that comes to need its owner is also
// e-mailed to them (the AccountAlerts seam, when e-mail is on). An end user's is not: only the end user can
// reconnect it (their next call answers with the connect link), and one e-mail per end user would bury the owner.
import type { Cancellation } from '../cancellation.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import type { AccountCredentials, Engine } from '../engine/engine.ts';
import type { Logger } from '../log.ts';
import type { AccountAlerts } from '../mail/owner-alerts.ts';
import { Lease } from '../store/lease.ts';
import type { Store } from '../store/port.ts';
import { ToolError } from '../tool-error.ts';
import type { Provider } from '../toolspec/catalog.ts';
import { type AccountDoc, type AccountState, type Accounts, type Renewals, accountState } from './accounts.ts';
import type { StateWebhooks } from './state-webhooks.ts';
import { type OAuthApp, TokenError, type TokenEndpoint, type TokenSet } from './token-endpoint.ts';

/** How long one process may hold an account's refresh (a token request and a store write, with margin). */
const REFRESH_LEASE_MS = 45_000;
/** How often a process waiting for another's refresh looks for the new token pair. */
const WAIT_STEP_MS = 100;
/** Every connected account is checked (a refresh is a check) at least this often. */
export const CHECK_EVERY_MS = 24 * 3_600_000;
const DAY_MS = 86_400_000;

export interface ConnectionsOptions {
  store: Store;
  accounts: Accounts;
  tokens: TokenEndpoint;
  engine: Engine;
  /** The OAuth app of a provider, or of an owner's sandbox (null: none configured). */
  appFor(provider: Provider, sandboxOwner: string | undefined): Promise<OAuthApp | null>;
  audit: AuditTrail;
  webhooks: StateWebhooks;
  /** E-mail to an owner whose own account needs reconnecting (absent when e-mail is off). */
  alerts?: AccountAlerts;
  logger: Logger;
  /** The service's public URL (the reconnect links), read when needed: it is completed once the port is known. */
  site: { publicUrl: string };
  /** This process, as lease holders name it. */
  instance: string;
  timeoutMs: number;
}

/** The page that explains why an account needs its owner and starts its reconnection. */
export const reconnectPath = (accountId: string) => `/accounts/${encodeURIComponent(accountId)}/reconnect`;

export class Connections implements Renewals {
  /** Refreshes this process is running, by account: every caller of one account waits for the same one. */
  private readonly running = new Map<string, Promise<AccountCredentials>>();

  constructor(private readonly o: ConnectionsOptions) {
    o.accounts.renewals = this;
  }

  /** The refusal of a call through an account that needs its owner: nothing is sent, nothing charged. */
  needsOwner(account: { id: string; name: string; kind: string; reason: string }): ToolError {
    const link = this.o.site.publicUrl + reconnectPath(account.id);
    const title = this.o.accounts.providersByKind.get(account.kind)?.spec.title ?? account.kind;
    const why = account.reason ? ` (${account.reason.replace(/[.\s]+$/, '')})` : '';
    return new ToolError(
      'account_needs_reauth',
      `The ${title} account “${account.name}” needs its owner${why}: calls through it are refused until the owner reconnects it at ${link}`,
      { refund: true, details: { account: { id: account.id, name: account.name }, reconnect_url: link } },
    );
  }

  /**
   * The account's credentials with a connection newer than `staleVersion`: made by this call, or by whoever
   * renewed it meanwhile (another call, another instance).
   */
  renew(accountId: string, staleVersion: number, cancellation?: Cancellation): Promise<AccountCredentials> {
    let running = this.running.get(accountId);
    if (!running) {
      running = this.renewOnce(accountId, staleVersion).finally(() => this.running.delete(accountId));
      this.running.set(accountId, running);
    }
    // One caller going away does not stop the refresh the others wait for.
    return cancellation ? abortable(running, cancellation) : running;
  }

  private async renewOnce(accountId: string, staleVersion: number): Promise<AccountCredentials> {
    const lease = new Lease(this.o.store, `account-refresh:${accountId}`, this.o.instance);
    const deadline = Date.now() + REFRESH_LEASE_MS + this.o.timeoutMs;
    for (;;) {
      const doc = await this.connected(accountId);
      if (doc.connection!.version > staleVersion) return this.o.accounts.credentialsOf(doc);
      if (await lease.acquire(REFRESH_LEASE_MS)) break;
      if (Date.now() > deadline)
        throw new ToolError('provider_error', 'Another instance of the service is renewing this connection and has not finished; try again', {
          retryable: true,
        });
      await sleep(WAIT_STEP_MS + Math.random() * WAIT_STEP_MS);
    }
    try {
      // The pair as it is now: another process may have renewed it between our look and the lease.
      const doc = await this.connected(accountId);
      if (doc.connection!.version > staleVersion) return this.o.accounts.credentialsOf(doc);
      return await this.refresh(doc);
    } finally {
      await lease.release().catch((err) => this.o.logger.error({ err, accountId }, 'refresh lease not released'));
    }
  }

  /** The connected account, or the error a call gets when it is gone or needs its owner. */
  private async connected(accountId: string): Promise<AccountDoc> {
    const doc = await this.o.accounts.byId(accountId);
    if (!doc) throw new ToolError('account_missing', 'The account was deleted; bind another account to the tool');
    if (accountState(doc) === 'needs_reauth') throw this.needsOwner({ id: doc._id, name: doc.name, kind: doc.kind, reason: doc.state_reason ?? '' });
    if (doc.auth !== 'oauth' || !doc.connection) throw new ToolError('internal_error', 'The account is not connected by OAuth', { refund: true });
    return doc;
  }

  /** Asks the provider for a new token pair (with the lease held) and stores it; the fresh credentials. */
  private async refresh(doc: AccountDoc): Promise<AccountCredentials> {
    const provider = this.o.accounts.providerFor(doc.kind);
    const connect = provider.connect;
    const sandboxOwner = doc.sandbox ? doc.owner_id : undefined;
    const { refresh_token: refreshToken } = this.o.accounts.connectionTokens(doc);
    if (!connect) throw await this.changeState(doc, 'needs_reauth', `${provider.spec.title} no longer declares how to connect: add its credentials instead`);
    // Without a refresh token there is nothing to renew: the access token itself was refused.
    if (!refreshToken) throw await this.changeState(doc, 'needs_reauth', `${connect.spec.by} refused the access token (the access was revoked)`);
    const app = await this.o.appFor(provider, sandboxOwner);
    if (!app)
      throw new ToolError('provider_error', `No OAuth app of ${connect.spec.by} is configured on this service any more: its operator must set one up`, {
        retryable: true,
      });
    let tokens: TokenSet;
    try {
      tokens = await this.o.tokens.refresh({ spec: connect.spec, by: connect.spec.by, app, sandboxOwner, timeoutMs: this.o.timeoutMs }, refreshToken);
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      if (err.kind === 'refused') throw await this.changeState(doc, 'needs_reauth', err.message);
      if (err.kind === 'failed') await this.changeState(doc, 'unreachable', err.message);
      throw new ToolError('provider_error', `Could not renew the connection: ${err.message}`, { retryable: err.kind === 'failed' });
    }
    // Stored first (a rotated refresh token is good once): then, for a provider whose calls send what the
    // connection found (a Supabase project's key), that is asked again with the new access token.
    let stored = await this.o.accounts.storeRefreshed(doc, tokens);
    if (!stored) return this.o.accounts.credentialsOf(await this.connected(doc._id));
    if (!connect.api && connect.discover && stored.connection!.choice) stored = await this.refind(provider, stored, tokens.accessToken);
    this.o.logger.info({ accountId: doc._id, kind: doc.kind, version: stored.connection!.version }, 'connection refreshed');
    await this.stateChanged(doc, 'connected', null);
    return this.o.accounts.credentialsOf(stored);
  }

  /** A refreshed connection's choice found again (a project key rotated since): the stored fields follow. */
  private async refind(provider: Provider, doc: AccountDoc, accessToken: string): Promise<AccountDoc> {
    const choice = doc.connection!.choice!;
    const grant = { accessToken, grant: {}, sandboxOwner: doc.sandbox ? doc.owner_id : undefined };
    try {
      const found = await this.o.engine.connectChoices(provider, grant);
      const chosen = found.choices.find((c) => c.id === choice);
      if (!chosen) throw await this.changeState(doc, 'needs_reauth', `what this account was connected to (${choice}) is no longer in the grant`);
      const account = await this.o.engine.connectAccount(provider, grant, chosen);
      return (await this.o.accounts.storeRefreshed(doc, { accessToken }, account.secrets)) ?? doc;
    } catch (err) {
      if (!(err instanceof ToolError) || err.code === 'account_needs_reauth') throw err;
      // The tokens are stored; the fields stay as they were and the call goes on with them.
      this.o.logger.warn({ accountId: doc._id, code: err.code }, 'connection refreshed, but what it reaches could not be read again');
      return doc;
    }
  }

  /** Records an account's health (audited and sent to the webhook when it changed). */
  async setState(accountId: string, state: AccountState, reason: string | null): Promise<void> {
    const before = await this.o.accounts.setState(accountId, state, reason);
    if (before) await this.stateChanged(before, state, reason);
  }

  /**
   * The health a failed check says (a verification, a call that could not renew): refused credentials, a
   * scope or site gone -> needs_reauth; no answer -> unreachable; anything else says nothing of the account.
   */
  async checkFailed(accountId: string, err: ToolError): Promise<void> {
    if (err.code === 'account_needs_reauth') return; // recorded where it was found
    if (err.code === 'unauthorized' || err.code === 'forbidden') await this.setState(accountId, 'needs_reauth', err.message);
    else if (err.retryable && err.code !== 'rate_limited') await this.setState(accountId, 'unreachable', err.message);
  }

  /** Records a change of health and returns the ToolError a call gets for it. */
  private async changeState(doc: AccountDoc, state: AccountState, reason: string): Promise<ToolError> {
    // The state as the write found it: of two instances that meet the same refusal, one tells of the change.
    const before = await this.o.accounts.setState(doc._id, state, reason);
    if (before) await this.stateChanged(before, state, reason);
    return state === 'needs_reauth'
      ? this.needsOwner({ id: doc._id, name: doc.name, kind: doc.kind, reason })
      : new ToolError('provider_error', reason, { retryable: true });
  }

  /**
   * After an account's health was written: when it changed (from `before`), an audit event by the service, an
   * event to the owner's webhook and, when an owner's own account comes to need its owner, an e-mail to them.
   */
  async stateChanged(before: AccountDoc, state: AccountState, reason: string | null): Promise<void> {
    const previous = accountState(before);
    if (previous === state) return;
    this.o.logger.info({ accountId: before._id, kind: before.kind, from: previous, to: state }, 'account state changed');
    await this.o.audit.record(undefined, {
      action: 'account.state',
      owner_id: before.owner_id,
      actor: { type: 'service' },
      target: { type: 'account', id: before._id, name: before.name },
      changes: { state: { from: previous, to: state }, reason },
    });
    const reconnectUrl = this.o.site.publicUrl + reconnectPath(before._id);
    await this.o.webhooks.accountStateChanged(before, previous, state, reason, reconnectUrl);
    if (state === 'needs_reauth' && !before.end_user_id)
      await this.o.alerts?.accountNeedsReconnect({
        ownerId: before.owner_id,
        account: { id: before._id, name: before.name },
        provider: this.o.accounts.providersByKind.get(before.kind)?.spec.title ?? before.kind,
        reason,
        reconnectUrl,
      });
  }

  /**
   * Keeps connections alive: each connected account whose refresh token nears its provider's idle expiry
   * (connect.refresh_idle_days: refreshed once a third of it has passed) or that was not checked for a day
   * is refreshed, which also tells whether the grant still holds. Run by one instance at a time.
   */
  async keepAlive(now = this.o.store.clock.date()): Promise<{ checked: number; needsOwner: number }> {
    const lease = new Lease(this.o.store, 'connections-keepalive', this.o.instance);
    if (!(await lease.acquire(10 * 60_000))) return { checked: 0, needsOwner: 0 };
    try {
      let checked = 0;
      let needsOwner = 0;
      for (const doc of await this.o.accounts.connectedAccounts()) {
        if (!this.due(doc, now)) continue;
        checked++;
        try {
          await this.renew(doc._id, doc.connection!.version);
        } catch (err) {
          if (!(err instanceof ToolError)) this.o.logger.error({ err, accountId: doc._id }, 'connection check failed');
          else if (err.code === 'account_needs_reauth') needsOwner++;
        }
      }
      return { checked, needsOwner };
    } finally {
      await lease.release();
    }
  }

  private due(doc: AccountDoc, now: Date): boolean {
    const c = doc.connection!;
    if (accountState(doc) === 'needs_reauth' || !c.refreshable) return false;
    const idleDays = this.o.accounts.providersByKind.get(doc.kind)?.connect?.spec.refresh_idle_days;
    const sinceRefresh = now.getTime() - c.refreshed_at.getTime();
    const sinceCheck = now.getTime() - (doc.checked_at ?? c.refreshed_at).getTime();
    return sinceCheck >= CHECK_EVERY_MS || (idleDays !== undefined && sinceRefresh >= (idleDays * DAY_MS) / 3);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`, or the caller's cancellation first. */
function abortable<T>(promise: Promise<T>, cancellation: Cancellation): Promise<T> {
  if (cancellation.aborted) return Promise.reject(cancelledWhileRenewing());
  return new Promise<T>((resolve, reject) => {
    const forget = cancellation.onAbort(() => reject(cancelledWhileRenewing()));
    promise.then(resolve, reject).finally(forget);
  });
}

const cancelledWhileRenewing = () => new ToolError('cancelled', 'The call was cancelled while its connection was being renewed', { refund: true });
