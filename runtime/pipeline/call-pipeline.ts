// The MCP backend: authenticate -> authorize -> rate limit, then for tools/call
// find the custom tool -> merge defaults -> validate -> charge -> execute -> record in the ledger -> refund or keep.
import { type Accounts, accountState } from '../accounts/accounts.ts';
import type { ConnectSessions } from '../accounts/connect-sessions.ts';
import type { Budgets } from '../access/budgets.ts';
import type { EndUserDoc, EndUsers } from '../access/end-users.ts';
import { type ApiKeyDoc, ApiKeys } from '../access/keys.ts';
import type { KeyNetworks } from '../access/key-networks.ts';
import type { RequestStates } from '../access/request-states.ts';
import { type CreditLimit, type Holder, type Restrictions, isExpired, permits, refusal, unlisted } from '../access/restrictions.ts';
import type { KeyRateLimiter } from '../access/rate-limit.ts';
import type { Credits } from '../billing/credits.ts';
import { type CallCharge, type CallVia, type Ledger, recordOf } from '../billing/ledger.ts';
import { timeOrderedId } from '../secrets.ts';
import type { AccountCredentials, Engine } from '../engine/engine.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { OAuthGrants } from '../oauth/grants.ts';
import type { AuthOutcome, CallOptions, ToolCallResult, ToolListing, McpBackend, Principal, RateOutcome } from '../mcp/backend.ts';
import { ACCOUNT_NOT_CONNECTED, ToolError } from '../tool-error.ts';
import type { Servers } from '../servers/servers.ts';
import type { StoreClock } from '../store/clock.ts';
import { StoreUnavailableError } from '../store/port.ts';
import { CALLER_ACCOUNT, type CustomTool, type CustomTools, type ServerTools } from '../servers/custom-tools.ts';
import { sha256 } from '../secrets.ts';
import { UNTRACED } from '../tracing/spans.ts';

/** A principal with what the pipeline needs beyond the endpoint's view of it. */
interface Caller extends Principal {
  /** What the credential may do (tools, read-only, budget); absent: everything. */
  restrictions?: Restrictions;
  /** What the credential is, as refusals name it (default: a key). */
  holder?: Holder;
  /** Not an MCP client: the call's record says where it came from. */
  via?: CallVia;
  /** The owner's end user the call acts as: from the key, or the X-End-User header of a key allowed to name one. */
  endUserId?: string;
  /** That end user's own budget, whichever key acts as them. */
  endUserLimit?: CreditLimit;
}

/**
 * A call that reached its provider but that the store failed to record or settle (it refused writes, or did not
 * answer): answered 503 like any store failure, saying the provider was reached and may have acted. Its credits
 * are settled by the ledger (Ledger.settleUnrecorded).
 */
export class UnrecordedCallError extends StoreUnavailableError {
  override readonly name = 'UnrecordedCallError';
  constructor(cause: StoreUnavailableError) {
    super(cause.message, cause.retryAfterSeconds, cause.transient, { cause });
  }
}

/** The `key_id` of the owner's own calls from the dashboard ("Try"): no key, the signed-in owner. */
export const DASHBOARD_CALLER = 'dashboard';

export interface CallPipelineDeps {
  keys: ApiKeys;
  oauth: OAuthGrants;
  budgets: Budgets;
  servers: Servers;
  tools: CustomTools;
  accounts: Accounts;
  credits: Credits;
  ledger: Ledger;
  rateLimiter: KeyRateLimiter;
  /** Every credential of an owner together (keys, apps, the dashboard): one key's limits times many keys is not a limit. */
  ownerRateLimiter: KeyRateLimiter;
  /** The owner's limits in words, for a refusal: "300 requests per 10 s". */
  ownerRateWords: string;
  /** The networks keys are used from (e-mail alerts); absent when e-mail is off. */
  keyNetworks?: KeyNetworks;
  engine: Engine;
  /** The store's time: key expiry and budget periods read it, never this host's clock. */
  clock: StoreClock;
  logger: Logger;
  metrics: Metrics;
  endUsers: EndUsers;
  /** The link a call answers when its end user has no usable account (signed; no record). */
  connectLinks: Pick<ConnectSessions, 'callLink'>;
  requestStates: RequestStates;
}

