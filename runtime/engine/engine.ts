// Runs a tool from (loaded spec, account credentials, arguments): render each step's request, apply
// plugins, call the provider through the one HTTP client, map the answer, map failures to ToolError.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Cancellation } from '../cancellation.ts';
import { type HttpClient, type UpstreamResponse, paidAfterAnswer } from '../http/client.ts';
import { pointerParts } from '../json-pointer.ts';
import {
  type BaseResolution,
  type ConnectChoice,
  type ConnectContext,
  type ConnectPlugin,
  type ConnectChoices,
  type ConnectedAccount,
  type OutboundRequest,
  type ProviderHttp,
  type SendOptions,
  UpstreamStatusError,
} from '../plugin-api.ts';
import { sha256 } from '../secrets.ts';
import { TtlCache } from '../ttl-cache.ts';
import { withFieldDefaults } from '../toolspec/account-fields.ts';
import type { AuthTemplate, CompiledRequest, Provider, BaseTool } from '../toolspec/catalog.ts';
import type { VerifyWay } from '../toolspec/types.ts';
import { createArgumentsAjv } from '../toolspec/loader.ts';
import { type CompiledTemplate, RenderError, truthy } from '../template/template.ts';
import { renderTree } from '../template/tree.ts';
import type { OffLoop } from '../off-loop.ts';
import { ToolError } from '../tool-error.ts';
import type { OutboundTrace } from '../tracing/outbound.ts';
import { mapUpstreamError, providerDetail, redactor } from './errors.ts';
import { type PagedResponse, readPages } from './pagination.ts';

export { redactor };

/** A stored account, decrypted. */
export interface AccountCredentials {
  fields: Readonly<Record<string, string>>;
  /** A sandbox account of this owner's (the service created it): its requests may reach that owner's sandboxes. */
  sandboxOwner?: string;
  /** An account connected by OAuth (provider.yaml `connect`). */
  connection?: AccountConnection;
}

/** What a call needs of an OAuth connection: the access token, and a way to a new one. */
export interface AccountConnection {
  accessToken: string;
  /**
   * Renews the connection after the provider refused `accessToken` (a refresh; for a provider whose calls send
   * what the connection found, that again): resolves to the account's fresh credentials, or throws a ToolError
   * (`account_needs_reauth` when only the owner can fix it).
   */
  renew(cancellation?: Cancellation): Promise<AccountCredentials>;
}

/** The grant of a connection being made, before any account holds it: for the discovery plugin. */
export interface Grant {
  accessToken: string;
  /** The token answer's other strings (scope, workspace name...). */
  grant: Readonly<Record<string, string>>;
  sandboxOwner?: string;
}

export interface RunOptions {
  /** Whose call it is: its plugins' work off the event loop waits behind this owner's own only. */
  owner?: string;
  cancellation?: Cancellation;
  progress?: (message: string) => void;
  /** The call's trace, when tracing is on: every provider request of the call becomes a span of it. */
  outbound?: OutboundTrace;
}

export interface EngineOptions {
  /** Timeout of one upstream request unless the tool sets its own. */
  defaultTimeoutMs: number;
  /** The worker threads of plugins' long work (PluginContext.offLoop); without them it runs here, on the event loop. */
  offLoop?: OffLoop;
}

type View = { args: Record<string, unknown>; account: Record<string, string>; steps: Record<string, UpstreamResponse>; response?: UpstreamResponse };

/** The result of a tool without a response map: the last body, or a paginated list's items and where it goes on. */
function defaultResult(last: UpstreamResponse | PagedResponse | undefined): unknown {
  if (last && 'items' in last)
    return { items: last.items, has_more: last.has_more, ...(last.next_cursor !== undefined ? { next_cursor: last.next_cursor } : {}) };
  return last?.body ?? {};
}

/** How long a resolved API base (base_url.resolve) is reused; a resolution that found nothing, a minute. */
const RESOLVED_BASE_MS = 10 * 60_000;
const UNRESOLVED_BASE_MS = 60_000;

export class Engine {
  /** Resolved API bases by provider and account (the key is a hash: account fields include secrets). */
  private readonly bases = new TtlCache<string, Promise<BaseResolution>>(RESOLVED_BASE_MS, 10_000);
  private readonly defaultsAjv = createArgumentsAjv();
  /** Compiled validators of custom-tool defaults, per compiled base tool (a reloaded catalog gets new ones). */
  private readonly defaultsValidators = new WeakMap<BaseTool, ValidateFunction>();

