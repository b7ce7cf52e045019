// The connect flow (OAuth 2.0 authorization code, RFC 6749 §4.1, with PKCE where the provider verifies it):
//
//   create   POST /api/accounts/connect (or .../reconnect): a flow for one owner and provider; its start URL
//   begin    GET /connect/start: in the browser of that owner, signed in; `state` is made and bound to this
//            browser session; on to the provider's consent page
//   callback GET /connect/callback: the state is looked up, checked (same browser, in time, once), the code
//            exchanged; what the grant reaches is found (connect.discover); with one thing to connect (or the
//            one a reconnect had), the account is made, verified and saved; with several, the owner picks
//   choose   the picker's answer: the account is made as above
//
// Nothing is saved until the account is whole and verified; every way a flow can end is in the audit trail,
// in words. The tokens of a grant waiting for the owner's pick are kept encrypted in the flow, which expires.
// A flow names who will hold the account (`holder`): an owner, or one of the owner's end users (connect-sessions.ts),
// each bound to a browser session of their own. An end user holds one account per provider: connecting again
// replaces it in place.
import { createHash } from 'node:crypto';
import { type OwnerLimits, QuotaExceededError } from '../access/owner-limits.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import type { RequestInfo } from '../audit/request-context.ts';
import type { AccountCredentials, Engine, Grant } from '../engine/engine.ts';
import type { ConnectChoice, ConnectedAccount } from '../plugin-api.ts';
import { randomId, randomToken, sha256 } from '../secrets.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { ToolError } from '../tool-error.ts';
import type { Provider } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import { type AccountDoc, AccountFieldError, type Accounts, type Sealed, type Vault, accountState } from './accounts.ts';
import type { Connections } from './connections.ts';
import { type OAuthApp, TokenError, type TokenEndpoint, type TokenSet } from './token-endpoint.ts';

/** A start URL works this long; so does a `state` once the browser is at the provider. */
export const FLOW_MINUTES = 10;
/** The owner has this long to pick among several sites or projects. */
const CHOOSE_MINUTES = 30;

export const CALLBACK_PATH = '/connect/callback';
export const START_PATH = '/connect/start';
export const CHOOSE_PATH = '/connect/choose';

type Stage = 'created' | 'authorizing' | 'exchanging' | 'choosing' | 'done' | 'failed';

interface FlowDoc extends Doc {
  /** Who will hold the account. */
  holder: { owner_id: string; end_user_id?: string };
  provider: string;
  name: string;
  /** Reconnect in place: the account that keeps its id and tools. */
  account_id: string | null;
  /** Against the owner's own sandbox of the provider (runtime/sandbox/). */
  sandbox: boolean;
  /** SHA-256 of the browser session the flow is bound to (null until begin, for a flow made with an owner token). */
  browser: string | null;
  state_hash: string | null;
  /** The PKCE verifier, sealed. */
  verifier: Sealed | null;
  /** A path of this service to return to. */
  return_to: string;
  stage: Stage;
  created_at: Date;
  expires_at: Date;
  /** A grant waiting for the owner's pick. */
  pending: { tokens: Sealed; expires_in: number | null; grant: Record<string, string>; question: string; choices: ConnectChoice[] } | null;
}

/** Who is in the browser: the signed-in owner (or an end user of theirs) and the SHA-256 of their session id. */
export interface Browser {
  ownerId: string;
  session: string;
  endUserId?: string;
}

/** Whether the browser's person is the flow's holder. */
const holds = (flow: FlowDoc, browser: Browser) =>
  flow.holder.owner_id === browser.ownerId && (flow.holder.end_user_id ?? null) === (browser.endUserId ?? null);

export interface FlowStart {
  ownerId: string;
  /** An end user of the owner who will hold the account. */
  endUserId?: string;
  provider: Provider;
  name: string;
  accountId?: string;
  sandbox: boolean;
  /** The session hash of the browser that asked; null for an owner token (the owner signs in at the start URL). */
  browser: string | null;
  returnTo: string;
}