/** What each server's tools list for each credential's restrictions (by identity: both are kept while unchanged). */
const listings = new WeakMap<ServerTools, WeakMap<Restrictions, ToolListing[]>>();
const UNRESTRICTED: Restrictions = { access: 'all' };

export class CallPipeline implements McpBackend {
  constructor(private readonly d: CallPipelineDeps) {}

  async authenticate(serverId: string, authorization: string | undefined, from: { endUser?: string; address?: string } = {}): Promise<AuthOutcome> {
    const { endUser, address } = from;
    const m = /^Bearer +(\S+)$/i.exec(authorization ?? '');
    if (m && OAuthGrants.isAccessToken(m[1])) {
      if (endUser !== undefined)
        return { ok: false, status: 403, message: 'X-End-User: an app signed in by OAuth acts as the one who approved it and cannot name an end user' };
      return this.authenticateToken(serverId, m[1]);
    }
    if (!m || !ApiKeys.isKey(m[1])) return { ok: false, status: 401 };
    const key = await this.d.keys.lookup(m[1]);
    if (!key || key.revoked_at || isExpired(key.restrictions, this.d.clock.now())) return { ok: false, status: 401 };
    if (key.kind === 'server' && key.server_id !== serverId) return { ok: false, status: 401 };
    const server = await this.d.servers.lookup(serverId);
    if (!server || server.owner_id !== key.owner_id || !server.active) return { ok: false, status: 403 };
    if (key.kind === 'global' && !key.linked_server_ids.includes(serverId)) return { ok: false, status: 403 };
    this.d.keys.touch(key._id);
    if (address) this.d.keyNetworks?.seen(key, address, serverId);
    const caller: Caller = { keyId: key._id, ownerId: key.owner_id, serverId, restrictions: key.restrictions };
    return this.actingAs(caller, key, endUser);
  }

  /**
   * Who a key's call acts as: the end user the key was made for (read from the store: one deleted stops at once,
   * on every instance), or the one its X-End-User header names when the key may act for end users, or the owner.
   */
  private async actingAs(caller: Caller, key: ApiKeyDoc, named: string | undefined): Promise<AuthOutcome> {
    const shown = (name: string) => JSON.stringify(name.slice(0, 100));
    if (key.end_user_id) {
      const own = await this.d.endUsers.byId(key.end_user_id);
      if (!own || own.owner_id !== caller.ownerId) return { ok: false, status: 401, message: 'This key belonged to an end user who was deleted' };
      if (named !== undefined && named !== own.external_id)
        return { ok: false, status: 403, message: `X-End-User names ${shown(named)}, but this key acts as its own end user only` };
      return acting(caller, own);
    }
    if (named === undefined) return { ok: true, principal: caller };
    if (!key.act_for_end_users)
      return {
        ok: false,
        status: 403,
        message: 'X-End-User: this key may not act for end users (create a key with "act_for_end_users": true for a trusted backend)',
      };
    const endUser = named === '' ? null : await this.d.endUsers.byExternalId(caller.ownerId, named);
    if (!endUser)
      return { ok: false, status: 403, message: `X-End-User: there is no end user with the external id ${shown(named)} (create it with POST /api/end-users)` };
    return acting(caller, endUser);
  }

  /** An OAuth access token: valid, for this very server (audience), whose server is still its owner's and active. */
  private async authenticateToken(serverId: string, token: string): Promise<AuthOutcome> {
    const auth = await this.d.oauth.authenticate(token, serverId);
    if (!auth.ok) return { ok: false, status: 401, tokenError: auth.reason };
    const server = await this.d.servers.lookup(serverId);
    if (!server || server.owner_id !== auth.principal.ownerId || !server.active) return { ok: false, status: 403 };
    const caller: Caller = {
      keyId: auth.principal.grantId,
      ownerId: auth.principal.ownerId,
      serverId,
      restrictions: auth.principal.restrictions,
      holder: 'app',
    };
    if (!auth.principal.endUserId) return { ok: true, principal: caller };
    // Approved by an end user: read from the store, so that one deleted stops at once on every instance.
    const approver = await this.d.endUsers.byId(auth.principal.endUserId);
    if (!approver || approver.owner_id !== caller.ownerId)
      return { ok: false, status: 401, tokenError: 'The person who approved this application was deleted' };
    return acting(caller, approver);
  }