  constructor(
    private readonly http: HttpClient,
    private readonly options: EngineOptions,
  ) {}

  /**
   * Validates the arguments against the tool's compiled input schema and fills in defaults (in place:
   * pass an object the caller owns, such as a freshly parsed request). Throws ToolError('invalid_arguments') naming every bad field.
   */
  validateArguments(tool: BaseTool, args: unknown): Record<string, unknown> {
    const value = args === undefined || args === null ? {} : args;
    const lone = loneSurrogate(value);
    if (lone) {
      throw new ToolError('invalid_arguments', `Invalid arguments: "${lone.at}" contains a lone surrogate (U+${lone.code}), which is not valid Unicode text`);
    }
    if (!tool.validate(value)) {
      throw new ToolError('invalid_arguments', `Invalid arguments: ${describeSchemaErrors(tool.validate.errors ?? [])}`);
    }
    return value as Record<string, unknown>;
  }

  /**
   * Checks a custom tool's default parameters against the tool's input schema, without `required` (a
   * default need not be given for every required parameter). Returns what is wrong, in words; null when valid.
   */
  checkDefaults(tool: BaseTool, defaults: Record<string, unknown>): string | null {
    let validate = this.defaultsValidators.get(tool);
    if (!validate) {
      const { required: _required, ...schema } = tool.spec.input;
      validate = this.defaultsAjv.compile(schema);
      this.defaultsValidators.set(tool, validate);
    }
    return validate(structuredClone(defaults)) ? null : describeSchemaErrors(validate.errors ?? []);
  }

  /** Runs a tool with validated arguments. Resolves to the result object; throws ToolError. */
  async run(tool: BaseTool, args: Record<string, unknown>, account: AccountCredentials | null, opts: RunOptions = {}): Promise<Record<string, unknown>> {
    const provider = tool.provider;
    if (!account && (tool.spec.account ?? 'required') === 'required') {
      throw new ToolError('account_required', `The tool ${tool.spec.id} needs a stored ${provider.spec.account.kind} account bound to it`);
    }
    const facts = accountFacts(provider, account);
    const redact = facts.redact;
    const view: View = { args, account: facts.publicFields, steps: {} };
    const resolved = account ? await this.resolveBase(provider, account, opts.cancellation, false, opts.outbound) : undefined;
    // Once the provider answered one request of this call, a later request that gets no answer (cancelled,
    // timed out, connection broken) still leaves that work paid for.
    let answered = false;
    const paidFor = (failure: ToolError) => (answered ? paidAfterAnswer(failure) : failure);
    const http = this.bind(provider, account, opts, tool.spec.annotations.idempotentHint, resolved?.base, undefined, () => {
      answered = true;
    });
    const cancellation = opts.cancellation ?? new Cancellation();
    const progress = opts.progress ?? (() => {});
    const offLoop = <T>(module: URL, name: string, arg: unknown): Promise<T> =>
      this.options.offLoop ? this.options.offLoop.run<T>(opts.owner ?? '', { module, name, arg }) : runHere<T>(module, name, arg);
    // A plugin's context; its AbortSignal is made only if the plugin reads it (runtime/cancellation.ts).
    const contextOf = <O>(options: O) => ({
      options,
      args,
      account: view.account,
      http,
      toolId: tool.spec.id,
      progress,
      offLoop,
      get signal() {
        return cancellation.signal;
      },
    });
    const applied: string[] = [];
    let last: UpstreamResponse | undefined;
    for (const [index, step] of tool.steps.entries()) {
      if (step.when && !truthy(step.when.render(view))) continue;
      try {
        if (tool.steps.length > 1) progress(`${step.title}`);
        let request = this.render(step.request, view);
        for (const p of step.request.plugins) request = await p.plugin.apply(request, contextOf(p.options));
        const { call, paginate } = step.request;
        if (call) last = await call.plugin.apply(request, contextOf(call.options));
        else if (paginate) last = await readPages(paginate, request, http, view, resolved?.base ?? facts.base, progress);
        else last = await http.send(request);
      } catch (err) {
        const failure = paidFor(toToolError(err, (res) => mapUpstreamError(tool, step.name, res, view), redact));
        if (applied.length === 0) throw failure;
        const rest = tool.steps
          .slice(index)
          .filter((s) => !s.when || truthy(s.when.render(view)))
          .map((s) => s.title);
        throw new ToolError(
          failure.code,
          `${failure.message.replace(/[.\s]+$/, '')}. Applied before the failure: ${applied.join(', ')}. Not applied: ${rest.join(', ')}.`,
          {
            retryable: false,
            providerStatus: failure.providerStatus,
            // Part of the work was done: the charge is kept.
            refund: false,
          },
        );
      }
      view.steps[step.name] = last;
      applied.push(step.title);
    }
    view.response = last;
    let result: unknown = tool.responseMap ? renderTree(tool.responseMap, view) : defaultResult(last);
    try {
      for (const p of tool.responsePlugins) result = await p.plugin.apply(result, contextOf(p.options));
    } catch (err) {
      throw paidFor(toToolError(err, (res) => mapUpstreamError(tool, undefined, res, view), redact));
    }
    if (!tool.validateOutput(result)) {
      // The provider answered, but not in the shape the spec promises: say so rather than hand the client
      // structuredContent that breaks its outputSchema. Nothing usable was delivered, so the credits go back.
      throw new ToolError(
        'unexpected_response',
        `The provider's answer did not have the expected shape: ${describeSchemaErrors(tool.validateOutput.errors ?? [], OUTPUT_WORDS)}`,
        {
          providerStatus: last?.status ?? null,
          refund: true,
        },
      );
    }
    return result as Record<string, unknown>;
  }