/** How a flow step ended: on to somewhere, or a page that says what happened. */
export type FlowOutcome =
  | { kind: 'redirect'; to: string }
  | { kind: 'done'; account: AccountDoc; reconnected: boolean; says: string; to: string }
  | { kind: 'failed'; title: string; message: string; to: string };

/** The picker page's content. */
export interface ChoiceView {
  flowId: string;
  provider: string;
  by: string;
  name: string;
  question: string;
  choices: ConnectChoice[];
  reconnect: boolean;
}

export interface ConnectFlowsOptions {
  store: Store;
  vault: Vault;
  accounts: Accounts;
  connections: Connections;
  catalog: CatalogSource;
  engine: Engine;
  tokens: TokenEndpoint;
  appFor(provider: Provider, sandboxOwner: string | undefined): Promise<OAuthApp | null>;
  /** The address a browser opens for a provider's authorize URL (a sandbox's pages are served through this service). */
  browserUrl(url: URL, provider: Provider, sandboxOwner: string | undefined): URL;
  audit: AuditTrail;
  /** A new connected account counts against the owner's quota of accounts like a pasted one. */
  ownerLimits: OwnerLimits;
  site: { publicUrl: string };
  timeoutMs: number;
}

const verifierAad = (flowId: string) => `flow verifier\0${flowId}`;
const pendingAad = (flowId: string) => `flow tokens\0${flowId}`;
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** A failure of the flow, said in words; it ends the flow and is audited. */
class FlowFailure extends Error {
  constructor(
    readonly title: string,
    message: string,
    /** A short code for the audit trail (state_expired, access_denied, token_refused...). */
    readonly reason: string,
    /** Whether it ends the flow: someone else's browser trying it does not. */
    readonly ends = true,
  ) {
    super(message);
  }
}

export class ConnectFlows {
  private readonly flows: Collection<FlowDoc>;

  constructor(private readonly o: ConnectFlowsOptions) {
    this.flows = o.store.collection<FlowDoc>('connect_flows');
  }

  get redirectUri(): string {
    return this.o.site.publicUrl + CALLBACK_PATH;
  }

  /** A new flow; its start URL is what the owner's browser opens (it carries no credential). */
  async create(start: FlowStart): Promise<{ id: string; url: string; expires_at: Date }> {
    const now = this.o.store.clock.date();
    const doc: FlowDoc = {
      _id: randomId('cf_', 16),
      holder: { owner_id: start.ownerId, ...(start.endUserId ? { end_user_id: start.endUserId } : {}) },
      provider: start.provider.spec.id,
      name: start.name,
      account_id: start.accountId ?? null,
      sandbox: start.sandbox,
      browser: start.browser,
      state_hash: null,
      verifier: null,
      return_to: start.returnTo,
      stage: 'created',
      created_at: now,
      expires_at: minutesFrom(now, FLOW_MINUTES),
      pending: null,
    };
    await this.flows.insertOne(doc);
    return { id: doc._id, url: `${this.o.site.publicUrl}${START_PATH}?flow=${doc._id}`, expires_at: doc.expires_at };
  }