  /**
   * The owner trying a tool of their own server in the dashboard: charged, limited and recorded like any call,
   * marked as from the dashboard. The caller checks the server is the owner's and active (what a key's
   * authentication checks) and rate limits it (`rateLimit`) like a key.
   */
  dashboardCaller(ownerId: string, serverId: string): Principal {
    const caller: Caller = { keyId: DASHBOARD_CALLER, ownerId, serverId, via: 'dashboard' };
    return caller;
  }

  /**
   * The credential's own limits, then its owner's across all its credentials. In that order: requests a
   * credential's own limit refuses (a runaway agent) never spend what the owner's other keys may use. A refusal
   * by the owner's limit says so (`limit`); a key's own is the spec's plain 429.
   */
  rateLimit(principal: Caller, requests = 1): RateOutcome | Promise<RateOutcome> {
    // The dashboard is no key: its calls count per owner.
    const own = this.d.rateLimiter.consume(principal.via ? `${principal.via}:${principal.ownerId}` : principal.keyId, requests);
    return andThen(own, (verdict) => this.ownerRateLimit(principal, verdict, requests));
  }

  /** After the credential's own verdict: the owner's, and the headers of the tighter of the two. */
  private ownerRateLimit(principal: Caller, own: RateOutcome, requests: number): RateOutcome | Promise<RateOutcome> {
    if (!own.allowed) return principal.via ? Object.assign({}, own, { limit: 'the limit of your own tries' }) : own;
    return andThen(this.d.ownerRateLimiter.consume(`owner:${principal.ownerId}`, requests), (owner) => this.tighter(own, owner));
  }

  private tighter(own: RateOutcome, owner: RateOutcome): RateOutcome {
    if (!owner.allowed) return Object.assign({}, owner, { limit: `the owner's limit across all its keys and apps (${this.d.ownerRateWords})` });
    return Number(owner.headers['RateLimit-Remaining']) < Number(own.headers['RateLimit-Remaining']) ? owner : own;
  }

  /**
   * The same array for as long as the server's tools (ServerTools, rebuilt on any change of them or of the
   * catalog) and the credential's restrictions are the same, so its serialized pages are kept with it (tool-wire.ts).
   */
  async listTools(principal: Caller): Promise<ToolListing[]> {
    const serverTools = await this.d.tools.forServer(principal.serverId);
    let byRestrictions = listings.get(serverTools);
    if (!byRestrictions) listings.set(serverTools, (byRestrictions = new WeakMap()));
    const restrictions = principal.restrictions ?? UNRESTRICTED;
    let list = byRestrictions.get(restrictions);
    if (!list) byRestrictions.set(restrictions, (list = serverTools.tools.map((t) => t.listing).filter((t) => permits(principal.restrictions, t))));
    return list;
  }