  /**
   * Checks an account the first way of the provider's `verify` that applies to it (an n8n account without an
   * API key is checked differently from one with a key); resolves with what was proven, in words.
   */
  async verify(provider: Provider, account: AccountCredentials, cancellation?: Cancellation): Promise<string> {
    const facts = accountFacts(provider, account);
    const chosen = provider.verify.find(({ way }) => wayApplies(way, facts.fields));
    if (!chosen) throw new ToolError('not_supported', `${provider.spec.title} declares no verification request for this account`);
    const { way } = chosen;
    const view: View = { args: {}, account: facts.publicFields, steps: {} };
    // Resolved afresh: verification is where an owner learns which URL and kind of token work.
    const resolved = await this.resolveBase(provider, account, cancellation, true);
    const found = resolved ? ` ${resolved.says}` : '';
    try {
      const request = this.render(chosen.request, view);
      if (way.from === 'instance') request.url = new URL(accountRoot(provider, facts.fields) + request.path);
      const res = await this.bind(provider, account, { cancellation }, true, resolved?.base).send(request, { expectOk: false });
      const accepted = (res.status >= 200 && res.status < 300) || way.accept_status?.includes(res.status);
      if (!accepted) throw new UpstreamStatusError(res);
      const body = (res.body ?? {}) as Record<string, unknown>;
      const unlike = Object.entries(way.expect ?? {}).filter(([k, v]) => typeof body !== 'object' || body[k] !== v);
      if (unlike.length) {
        const where = new URL(accountRoot(provider, facts.fields)).host;
        throw new ToolError(
          'not_the_provider',
          `${where} answered ${way.path}, but not as ${provider.spec.title} does (expected ${JSON.stringify(way.expect)}): check the account's ${provider.spec.base_url.field}`,
          { providerStatus: res.status },
        );
      }
      return (way.says ?? `${provider.spec.title} accepted the credentials (${way.method} ${way.path}).`) + found;
    } catch (err) {
      const failure = toToolError(err, (res) => mapUpstreamError(undefined, undefined, res, view, provider), facts.redact);
      if (!resolved?.problem) throw failure;
      throw new ToolError(failure.code, `${failure.message.replace(/[.\s]+$/, '')}. ${resolved.problem}`, {
        providerStatus: failure.providerStatus,
        retryable: failure.retryable,
      });
    }
  }

