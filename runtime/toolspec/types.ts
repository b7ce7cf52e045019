// TypeScript shapes of the YAML spec files. The JSON Schemas in ./schemas are the source of truth for
// validation; these mirror them for the code that reads loaded specs.

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type JsonSchema = Record<string, unknown>;

export interface PluginUseSpec {
  use: string;
  with?: Record<string, unknown>;
}

export interface RequestSpec {
  method: HttpMethod;
  path?: string;
  query?: Record<string, unknown>;
  headers?: Record<string, string>;
  body?: unknown;
  timeout_seconds?: string | number;
  plugins?: PluginUseSpec[];
  call?: PluginUseSpec;
}

export interface StepSpec {
  name: string;
  title?: string;
  when?: string;
  request: RequestSpec;
}

export interface ErrorRuleSpec {
  status?: number | number[];
  provider_code?: string | string[];
  contains?: string;
  step?: string;
  code: string;
  message: string;
  hint?: string;
  retryable?: boolean;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface ToolSpec {
  id: string;
  provider: string;
  title: string;
  description: string;
  credits: number;
  account?: 'required' | 'optional' | 'none';
  annotations: ToolAnnotations;
  input: JsonSchema;
  output: JsonSchema;
  request?: RequestSpec;
  steps?: StepSpec[];
  response?: { map?: unknown; plugins?: PluginUseSpec[] };
  errors?: ErrorRuleSpec[];
}

export interface AccountFieldSpec {
  name: string;
  title: string;
  description?: string;
  secret?: boolean;
  format?: 'url' | 'email' | 'text';
  pattern?: string;
  pattern_message?: string;
  required?: boolean;
  /** Stored when a new account leaves the field out. */
  default?: string;
}

export interface ProviderSpec {
  id: string;
  title: string;
  account: { kind: string; fields: AccountFieldSpec[] };
  base_url: { field: string; path?: string; resolve?: string };
  auth?: { basic?: { username: string; password: string }; headers?: Record<string, string> };
  headers?: Record<string, string>;
  errors?: ErrorRuleSpec[];
  verify?: VerifyWay | VerifyWay[];
  connect?: ConnectSpec;
}

/**
 * How an owner connects an account by OAuth 2.0 (authorization code) instead of pasting a secret
 * (provider.yaml `connect`). The operator registers the app and gives its client id and secret
 * (OAUTH_<PROVIDER>_CLIENT_ID / _CLIENT_SECRET); without them the provider offers the token form only.
 */
export interface ConnectSpec {
  /** The provider's name for its sign-in, in "Connect with <by>" (Atlassian, Notion, Supabase). */
  by: string;
  authorize_url: string;
  token_url: string;
  /** How the token endpoint takes its parameters: a JSON object, or an HTML form (application/x-www-form-urlencoded). */
  token_body: 'json' | 'form';
  /** Where the client id and secret go: in the body, or as HTTP Basic. */
  client_auth: 'body' | 'basic';
  /** PKCE (RFC 7636) with S256, for providers that verify it. */
  pkce?: boolean;
  scopes?: string[];
  /** Constant parameters of the authorize URL (audience, prompt, owner...). */
  authorize_params?: Record<string, string>;
  /** Top-level string fields of the token answer kept as the account's (non-secret) fields. */
  keep?: string[];
  /** What a connection reaches, in words shown to the owner (template over account.<field>); a discover plugin says it itself. */
  says?: string;
  /** A refresh token expires after this many days unused: the service refreshes well before. */
  refresh_idle_days?: number;
  /** A connect plugin: what the grant reaches, and the account fields of the one the owner picks. */
  discover?: PluginUseSpec;
  /**
   * How calls use the connection: the API base and the auth headers, templates over account.<field> and
   * connection.access_token. Without it, calls use base_url and auth like a pasted account, with the fields
   * the connection filled in.
   */
  api?: { base_url: string; headers: Record<string, string> };
}

/** One way to check an account (provider.yaml `verify`); the first whose `when` holds is used. */
export interface VerifyWay {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  accept_status?: number[];
  when?: { set?: string[]; unset?: string[] };
  from?: 'api' | 'instance';
  expect?: Record<string, string | number | boolean>;
  says?: string;
}
