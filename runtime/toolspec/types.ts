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
  auth?: { basic?: { username: string; password: string }; headers?: Record<string, string>; query?: Record<string, string> };
  headers?: Record<string, string>;
  errors?: ErrorRuleSpec[];
  verify?: VerifyWay | VerifyWay[];
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
