// What the loader produces: providers and tools compiled for the engine.
import type { ValidateFunction } from 'ajv';
import type { BasePlugin, CallPlugin, Plugin, RequestPlugin, ResponsePlugin } from '../plugin-api.ts';
import type { CompiledTemplate } from '../template/template.ts';
import type { CompiledTree } from '../template/tree.ts';
import type { HttpMethod, JsonSchema, ProviderSpec, ToolSpec, VerifyWay } from './types.ts';

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
}

export interface CompiledStep {
  name: string;
  title: string;
  when?: CompiledTemplate;
  request: CompiledRequest;
}

export interface CompiledErrorRule {
  status?: ReadonlySet<number>;
  providerCodes?: ReadonlySet<string>;
  contains?: string;
  step?: string;
  code: string;
  message: CompiledTemplate | string;
  /** What the user can do, appended after the provider's detail. */
  hint?: string;
  retryable?: boolean;
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
  /** Names of secret account fields: usable in auth only, encrypted at rest, redacted from errors. */
  secretFields: ReadonlySet<string>;
  authHeaders: AuthTemplate[];
  /** Query parameters of the auth (an API key in the URL), sent like the auth headers. */
  authQuery: AuthTemplate[];
  errors: CompiledErrorRule[];
  /** The plugin of base_url.resolve. */
  baseResolver?: BoundPlugin<BasePlugin>;
  /** The ways to verify an account, in order (empty: the provider declares none). */
  verify: Array<{ way: VerifyWay; request: CompiledRequest }>;
}

export interface BaseTool {
  spec: ToolSpec;
  file: string;
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