  /** In the owner's signed-in browser: binds the flow to it and sends it to the provider's consent page. */
  async begin(flowId: string, browser: Browser, request: RequestInfo): Promise<FlowOutcome> {
    const flow = await this.flows.findOne({ _id: flowId });
    try {
      if (!flow || flow.expires_at <= this.o.store.clock.date() || !['created', 'authorizing'].includes(flow.stage))
        throw new FlowFailure(
          'This connection link no longer works',
          'It expired, or the connection it started has ended. Start again from the Accounts page.',
          'start_expired',
        );
      if (!holds(flow, browser))
        throw new FlowFailure(
          'This connection belongs to another account',
          'It was started for another account of this service. Sign out, sign in with that account, and open the link again.',
          'start_foreign',
          false,
        );
      if (flow.browser && flow.browser !== browser.session)
        throw new FlowFailure(
          'This connection was started in another browser',
          'A connection finishes in the browser session that started it. Start again from the Accounts page here.',
          'start_foreign',
          false,
        );
      const { provider, connect } = this.providerOf(flow);
      const sandboxOwner = flow.sandbox ? flow.holder.owner_id : undefined;
      const app = await this.o.appFor(provider, sandboxOwner);
      if (!app) throw noApp(provider);
      const state = randomToken('', 32);
      const verifier = connect.pkce ? randomToken('', 48) : undefined;
      await this.flows.updateOne(
        { _id: flow._id },
        {
          $set: {
            browser: browser.session,
            state_hash: sha256(state),
            verifier: verifier ? this.o.vault.seal({ verifier }, verifierAad(flow._id)) : null,
            stage: 'authorizing',
            expires_at: minutesFrom(this.o.store.clock.date(), FLOW_MINUTES),
          },
        },
      );
      const url = new URL(connect.authorize_url);
      const params: Record<string, string | undefined> = {
        ...connect.authorize_params,
        client_id: app.clientId,
        redirect_uri: this.redirectUri,
        response_type: 'code',
        state,
        scope: connect.scopes?.length ? connect.scopes.join(' ') : undefined,
        code_challenge: verifier && challengeOf(verifier),
        code_challenge_method: verifier && 'S256',
      };
      for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
      return { kind: 'redirect', to: this.o.browserUrl(url, provider, sandboxOwner).href };
    } catch (err) {
      return this.failed(err, flow, flow?.holder.owner_id ?? browser.ownerId, request);
    }
  }

  /** The provider sent the browser back: `query` is the callback's; `browserOf` is who is in it, as an owner or as an end user. */
  async callback(query: Record<string, unknown>, browserOf: (endUser: boolean) => Promise<Browser | null>, request: RequestInfo): Promise<FlowOutcome> {
    const param = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
    const state = param('state');
    const flow = state ? await this.flows.findOne({ state_hash: sha256(state) }) : null;
    const browser = await browserOf(Boolean(flow?.holder.end_user_id));
    try {
      if (!state)
        throw new FlowFailure(
          'This is not a connection coming back',
          'The address has no "state": it was not sent by a provider this service sent you to. Start again from the Accounts page.',
          'state_missing',
        );
      if (!flow)
        throw new FlowFailure(
          'This connection is not known',
          'Its "state" matches no connection: it expired long ago, or the address was changed. Start again from the Accounts page.',
          'state_unknown',
        );
      if (!browser || flow.browser !== browser.session || !holds(flow, browser))
        throw new FlowFailure(
          'This connection was started in another browser',
          'A connection finishes only in the signed-in browser session that started it, so nothing was saved. Start again from the Accounts page in this browser.',
          'state_foreign',
          false,
        );
      // Once: the first callback with this state takes it; any later one finds it taken.
      const claimed = await this.flows.findOneAndUpdate({ _id: flow._id, stage: 'authorizing' }, { $set: { stage: 'exchanging' } });
      if (!claimed)
        throw new FlowFailure(
          'This connection has already come back',
          'Its "state" was used once already (a reload, or the back button): nothing more was saved. Check the Accounts page.',
          'state_reused',
        );
      if (claimed.expires_at <= this.o.store.clock.date())
        throw new FlowFailure(
          'This connection took too long',
          `A connection must come back within ${FLOW_MINUTES} minutes of leaving, so nothing was saved. Start again from the Accounts page.`,
          'state_expired',
        );
      const { provider, connect } = this.providerOf(flow);
      const error = param('error');
      if (error === 'access_denied')
        throw new FlowFailure(
          'You cancelled the connection',
          `${connect.by} said access was not granted (you chose Cancel, or the app is not allowed), so nothing was saved.`,
          'access_denied',
        );
      if (error) {
        const description = (param('error_description') ?? '').slice(0, 300);
        throw new FlowFailure(
          `${connect.by} did not grant access`,
          `${connect.by} answered “${error.slice(0, 60)}”${description ? `: ${description}` : ''}. Nothing was saved.`,
          'provider_error',
        );
      }
      const code = param('code');
      if (!code)
        throw new FlowFailure(`${connect.by} sent no code`, `The address has no authorization code, so nothing was saved. Start again.`, 'code_missing');
      const sandboxOwner = flow.sandbox ? flow.holder.owner_id : undefined;
      const app = await this.o.appFor(provider, sandboxOwner);
      if (!app) throw noApp(provider);
      const verifier = flow.verifier ? this.o.vault.open(flow.verifier, verifierAad(flow._id)).verifier : undefined;
      const tokens = await this.o.tokens
        .exchangeCode({ spec: connect, by: connect.by, app, sandboxOwner, timeoutMs: this.o.timeoutMs }, code, this.redirectUri, verifier)
        .catch((err: unknown) => {
          if (!(err instanceof TokenError)) throw err;
          throw new FlowFailure(`${connect.by} did not give a token`, `${err.message}. Nothing was saved; start again.`, `token_${err.kind}`);
        });
      return await this.afterGrant(flow, provider, tokens, request);
    } catch (err) {
      return this.failed(err, flow, flow?.holder.owner_id ?? browser?.ownerId ?? null, request);
    }
  }