  /**
   * The account's API base found by the provider's base_url.resolve plugin, cached per account; undefined for
   * providers without one. The plugin may send the account's credentials to the URLs of its own fields only.
   */
  private resolveBase(
    provider: Provider,
    account: AccountCredentials,
    cancellation = new Cancellation(),
    fresh = false,
    outbound?: OutboundTrace,
  ): Promise<BaseResolution> | undefined {
    const resolver = provider.baseResolver;
    // A connected account's API base is the provider's own (connect.api), whatever its credentials.
    if (!resolver || connectedApi(provider, account)) return undefined;
    const facts = accountFacts(provider, account);
    facts.cacheKey ??= sha256(`${provider.spec.id}\0${JSON.stringify(account.fields)}`);
    const cached = fresh ? undefined : this.bases.get(facts.cacheKey);
    if (cached) return cached;
    const urls = Object.entries(facts.publicFields).filter(([k]) => provider.spec.account.fields.find((f) => f.name === k)?.format === 'url');
    const origins = new Set(urls.flatMap(([, v]) => (URL.canParse(v) ? [new URL(v).origin] : [])));
    const http = this.bind(provider, account, { cancellation, outbound }, true, undefined, origins);
    const pending = resolver.plugin
      .apply(facts.base!, { options: resolver.options as never, account: facts.publicFields, http, signal: cancellation.signal })
      .catch((err: unknown): BaseResolution => {
        // No answer at all (network, guard): the account's own URL, and the actual call reports the failure.
        const why = err instanceof ToolError ? facts.redact(err.message) : 'it failed';
        return { base: facts.base!, says: '', problem: `Finding the API address failed: ${why}` };
      });
    const key = facts.cacheKey;
    this.bases.set(key, pending);
    void pending.then((r) => r.problem && this.bases.set(key, pending, UNRESOLVED_BASE_MS));
    return pending;
  }

  /**
   * The provider client bound to one account: base URL, auth headers, default headers. A connected account
   * whose access token the provider refuses as credentials (its rules call the 401 `unauthorized`) is renewed
   * once for the whole binding (one call, one verification), and each refused request is sent once more.
   */
  private bind(
    provider: Provider,
    account: AccountCredentials | null,
    { cancellation, outbound }: RunOptions,
    idempotent = true,
    resolvedBase?: string,
    authOrigins?: ReadonlySet<string>,
    onAnswer?: () => void,
  ): ProviderHttp {
    let current = account;
    let facts = accountFacts(provider, current);
    let renewal: Promise<void> | undefined;
    const renew = (connection: AccountConnection) =>
      (renewal ??= connection.renew(cancellation).then((fresh) => {
        current = fresh;
        facts = accountFacts(provider, fresh);
      }));
    const attempt = async (req: OutboundRequest, { withAuth = true, retry = idempotent, followRedirects = true }: SendOptions) => {
      const base = resolvedBase ?? facts.base;
      const baseOrigin = resolvedBase ? new URL(resolvedBase).origin : facts.baseOrigin;
      let url: URL;
      if (req.url) url = new URL(req.url);
      else if (base) url = new URL(base + req.path);
      else throw new ToolError('account_required', `No ${provider.spec.account.kind} account is bound, so there is no base URL for this request`);
      for (const [k, v] of req.query) url.searchParams.append(k, v);
      // The account's credentials go only to the account's own origin: never to an absolute URL elsewhere.
      const sendAuth = withAuth && (url.origin === baseOrigin || authOrigins?.has(url.origin) === true);
      if (sendAuth) for (const [k, v] of facts.authQuery) url.searchParams.set(k, v);
      return this.http.send({
        method: req.method,
        url,
        headers: Object.assign({}, facts.headers, sendAuth ? facts.auth : undefined, req.headers),
        body: req.body,
        timeoutMs: req.timeoutMs ?? this.options.defaultTimeoutMs,
        cancellation,
        retry,
        followRedirects,
        sandboxOwner: current?.sandboxOwner,
        trace: outbound,
      });
    };
    return {
      send: async (req, options = {}) => {
        let res = await attempt(req, options);
        const connection = current?.connection;
        if (res.status === 401 && connection && refusesCredentials(provider, res, facts)) {
          await renew(connection);
          res = await attempt(req, options);
        }
        onAnswer?.();
        if ((options.expectOk ?? true) && (res.status < 200 || res.status > 299)) throw new UpstreamStatusError(res);
        return res;
      },
    };
  }

  /** What a new connection's grant reaches (provider.yaml `connect.discover`), asked with its access token. */
  connectChoices(provider: Provider, grant: Grant): Promise<ConnectChoices> {
    return this.runConnect(provider, grant, (discover, ctx) => discover.discover(ctx));
  }

