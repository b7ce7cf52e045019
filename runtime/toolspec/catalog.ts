// What the loader produces: providers and tools compiled for the engine.
import type { ValidateFunction } from 'ajv';
import type { BasePlugin, CallPlugin, ConnectPlugin, Plugin, RequestPlugin, ResponsePlugin } from '../plugin-api.ts';
import type { CompiledTemplate } from '../template/template.ts';
import type { CompiledTree } from '../template/tree.ts';
import type { ToolExchanges } from './exchanges.ts';
import type { ConnectSpec, HttpMethod, JsonSchema, PaginationSpec, ProviderSpec, ToolSpec, VerifyWay } from './types.ts';

/** A plugin chosen by a spec slot, with its checked options; the slot fixes the plugin's hook. */
export interface BoundPlugin<P extends Plugin = Plugin> {
  plugin: P;
  options: Record<string, unknown>;
}

export interface CompiledRequest {
  method: HttpMethod;
  /** Path segments: plain text, or a template whose expression outputs are URL-encoded. */
  path: Array<string | CompiledTemplate>;
  query: Array<[string, CompiledTree]>;
  headers: Array<[string, CompiledTree]>;
  body?: CompiledTree;
  timeoutSeconds?: CompiledTree;
  plugins: Array<BoundPlugin<RequestPlugin>>;
  call?: BoundPlugin<CallPlugin>;
  paginate?: CompiledPagination;
}

/** A request's `paginate:`, its pointers split into parts. */
export interface CompiledPagination {
  style: PaginationSpec['style'];
  /** Where each page's list is ([]: the body), and the pointer as written, for messages. */
  items: string[];
  itemsPointer: string;
  param: { in: 'query' | 'body'; name: string };
  cursor?: string[];
  hasMore?: string[];
  total?: string[];
  pageSize?: CompiledTree;
  maxPages?: CompiledTree;
  /** The result-size budget of the items collected, in bytes of JSON. */
  maxBytes: number;
}

export interface CompiledStep {
  name: string;
  title: string;
  when?: CompiledTemplate;
  request: CompiledRequest;
}

/** Where a provider's detail comes from: a JSON pointer into the answer's body, or a template over the answer. */
export type DetailSource = { pointer: string[] } | { template: CompiledTemplate };

export interface CompiledErrorRule {
  status?: ReadonlySet<number>;
  providerCodes?: ReadonlySet<string>;
  contains?: string;
  /** Header (lower case) -> the values it may have, or whether it is present. */
  headers?: Array<[string, readonly string[] | boolean]>;
  when?: CompiledTemplate;
  step?: string;
  /** Our code, or a template over the answer whose value is turned into snake_case. */
  code: CompiledTemplate | string;
  message: CompiledTemplate | string;
  /** The provider's detail for this rule, instead of the provider's own reading. */
  detail?: DetailSource;
  /** What the user can do, appended after the provider's detail. */
  hint?: CompiledTemplate | string;
  retryable?: boolean;
  refund?: boolean;
}

/** A header or query parameter of a provider's auth: a template over account fields, left out when one is empty. */
export interface AuthTemplate {
  name: string;
  template: CompiledTemplate;
  fields: string[];
}

export interface Provider {
  spec: ProviderSpec;
  file: string;
  /** The sha-256 of the file's text (a reload keeps what an unchanged file compiled to). */
  digest: string;
  /** Names of secret account fields: usable in auth only, encrypted at rest, redacted from errors. */
  secretFields: ReadonlySet<string>;
  authHeaders: AuthTemplate[];
  /** Query parameters of the auth (an API key in the URL), sent like the auth headers. */
  authQuery: AuthTemplate[];
  /** provider.yaml `headers`: constants, or templates over non-secret account fields. */
  headers: Array<{ name: string; value: CompiledTemplate | string; fields: string[] }>;
  errors: CompiledErrorRule[];
  /** provider.yaml `error_body`: where its error answers keep their machine code and their detail. */
  errorBody: { code?: string[]; detail?: DetailSource };
  /** The plugin of base_url.resolve. */
  baseResolver?: BoundPlugin<BasePlugin>;
  /** The ways to verify an account, in order (empty: the provider declares none). */
  verify: Array<{ way: VerifyWay; request: CompiledRequest }>;
  /** How an owner connects an account by OAuth (provider.yaml `connect`). */
  connect?: CompiledConnect;
}

export interface CompiledConnect {
  spec: ConnectSpec;
  /** The plugin of connect.discover. */
  discover?: BoundPlugin<ConnectPlugin>;
  /** connect.api: a connected account's API base (expressions URL-encoded) and auth headers. */
  api?: { base: CompiledTemplate; headers: Array<{ name: string; template: CompiledTemplate }> };
  /** Origins the discovery may send the access token to: those of the URLs in its options. */
  discoveryOrigins: ReadonlySet<string>;
  /** connect.says: what a connection reaches, in words. */
  says?: CompiledTemplate;
}

export interface BaseTool {
  spec: ToolSpec;
  file: string;
  /** The sha-256 of the file's text. */
  digest: string;
  provider: Provider;
  /** Validates and completes (defaults) the arguments in place; compiled once at load. */
  validate: ValidateFunction;
  /** Checks a result against the output schema (structuredContent must match it). */
  validateOutput: ValidateFunction;
  steps: CompiledStep[];
  responseMap?: CompiledTree;
  responsePlugins: Array<BoundPlugin<ResponsePlugin>>;
  errors: CompiledErrorRule[];
}

export interface Catalog {
  providers: ReadonlyMap<string, Provider>;
  /** Tools by id, in a deterministic order (by id). */
  tools: ReadonlyMap<string, BaseTool>;
  /** The exchanges written beside tools (<tool file>.exchanges.yaml), by tool id. */
  exchanges: ReadonlyMap<string, ToolExchanges>;
}

export type { JsonSchema };

/**
 * The providers' titles in words, as the catalog declares them: "Jira Cloud, n8n, Notion or Supabase ...".
 * Pages and messages that name the providers use this, so a provider added as YAML is named everywhere.
 */
export function providerTitles(catalog: Catalog, conjunction: 'and' | 'or'): string {
  // In alphabetical order, as a person lists them (the catalog's own order is by folder).
  const titles = [...catalog.providers.values()].map((p) => p.spec.title).sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }));
  return titles.length < 2 ? (titles[0] ?? '') : `${titles.slice(0, -1).join(', ')} ${conjunction} ${titles.at(-1)}`;
}