  /** What the picker page shows, or the page that says why there is nothing to pick. */
  async choices(flowId: string, browser: Browser, request: RequestInfo): Promise<ChoiceView | FlowOutcome> {
    const flow = await this.flows.findOne({ _id: flowId });
    try {
      const pending = this.waiting(flow, browser);
      const { connect } = this.providerOf(flow!);
      return {
        flowId,
        provider: this.providerOf(flow!).provider.spec.title,
        by: connect.by,
        name: flow!.name,
        question: pending.question,
        choices: pending.choices,
        reconnect: flow!.account_id !== null,
      };
    } catch (err) {
      return this.failed(err, flow, browser.ownerId, request);
    }
  }

  /** The owner's pick among a grant's choices. */
  async choose(flowId: string, choiceId: unknown, browser: Browser, request: RequestInfo): Promise<FlowOutcome> {
    let flow = await this.flows.findOne({ _id: flowId });
    try {
      const pending = this.waiting(flow, browser);
      const choice = pending.choices.find((c) => c.id === choiceId);
      if (!choice) throw new ToolError('invalid_arguments', `"choice" must be one of: ${pending.choices.map((c) => c.id).join(', ')}`);
      flow = await this.flows.findOneAndUpdate({ _id: flowId, stage: 'choosing' }, { $set: { stage: 'exchanging' } });
      if (!flow) throw new FlowFailure('This choice was already made', 'The connection has ended. Check the Accounts page.', 'choice_reused');
      const { provider } = this.providerOf(flow);
      const accessToken = this.o.vault.open(pending.tokens, pendingAad(flow._id)).access_token;
      const refreshToken = this.o.vault.open(pending.tokens, pendingAad(flow._id)).refresh_token;
      const tokens: TokenSet = { accessToken, refreshToken, expiresIn: pending.expires_in ?? undefined, grant: pending.grant };
      return await this.complete(flow, provider, tokens, choice, request);
    } catch (err) {
      if (err instanceof ToolError && err.code === 'invalid_arguments') throw err;
      return this.failed(err, flow, browser.ownerId, request);
    }
  }

  /** Deletes flows past their time (a waiting grant's tokens with them). */
  sweep(now = this.o.store.clock.date()): Promise<number> {
    return this.flows.deleteMany({ expires_at: { $lt: now } });
  }

  private waiting(flow: FlowDoc | null, browser: Browser): NonNullable<FlowDoc['pending']> {
    if (!flow || !holds(flow, browser) || flow.browser !== browser.session)
      throw new FlowFailure(
        'This choice is not known',
        'It belongs to no connection of this browser session. Start again from the Accounts page.',
        'choice_unknown',
      );
    if (flow.stage !== 'choosing' || !flow.pending)
      throw new FlowFailure('This choice was already made', 'The connection has ended. Check the Accounts page.', 'choice_reused');
    if (flow.expires_at <= this.o.store.clock.date())
      throw new FlowFailure(
        'This choice took too long',
        `A site or project must be picked within ${CHOOSE_MINUTES} minutes, so nothing was saved. Start again.`,
        'choice_expired',
      );
    return flow.pending;
  }