  /** The account fields of the choice the owner made among a grant's connectChoices. */
  connectAccount(provider: Provider, grant: Grant, choice: ConnectChoice): Promise<ConnectedAccount> {
    return this.runConnect(provider, grant, (discover, ctx) => discover.complete(choice, ctx));
  }

  private async runConnect<T>(provider: Provider, grant: Grant, run: (plugin: ConnectPlugin, ctx: ConnectContext<never>) => Promise<T>): Promise<T> {
    const connect = provider.connect;
    const discover = connect?.discover;
    if (!connect || !discover) throw new ToolError('not_supported', `${provider.spec.title} declares no connect.discover plugin`);
    const redact = redactor([grant.accessToken]);
    // The token goes only to the origins of the plugin's own URLs (provider.yaml connect.discover.with).
    const http: ProviderHttp = {
      send: async (req, { expectOk = true, withAuth = true, retry = true, followRedirects = true } = {}) => {
        if (!req.url) throw new ToolError('internal_error', 'A connect plugin must send to an absolute URL');
        const url = new URL(req.url);
        for (const [k, v] of req.query) url.searchParams.append(k, v);
        const sendAuth = withAuth && connect.discoveryOrigins.has(url.origin);
        const res = await this.http.send({
          method: req.method,
          url,
          headers: { accept: 'application/json', ...(sendAuth ? { authorization: `Bearer ${grant.accessToken}` } : {}), ...req.headers },
          body: req.body,
          timeoutMs: req.timeoutMs ?? this.options.defaultTimeoutMs,
          retry,
          followRedirects,
          sandboxOwner: grant.sandboxOwner,
        });
        if (expectOk && (res.status < 200 || res.status > 299)) throw new UpstreamStatusError(res);
        return res;
      },
    };
    try {
      return await run(discover.plugin, { options: discover.options as never, http, grant: grant.grant, signal: new Cancellation().signal });
    } catch (err) {
      if (err instanceof UpstreamStatusError) {
        const { status, body } = err.response;
        const detail = providerDetail(body);
        throw new ToolError(
          status === 401 ? 'unauthorized' : 'provider_error',
          redact(`${connect.spec.by} answered HTTP ${status}${detail ? `: ${detail}` : ''}`),
          {
            providerStatus: status,
            retryable: status === 429 || status >= 500,
          },
        );
      }
      if (err instanceof ToolError) throw new ToolError(err.code, redact(err.message), { retryable: err.retryable, providerStatus: err.providerStatus });
      throw err;
    }
  }

  private render(req: CompiledRequest, view: View): OutboundRequest {
    try {
      const path = req.path.length === 0 ? '' : '/' + req.path.map((seg) => (typeof seg === 'string' ? seg : renderSegment(seg, view))).join('/');
      const query: Array<[string, string]> = [];
      for (const [name, tree] of req.query) {
        const value = renderTree(tree, view);
        for (const item of Array.isArray(value) ? value : [value]) {
          if (item === undefined || item === null) continue;
          query.push([name, typeof item === 'object' ? JSON.stringify(item) : String(item)]);
        }
      }
      const headers: Record<string, string> = {};
      for (const [name, tree] of req.headers) {
        const value = renderTree(tree, view);
        if (value !== undefined && value !== null) headers[name] = String(value);
      }
      const body = req.body ? renderTree(req.body, view) : undefined;
      const timeout = req.timeoutSeconds ? Number(renderTree(req.timeoutSeconds, view)) : undefined;
      return { method: req.method, path, query, headers, body, timeoutMs: timeout && timeout > 0 ? timeout * 1000 : undefined };
    } catch (err) {
      if (err instanceof RenderError) throw new ToolError('invalid_arguments', err.message);
      throw err;
    }
  }
}

/** With the u flag a well-formed pair is one code point, so only a lone half matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * The first string (or key) holding half of a UTF-16 surrogate pair alone, with where it is ("a.0.b") and the
 * code unit in hex; undefined when all text is well formed. No provider can take such text (it has no UTF-8
 * form), and encoding it for a URL throws.
 */
