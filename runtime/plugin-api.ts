// The plugin interface (docs/architecture.md, "Plugins"). Plugins are TypeScript modules registered by name in
// plugins/registry.ts and selected from typed slots of a tool spec; a spec never names a module path.
import type { UpstreamResponse } from './http/client.ts';
import type { HttpMethod } from './toolspec/types.ts';

// What plugins may use of the runtime, all through this one module (the linter keeps plugins to it).
export type { UpstreamResponse, HttpMethod };
export { ToolError } from './tool-error.ts';
export { providerDetail } from './engine/errors.ts';
export { pointerParts } from './json-pointer.ts';
export { headerValueProblem } from './http/guard.ts';

/** A provider request as plugins see it, before the base URL and authentication are added. */
export interface OutboundRequest {
  method: HttpMethod;
  /** Path below the provider's base URL, already encoded. */
  path: string;
  /** An absolute URL instead of `path` (webhooks); it still passes the outbound guard. */
  url?: URL;
  /** Query parameters in order; repeated names are allowed. */
  query: Array<[string, string]>;
  headers: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

/** Thrown by ProviderHttp.send for a non-2xx answer; the engine maps it with the tool's error rules. */
export class UpstreamStatusError extends Error {
  constructor(readonly response: UpstreamResponse) {
    super(`provider answered ${response.status}`);
  }
}

export interface SendOptions {
  /** Throw UpstreamStatusError for a non-2xx answer (default true). */
  expectOk?: boolean;
  /**
   * Add the account's auth headers (default true). They are only ever sent to the account's own
   * origin; false leaves them out there too (e.g. a webhook on the same instance).
   */
  withAuth?: boolean;
  /**
   * Retry after a network error, 408, 429 or 5xx (idempotent methods only). Defaults to the tool's
   * idempotentHint: a webhook that starts a workflow must never run twice because of us.
   */
  retry?: boolean;
  /** Follow redirects (default true); false returns the 3xx answer itself. */
  followRedirects?: boolean;
}

/** The provider client bound to the call's account: base URL, authentication, default headers, guard. */
export interface ProviderHttp {
  send(request: OutboundRequest, options?: SendOptions): Promise<UpstreamResponse>;
}

export interface PluginContext<Options = Record<string, never>> {
  options: Options;
  /** The validated arguments (defaults applied). */
  args: Readonly<Record<string, unknown>>;
  /** The account's non-secret fields (site URL, e-mail...). Secrets never reach plugins. */
  account: Readonly<Record<string, string>>;
  http: ProviderHttp;
  toolId: string;
  signal: AbortSignal;
  /** Reports progress of a long call (sent to the client when it asked for progress). */
  progress(message: string): void;
  /**
   * Runs `name`, a pure function exported by the plugin module at `module` (`new URL('./x.ts', import.meta.url)`),
   * with `arg` in a worker thread, off the event loop every owner's requests share: for work that can take long
   * on an owner's input, such as converting markdown. It waits only behind the calling owner's own jobs. The
   * argument and the result are copied (structured clone); a ToolError thrown there arrives as one.
   */
  offLoop<T>(module: URL, name: string, arg: unknown): Promise<T>;
}

interface PluginBase {
  name: string;
  description: string;
  /** JSON Schema of `with:` in the spec; checked at load. */
  optionsSchema?: Record<string, unknown>;
}

/** Changes the rendered request (convert a field, add query parameters, resolve a value through ctx.http). */
export interface RequestPlugin<O = unknown> extends PluginBase {
  hook: 'request';
  apply(request: OutboundRequest, ctx: PluginContext<O>): OutboundRequest | Promise<OutboundRequest>;
}

/** Carries out the request itself through ctx.http (pagination, several calls). */
export interface CallPlugin<O = unknown> extends PluginBase {
  hook: 'call';
  apply(request: OutboundRequest, ctx: PluginContext<O>): Promise<UpstreamResponse>;
}

/** Changes the mapped result. */
export interface ResponsePlugin<O = unknown> extends PluginBase {
  hook: 'response';
  apply(result: unknown, ctx: PluginContext<O>): unknown | Promise<unknown>;
}

/** Where an account's API answers, when that depends on its credentials; with what was found, in words. */
export interface BaseResolution {
  base: string;
  says: string;
  /** Why no candidate accepted the credentials (the base is then the account's own URL). */
  problem?: string;
}

export interface BaseContext<Options = Record<string, never>> {
  options: Options;
  account: Readonly<Record<string, string>>;
  /** Sends with the account's credentials to any URL of the account's own fields (and nowhere else). */
  http: ProviderHttp;
  signal: AbortSignal;
}

/**
 * Finds the API base of an account (provider.yaml `base_url.resolve`), e.g. Jira's API gateway for scoped
 * tokens. Run once per account and cached; `base` is the URL from the account's base field.
 */
export interface BasePlugin<O = unknown> extends PluginBase {
  hook: 'base';
  apply(base: string, ctx: BaseContext<O>): Promise<BaseResolution>;
}

export type Plugin = RequestPlugin | CallPlugin | ResponsePlugin | BasePlugin;
export type PluginHook = Plugin['hook'];
export type PluginRegistry = ReadonlyMap<string, Plugin>;