  async callTool(principal: Caller, name: string, args: unknown, options: CallOptions): Promise<ToolCallResult | undefined> {
    const { tools, orphans } = await this.d.tools.forServer(principal.serverId);
    const tool = tools.find((t) => t.doc.name === name);
    const orphan = tool ? undefined : orphans.find((t) => t.name === name);
    if (!tool && !orphan) return undefined;
    const cost = tool?.base.spec.credits ?? 0;
    const started = performance.now();
    const call: CallCharge = {
      id: timeOrderedId('call_'),
      cost,
      server_id: principal.serverId,
      key_id: principal.keyId,
      tool: name,
      via: principal.via,
      end_user_id: principal.endUserId,
    };
    const latency = () => Math.round(performance.now() - started);
    const trace = options.trace ?? UNTRACED;
    /** A call refused before any charge: recorded, nothing to settle. */
    const rejected = async (error: ToolError): Promise<ToolCallResult> => {
      trace.settle({ callId: call.id, outcome: 'rejected', code: error.code, charged: 0, kept: 0 });
      await trace.step('ledger record', () => this.d.ledger.record(recordOf(call, principal.ownerId, 'rejected', error.code, 0, latency(), errorOf(error))));
      this.d.metrics.toolCall(name, error.code, 0);
      return { ok: false, error };
    };

    if (!tool) {
      // Without its spec there is nothing to judge read-only access by: only a credential's list of tools applies.
      return rejected(unlisted(principal.restrictions, name, principal.holder ?? 'key') ?? orphaned(name, orphan!.base_tool));
    }
    const refused = refusal(principal.restrictions, tool.listing, principal.holder ?? 'key');
    if (refused) return rejected(refused);

    let validated: Record<string, unknown>;
    try {
      validated = this.d.engine.validateArguments(tool.base, mergeArguments(tool, args as Record<string, unknown>));
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      return rejected(err);
    }
    // An account that needs its owner refuses the call here, before any charge; a connection about to expire
    // is renewed first (a renewal the provider refuses ends here too).
    let account: AccountCredentials | null = null;
    const accountId = tool.doc.account_id === CALLER_ACCOUNT ? await this.callersAccount(principal, tool) : tool.doc.account_id;
    if (accountId instanceof ToolError) return rejected(accountId);
    if (accountId) {
      try {
        account = await this.d.accounts.forCall(principal.ownerId, accountId, options.cancellation);
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        return rejected(this.forCaller(err, principal, tool));
      }
      if (!account) return rejected(new ToolError('account_missing', `The account bound to ${name} no longer exists; bind another account to the tool`));
    }
    // The budgets first: the key's, then the end user's it acts as (each one conditional increment, given back if
    // the next refuses, the balance refuses or the call is refunded); then a free tool takes nothing from the
    // balance, any other its range of the owner's credit line.
    const chargedAt = this.d.clock.date();
    const budgets = [
      { id: principal.keyId, limit: principal.restrictions?.credit_limit, holder: principal.holder ?? 'key' },
      { id: principal.endUserId ?? '', limit: principal.endUserLimit, holder: 'end_user' as const },
    ].filter((bg) => bg.limit);
    const releaseBudgets = (reserved = budgets) => Promise.all(reserved.map((bg) => this.d.budgets.release(bg.id, bg.limit, cost, chargedAt)));
    for (const [i, bg] of budgets.entries()) {
      const overBudget = await this.d.budgets.reserve(bg.id, bg.limit, cost, chargedAt, bg.holder, name);
      if (!overBudget) continue;
      await releaseBudgets(budgets.slice(0, i));
      return rejected(overBudget);
    }
    const charge =
      cost > 0
        ? await trace.step(
            'charge',
            () => this.d.ledger.charge(principal.ownerId, cost),
            (at) => ({ 'toolserver.credits.cost': cost, 'toolserver.charge.accepted': at !== null }),
          )
        : undefined;
    if (charge === null) {
      await releaseBudgets();
      const balance = await this.d.credits.balance(principal.ownerId);
      return rejected(
        new ToolError('insufficient_credits', `Insufficient credits: ${name} costs ${cost} credit${cost === 1 ? '' : 's'} and the balance is ${balance}`),
      );
    }
    call.from = charge?.from;
    call.block = charge?.block;
    // From here the call holds its charge: its record settles it, written before the answer leaves; after a
    // crash before that, settlement (billing/settlement.ts) finds the range without a record and refunds it.
    let outcome: ToolCallResult;
    let failure: ToolError | undefined;
    try {
      const run = { owner: principal.ownerId, cancellation: options.cancellation, progress: options.progress, outbound: trace.outbound(validated) };
      outcome = { ok: true, result: await this.d.engine.run(tool.base, validated, account, run) };
    } catch (err) {
      failure =
        err instanceof ToolError
          ? this.forCaller(err, principal, tool)
          : new ToolError('internal_error', 'The tool failed inside the service', { refund: true });
      if (!(err instanceof ToolError)) this.d.logger.error({ err, tool: name, keyId: principal.keyId }, 'tool failed unexpectedly');
      outcome = { ok: false, error: failure };
    }
    const refund = failure?.refund === true;
    const kept = refund ? 0 : cost;
    const outcomeName = !failure ? 'ok' : refund ? 'refunded' : 'tool_error';
    trace.settle({ callId: call.id, outcome: outcomeName, code: failure?.code ?? 'ok', charged: cost, kept });
    try {
      await trace.step(
        'ledger record',
        () => this.d.ledger.finish(recordOf(call, principal.ownerId, outcomeName, failure?.code ?? 'ok', kept, latency(), failure && errorOf(failure)), refund),
        () => ({ 'toolserver.refund': refund }),
      );
      if (refund) await releaseBudgets();
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw new UnrecordedCallError(err);
      throw err;
    }
    this.d.metrics.toolCall(name, failure?.code ?? 'ok', kept);
    return outcome;
  }