function loneSurrogate(value: unknown): { at: string; code: string } | undefined {
  // A path is kept as links to its parent's (made into "a.0.b" only for the answer): arguments are walked on every call.
  type At = { key: string; up: At } | undefined;
  const found = (text: string, at: At) => {
    const m = LONE_SURROGATE.exec(text);
    if (!m) return undefined;
    const keys: string[] = [];
    for (let a = at; a; a = a.up) keys.unshift(a.key);
    return { at: keys.join('.'), code: m[0].charCodeAt(0).toString(16).toUpperCase() };
  };
  const stack: Array<[unknown, At]> = [[value, undefined]];
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      const lone = found(v, at);
      if (lone) return lone;
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const here = { key: k, up: at };
        const lone = found(k, here);
        if (lone) return lone;
        stack.push([child, here]);
      }
    }
  }
  return undefined;
}

/** A path segment: expression outputs are URL-encoded; "." and ".." and empty values are refused. */
function renderSegment(seg: CompiledTemplate, view: View): string {
  const raw = seg.single ? seg.render(view) : seg.render(view, encodeURIComponent);
  if (raw === undefined || raw === null || raw === '') {
    throw new ToolError('invalid_arguments', `A value needed in the request path is missing (${seg.source})`);
  }
  const text = seg.single ? encodeURIComponent(String(raw)) : String(raw);
  if (text === '.' || text === '..' || text === '%2E' || text === '%2E%2E') {
    throw new ToolError('invalid_arguments', `"${text}" is not allowed as a path value`);
  }
  return text;
}

function toToolError(err: unknown, map: (res: UpstreamResponse) => ToolError, redact: (s: string) => string): ToolError {
  let failure: ToolError;
  if (err instanceof UpstreamStatusError) failure = map(err.response);
  else if (err instanceof ToolError) failure = err;
  else throw err;
  const message = redact(failure.message);
  return message === failure.message
    ? failure
    : new ToolError(failure.code, message, { retryable: failure.retryable, providerStatus: failure.providerStatus, refund: failure.refund });
}

/** What a call needs from an account, derived once per (account, provider) and reused by later calls. */
interface AccountFacts {
  provider: Provider;
  /** The account's fields, each missing one with a default given its default. */
  fields: Readonly<Record<string, string>>;
  /** Accept and the provider's headers (constants, and values of non-secret fields). */
  headers: Readonly<Record<string, string>>;
  publicFields: Record<string, string>;
  auth: Record<string, string>;
  /** Query parameters of the auth (an API key in the URL). */
  authQuery: Array<[string, string]>;
  base?: string;
  baseOrigin?: string;
  redact: (text: string) => string;
  /** Key of the account's resolved base (base_url.resolve), computed on first use. */
  cacheKey?: string;
}

const NO_ACCOUNT = new WeakMap<Provider, AccountFacts>();
const FACTS = new WeakMap<AccountCredentials, AccountFacts>();

function accountFacts(provider: Provider, account: AccountCredentials | null): AccountFacts {
  const cached = account ? FACTS.get(account) : NO_ACCOUNT.get(provider);
  if (cached && cached.provider === provider) return cached;
  // A field added to provider.yaml after the account was saved takes its default rather than no value.
  const fields = account ? withFieldDefaults(account.fields, provider.spec.account.fields) : {};
  const publicFields: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) if (!provider.secretFields.has(k)) publicFields[k] = v;
  Object.freeze(publicFields);
  const headers = { accept: 'application/json', ...providerHeaders(provider, publicFields) };
  const facts: AccountFacts = { provider, fields, headers, publicFields, auth: {}, authQuery: [], redact: (text) => text };
  if (account) {
    const api = connectedApi(provider, account);
    if (api) {
      const view = { account: fields, connection: { access_token: account.connection!.accessToken } };
      facts.base = String(api.base.render(view, encodeURIComponent)).replace(/\/+$/, '');
      for (const h of api.headers) facts.auth[h.name.toLowerCase()] = String(h.template.render(view));
    } else {
      facts.auth = authHeaders(provider, fields);
      facts.authQuery = Object.entries(filledTemplates(provider.authQuery, fields));
      facts.base = baseUrl(provider, fields);
    }
    facts.baseOrigin = new URL(facts.base).origin;
    // Secret fields, the access token, and the credential of each auth header (the Basic form of e-mail:token, for one) or query parameter.
    const secrets = [...[...provider.secretFields].map((f) => fields[f]), account.connection?.accessToken];
    const credentials = [...Object.values(facts.auth), ...facts.authQuery.map(([, v]) => v)].map((v) => v.split(' ').pop()!);
    facts.redact = redactor([...secrets, ...credentials]);
    FACTS.set(account, facts);
  } else NO_ACCOUNT.set(provider, facts);
  return facts;
}

