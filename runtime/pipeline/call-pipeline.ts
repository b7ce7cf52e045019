// The MCP backend: authenticate -> authorize -> rate limit, then for tools/call
// find the custom tool -> merge defaults -> validate -> charge -> execute -> record in the ledger -> refund or keep.
import type { Accounts } from '../accounts/accounts.ts';
import type { Budgets } from '../access/budgets.ts';
import { ApiKeys } from '../access/keys.ts';
import { type Holder, type Restrictions, isExpired, permits, refusal, unlisted } from '../access/restrictions.ts';
import type { KeyRateLimiter } from '../access/rate-limit.ts';
import type { Credits } from '../billing/credits.ts';
import { type CallCharge, type CallVia, type Ledger, recordOf } from '../billing/ledger.ts';
import { randomId } from '../secrets.ts';
import type { Engine } from '../engine/engine.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { OAuthGrants } from '../oauth/grants.ts';
import type { AuthOutcome, CallOptions, ToolCallResult, ToolListing, McpBackend, Principal, RateOutcome } from '../mcp/backend.ts';
import { ToolError } from '../tool-error.ts';
import type { Servers } from '../servers/servers.ts';
import type { StoreClock } from '../store/clock.ts';
import { StoreUnavailableError } from '../store/port.ts';
import type { CustomTool, CustomTools } from '../servers/custom-tools.ts';
import { UNTRACED } from '../tracing/spans.ts';

/** A principal with what the pipeline needs beyond the endpoint's view of it. */
interface Caller extends Principal {
  /** What the credential may do (tools, read-only, budget); absent: everything. */
  restrictions?: Restrictions;
  /** What the credential is, as refusals name it (default: a key). */
  holder?: Holder;
  /** Not an MCP client: the call's record says where it came from. */
  via?: CallVia;
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
  engine: Engine;
  /** The store's time: key expiry and budget periods read it, never this host's clock. */
  clock: StoreClock;
  logger: Logger;
  metrics: Metrics;
}

export class CallPipeline implements McpBackend {
  constructor(private readonly d: CallPipelineDeps) {}

  async authenticate(serverId: string, authorization: string | undefined): Promise<AuthOutcome> {
    const m = /^Bearer +(\S+)$/i.exec(authorization ?? '');
    if (m && OAuthGrants.isAccessToken(m[1])) return this.authenticateToken(serverId, m[1]);
    if (!m || !ApiKeys.isKey(m[1])) return { ok: false, status: 401 };
    const key = await this.d.keys.lookup(m[1]);
    if (!key || key.revoked_at || isExpired(key.restrictions, this.d.clock.now())) return { ok: false, status: 401 };
    if (key.kind === 'server' && key.server_id !== serverId) return { ok: false, status: 401 };
    const server = await this.d.servers.lookup(serverId);
    if (!server || server.owner_id !== key.owner_id || !server.active) return { ok: false, status: 403 };
    if (key.kind === 'global' && !key.linked_server_ids.includes(serverId)) return { ok: false, status: 403 };
    this.d.keys.touch(key._id);
    const caller: Caller = { keyId: key._id, ownerId: key.owner_id, serverId, restrictions: key.restrictions };
    return { ok: true, principal: caller };
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
    return { ok: true, principal: caller };
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
  async rateLimit(principal: Caller, requests = 1): Promise<RateOutcome> {
    // The dashboard is no key: its calls count per owner.
    const own = await this.d.rateLimiter.consume(principal.via ? `${principal.via}:${principal.ownerId}` : principal.keyId, requests);
    if (!own.allowed) return principal.via ? { ...own, limit: 'the limit of your own tries' } : own;
    const owner = await this.d.ownerRateLimiter.consume(`owner:${principal.ownerId}`, requests);
    if (!owner.allowed) return { ...owner, limit: `the owner's limit across all its keys and apps (${this.d.ownerRateWords})` };
    // The headers of the tighter of the two.
    return Number(owner.headers['RateLimit-Remaining']) < Number(own.headers['RateLimit-Remaining']) ? owner : own;
  }

  async listTools(principal: Caller): Promise<ToolListing[]> {
    return (await this.d.tools.forServer(principal.serverId)).tools.map((t) => t.listing).filter((t) => permits(principal.restrictions, t));
  }

  async callTool(principal: Caller, name: string, args: unknown, options: CallOptions): Promise<ToolCallResult | undefined> {
    const { tools, orphans } = await this.d.tools.forServer(principal.serverId);
    const tool = tools.find((t) => t.doc.name === name);
    const orphan = tool ? undefined : orphans.find((t) => t.name === name);
    if (!tool && !orphan) return undefined;
    const cost = tool?.base.spec.credits ?? 0;
    const started = performance.now();
    const call: CallCharge = { id: randomId('call_'), cost, server_id: principal.serverId, key_id: principal.keyId, tool: name, via: principal.via };
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
    const account = tool.doc.account_id ? await this.d.accounts.credentials(principal.ownerId, tool.doc.account_id) : null;
    if (tool.doc.account_id && !account) {
      return rejected(new ToolError('account_missing', `The account bound to ${name} no longer exists; bind another account to the tool`));
    }
    // The key's budget first (one conditional increment, given back if the balance refuses or the call is
    // refunded); then a free tool takes nothing from the balance, any other its range of the owner's credit line.
    const limit = principal.restrictions?.credit_limit;
    const chargedAt = this.d.clock.date();
    const overBudget = await this.d.budgets.reserve(principal.keyId, limit, cost, chargedAt, principal.holder ?? 'key', name);
    if (overBudget) return rejected(overBudget);
    const charge =
      cost > 0
        ? await trace.step(
            'charge',
            () => this.d.ledger.charge(principal.ownerId, cost),
            (at) => ({ 'toolserver.credits.cost': cost, 'toolserver.charge.accepted': at !== null }),
          )
        : undefined;
    if (charge === null) {
      await this.d.budgets.release(principal.keyId, limit, cost, chargedAt);
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
      const run = { owner: principal.ownerId, signal: options.signal, progress: options.progress, outbound: trace.outbound(validated) };
      outcome = { ok: true, result: await this.d.engine.run(tool.base, validated, account, run) };
    } catch (err) {
      failure = err instanceof ToolError ? err : new ToolError('internal_error', 'The tool failed inside the service', { refund: true });
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
      if (refund) await this.d.budgets.release(principal.keyId, limit, cost, chargedAt);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw new UnrecordedCallError(err);
      throw err;
    }
    this.d.metrics.toolCall(name, failure?.code ?? 'ok', kept);
    return outcome;
  }
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
  return Object.keys(defaults).length ? { ...structuredClone(defaults), ...args } : { ...args };
}