  /**
   * The account of a tool bound to the caller's own: the newest of the end user's accounts of the tool's provider
   * that does not need them; without one, `account_not_connected` with the link where they connect one.
   */
  private async callersAccount(principal: Caller, tool: CustomTool): Promise<string | ToolError> {
    const provider = tool.base.provider.spec;
    if (!principal.endUserId)
      return new ToolError(
        'end_user_required',
        `${tool.doc.name} acts as the caller's own ${provider.title} account: call it with an end user's key, or name the end user in the X-End-User header with a key that may act for end users`,
      );
    const own = await this.d.accounts.ofEndUser(principal.ownerId, principal.endUserId, provider.account.kind);
    const usable = own.find((a) => accountState(a) !== 'needs_reauth');
    return usable ? usable._id : this.notConnected(principal, tool, own.length > 0);
  }

  private notConnected(principal: Caller, tool: CustomTool, again: boolean): ToolError {
    const provider = tool.base.provider.spec;
    const link = this.d.connectLinks.callLink(principal.ownerId, principal.endUserId!, provider.id);
    const what = again ? `Your ${provider.title} account needs to be connected again` : `${tool.doc.name} needs your own ${provider.title} account`;
    return new ToolError(ACCOUNT_NOT_CONNECTED, `${what}: open ${link} to connect it, then call ${tool.doc.name} again`, {
      refund: true,
      details: { provider: provider.id, connect_url: link },
    });
  }

  /** An end user's account that needs them is theirs to connect again, never the owner's to reconnect. */
  private forCaller(err: ToolError, principal: Caller, tool: CustomTool): ToolError {
    return err.code === 'account_needs_reauth' && tool.doc.account_id === CALLER_ACCOUNT ? this.notConnected(principal, tool, true) : err;
  }

  sealRequestState(principal: Caller, method: string, params: unknown): Promise<string> {
    return Promise.resolve(this.d.requestStates.seal(stateBinding(principal, method, params)));
  }

  openRequestState(principal: Caller, method: string, params: unknown, state: unknown): Promise<string | null> {
    return this.d.requestStates.open(stateBinding(principal, method, params), state);
  }
}

const acting = (caller: Caller, endUser: EndUserDoc): AuthOutcome => {
  const principal: Caller = Object.assign({}, caller, { endUserId: endUser._id, endUserLimit: endUser.credit_limit });
  return { ok: true, principal };
};

/** What a request state is bound to: the credential and who it acts as, the server, the method and a digest of its params. */
function stateBinding(principal: Caller, method: string, params: unknown): string {
  const { name, arguments: args } = (params ?? {}) as { name?: unknown; arguments?: unknown };
  return [
    principal.ownerId,
    principal.serverId,
    principal.keyId,
    principal.endUserId ?? '',
    method,
    sha256(JSON.stringify({ name, arguments: args ?? {} })),
  ].join('\0');
}

/** The refusal of a call to a custom tool whose base tool is gone from the catalog. */
function orphaned(name: string, baseTool: string): ToolError {
  return new ToolError(
    'tool_unavailable',
    `The tool ${name} is unavailable: the tool spec it is built on (${baseTool}) is gone from this service. The server's owner can remove the tool, or have the spec restored.`,
  );
}

/** What the call log keeps of an error: its message (never argument values) and the provider's status. */
function errorOf(error: ToolError): { message: string; provider_status: number | null } {
  return { message: error.message, provider_status: error.providerStatus };
}

/** Server defaults under the caller's arguments; a locked parameter cannot come from the caller. */
export function mergeArguments(tool: CustomTool, args: Record<string, unknown>): Record<string, unknown> {
  const locked = tool.doc.locked.filter((p) => Object.hasOwn(args, p));
  if (locked.length) {
    throw new ToolError('invalid_arguments', `Invalid arguments: ${locked.map((p) => `"${p}" is fixed by this server and cannot be set`).join('; ')}`);
  }
  const defaults = tool.doc.defaults;
  // Copied: validation fills defaults in place, and the stored defaults are shared by every call.
  // eslint-disable-next-line no-restricted-syntax -- the caller's JSON: an own "__proto__" key stays data (and is validated)
  return Object.keys(defaults).length ? { ...structuredClone(defaults), ...args } : { ...args };
}

/** `next` of a value at once, or of a promise's value once it settles: no turn of the microtask queue when nothing waits. */
function andThen<T, R>(value: T | Promise<T>, next: (settled: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