/** The provider's connect.api when the account is a connected one that calls through it. */
const connectedApi = (provider: Provider, account: AccountCredentials) => (account.connection ? provider.connect?.api : undefined);

/** A 401 that the provider's own rules call `unauthorized`: the credentials (not, say, a row-level policy) were refused. */
function refusesCredentials(provider: Provider, res: UpstreamResponse, facts: AccountFacts): boolean {
  return mapUpstreamError(undefined, undefined, res, { args: {}, account: facts.publicFields, steps: {} }, provider).code === 'unauthorized';
}

/** The URL in the account's base field, without a trailing slash (an instance root, a site). */
function accountRoot(provider: Provider, fields: Readonly<Record<string, string>>): string {
  const raw = fields[provider.spec.base_url.field];
  if (!raw) throw new ToolError('account_invalid', `The bound account has no ${provider.spec.base_url.field}`);
  const url = new URL(raw);
  return url.origin + url.pathname.replace(/\/+$/, '');
}

const baseUrl = (provider: Provider, fields: Readonly<Record<string, string>>) => accountRoot(provider, fields) + (provider.spec.base_url.path ?? '');

/** A verification way applies when the account has every field of `when.set` and none of `when.unset`. */
const wayApplies = (way: VerifyWay, fields: Readonly<Record<string, string>>) =>
  (way.when?.set ?? []).every((f) => Boolean(fields[f])) && (way.when?.unset ?? []).every((f) => !fields[f]);

function authHeaders(provider: Provider, fields: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  const basic = provider.spec.auth?.basic;
  if (basic && fields[basic.username] && fields[basic.password]) {
    out.authorization = 'Basic ' + Buffer.from(`${fields[basic.username]}:${fields[basic.password]}`).toString('base64');
  }
  for (const [name, value] of Object.entries(filledTemplates(provider.authHeaders, fields))) out[name.toLowerCase()] = value;
  return out;
}

/** Auth templates rendered over the account; one whose fields are empty is left out (an n8n account without an API key). */
function filledTemplates(templates: readonly AuthTemplate[], fields: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of templates) if (t.fields.every((f) => fields[f])) out[t.name] = String(t.template.render({ account: fields }));
  return out;
}

/** provider.yaml `headers`, rendered over the account's non-secret fields; one that renders empty is left out. */
function providerHeaders(provider: Provider, publicFields: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of provider.headers) {
    if (typeof h.value === 'string') {
      out[h.name] = h.value;
      continue;
    }
    if (!h.fields.every((f) => publicFields[f])) continue;
    const value = h.value.render({ account: publicFields });
    if (value !== undefined && value !== null && value !== '') out[h.name] = String(value);
  }
  return out;
}

const ARGUMENT_WORDS = { whole: 'the arguments', unknown: 'is not a parameter of this tool' };
const OUTPUT_WORDS = { whole: 'the result', unknown: 'is not expected in the result' };

/** `"max_results" must be <= 1000; "jql" is required` — names each bad field, never echoes values. */
export function describeSchemaErrors(errors: ErrorObject[], words = ARGUMENT_WORDS): string {
  const seen = new Set<string>();
  for (const e of errors) {
    const at = pointerParts(e.instancePath);
    let text: string;
    switch (e.keyword) {
      case 'required':
        text = `"${[...at, (e.params as { missingProperty: string }).missingProperty].join('.')}" is required`;
        break;
      case 'additionalProperties':
        text = `"${[...at, (e.params as { additionalProperty: string }).additionalProperty].join('.')}" ${words.unknown}`;
        break;
      case 'enum':
        text = `"${at.join('.')}" must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.map(String).join(', ')}`;
        break;
      default:
        text = at.length ? `"${at.join('.')}" ${e.message}` : `${words.whole} ${e.message}`;
    }
    seen.add(text);
  }
  return [...seen].join('; ');
}

/** An OffLoop job run on this thread (an engine without worker threads). */
async function runHere<T>(module: URL, name: string, arg: unknown): Promise<T> {
  const fn = ((await import(module.href)) as Record<string, (arg: unknown) => T | Promise<T>>)[name];
  return fn(arg);
}