  /** After the code exchange: what the grant reaches, then the account, or the picker. */
  private async afterGrant(flow: FlowDoc, provider: Provider, tokens: TokenSet, request: RequestInfo): Promise<FlowOutcome> {
    const connect = provider.connect!;
    if (!connect.discover) return this.complete(flow, provider, tokens, null, request);
    const found = await this.o.engine.connectChoices(provider, this.grantOf(flow, tokens)).catch((err: unknown) => {
      throw discoveryFailure(err, connect.spec.by);
    });
    if (!found.choices.length) throw new FlowFailure(`Nothing to connect`, `${found.none} Nothing was saved.`, 'nothing_to_connect');
    const previous = flow.account_id ? (await this.o.accounts.get(flow.holder.owner_id, flow.account_id))?.connection?.choice : undefined;
    const chosen = found.choices.length === 1 ? found.choices[0] : found.choices.find((c) => c.id === previous);
    if (chosen) return this.complete(flow, provider, tokens, chosen, request);
    const pending = {
      tokens: this.o.vault.seal(
        { access_token: tokens.accessToken, ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}) },
        pendingAad(flow._id),
      ),
      expires_in: tokens.expiresIn ?? null,
      grant: tokens.grant,
      question: found.question,
      choices: found.choices,
    };
    await this.flows.updateOne({ _id: flow._id }, { $set: { stage: 'choosing', pending, expires_at: minutesFrom(this.o.store.clock.date(), CHOOSE_MINUTES) } });
    // An end user picks on their connect page (they have no dashboard).
    return { kind: 'redirect', to: `${flow.holder.end_user_id ? `${flow.return_to}/choose` : CHOOSE_PATH}?flow=${flow._id}` };
  }

  /** The account of a grant and a choice: found, verified, and only then saved (new, or in place). */
  private async complete(flow: FlowDoc, provider: Provider, tokens: TokenSet, choice: ConnectChoice | null, request: RequestInfo): Promise<FlowOutcome> {
    const connect = provider.connect!;
    const grant = this.grantOf(flow, tokens);
    const found: ConnectedAccount = choice
      ? await this.o.engine.connectAccount(provider, grant, choice).catch((err: unknown) => {
          throw discoveryFailure(err, connect.spec.by);
        })
      : { fields: {}, says: '' };
    const kept = Object.fromEntries((connect.spec.keep ?? []).flatMap((k) => (tokens.grant[k] ? [[k, tokens.grant[k]]] : [])));
    const fields = { ...kept, ...found.fields };
    const says =
      found.says || (connect.says ? String(connect.says.render({ account: fields }) ?? '') : '') || `${provider.spec.title} through ${connect.spec.by}`;
    const secrets = found.secrets ?? {};
    // Verified with the new grant before anything is stored (a provider may declare no way to check an account).
    const credentials: AccountCredentials = {
      fields: { ...fields, ...secrets },
      ...(grant.sandboxOwner ? { sandboxOwner: grant.sandboxOwner } : {}),
      connection: {
        accessToken: tokens.accessToken,
        renew: () => Promise.reject(new ToolError('unauthorized', `${connect.spec.by} refused the new access token`)),
      },
    };
    const verified =
      provider.verify.length === 0
        ? undefined
        : await this.o.engine.verify(provider, credentials).catch((err: unknown) => {
            if (!(err instanceof ToolError)) throw err;
            throw new FlowFailure(
              `${provider.spec.title} did not accept the new connection`,
              `${connect.spec.by} granted access, but checking it failed: ${err.message}. Nothing was saved.`,
              'verify_failed',
            );
          });
    const { kind } = provider.spec.account;
    const input = { kind, name: flow.name, sandbox: flow.sandbox, fields, secrets, tokens, choice: choice?.id ?? null, says, verified: verified !== undefined };
    const ownerId = flow.holder.owner_id;
    const endUserId = flow.holder.end_user_id;
    // An end user's one account of the provider is connected again in place; an owner's, when the flow says so.
    const before = endUserId
      ? ((await this.o.accounts.ofEndUser(ownerId, endUserId, input.kind))[0] ?? null)
      : flow.account_id
        ? await this.o.accounts.get(ownerId, flow.account_id)
        : null;
    if (flow.account_id && !before)
      throw new FlowFailure('The account is gone', 'The account to reconnect was deleted meanwhile. Nothing was saved.', 'account_gone');
    const saved = before
      ? this.o.accounts.reconnect(ownerId, before._id, input)
      : endUserId
        ? this.o.accounts.createConnected(ownerId, input, endUserId)
        : this.o.ownerLimits.withRoom(
            ownerId,
            'accounts',
            1,
            () => this.o.accounts.count(ownerId),
            () => this.o.accounts.createConnected(ownerId, input),
          );
    const account = await saved.catch((err: unknown) => {
      if (err instanceof QuotaExceededError) throw new FlowFailure('No room for another account', `${err.message}. Nothing was saved.`, 'quota');
      if (!(err instanceof AccountFieldError)) throw err;
      throw new FlowFailure(`${provider.spec.title} gave an account this service cannot keep`, `${err.message}. Nothing was saved.`, 'invalid_account');
    });
    if (!account) throw new FlowFailure('The account is gone', 'The account to reconnect was deleted meanwhile. Nothing was saved.', 'account_gone');
    await this.flows.updateOne({ _id: flow._id }, { $set: { stage: 'done', pending: null } });
    await this.o.audit.record(request, {
      action: before ? 'account.reconnect' : 'account.connect',
      owner_id: ownerId,
      target: { type: 'account', id: account._id, name: account.name },
      changes: {
        kind: account.kind,
        by: connect.spec.by,
        connected: says,
        ...(tokens.grant.scope ? { scope: tokens.grant.scope } : {}),
        ...(before && before.auth !== 'oauth' ? { auth: { from: 'token', to: 'oauth' } } : {}),
        ...(flow.sandbox ? { sandbox: true } : {}),
      },
    });
    if (before && accountState(before) !== 'connected') await this.o.connections.stateChanged(before, 'connected', null);
    return {
      kind: 'done',
      account,
      reconnected: before !== null,
      says: `${says}. ${verified ?? `${provider.spec.title} declares no way to check an account: the first call will tell.`}`,
      to: flow.return_to,
    };
  }

  private grantOf(flow: FlowDoc, tokens: TokenSet): Grant {
    return { accessToken: tokens.accessToken, grant: tokens.grant, ...(flow.sandbox ? { sandboxOwner: flow.holder.owner_id } : {}) };
  }

  private providerOf(flow: FlowDoc) {
    const provider = this.o.catalog.current.providers.get(flow.provider);
    const connect = provider?.connect?.spec;
    if (!provider || !connect)
      throw new FlowFailure('This provider can no longer be connected', `The service no longer declares how to connect ${flow.provider}.`, 'provider_gone');
    return { provider, connect };
  }

  /** Ends a flow that failed: audited, its waiting grant dropped, and the page that says what happened. */
  private async failed(err: unknown, flow: FlowDoc | null, ownerId: string | null, request: RequestInfo): Promise<FlowOutcome> {
    if (!(err instanceof FlowFailure)) throw err;
    if (flow && err.ends) await this.flows.updateOne({ _id: flow._id }, { $set: { stage: 'failed', pending: null } });
    await this.o.audit.record(request, {
      action: 'account.connect_fail',
      owner_id: ownerId,
      target: flow?.account_id ? { type: 'account', id: flow.account_id, name: flow.name } : null,
      changes: { provider: flow?.provider, name: flow?.name, reason: err.reason, message: err.message },
    });
    return { kind: 'failed', title: err.title, message: err.message, to: flow?.return_to ?? '/accounts' };
  }
}

const minutesFrom = (from: Date, minutes: number) => new Date(from.getTime() + minutes * 60_000);

const noApp = (provider: Provider) =>
  new FlowFailure(
    `${provider.spec.title} cannot be connected here`,
    `This service has no OAuth app of ${provider.connect!.spec.by} (its operator sets one up). Add the account with its credentials instead.`,
    'no_app',
  );

function discoveryFailure(err: unknown, by: string): FlowFailure {
  if (err instanceof FlowFailure) return err;
  if (!(err instanceof ToolError)) throw err;
  return new FlowFailure(`${by} granted access, but it could not be read`, `${err.message}. Nothing was saved; try again.`, 'discovery_failed');
}
