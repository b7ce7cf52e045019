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
  paginate?: PaginationSpec;
}

/** Where a page is selected in a request: one query parameter or one top-level body field. */
export type PageParam = { query: string; body?: never } | { body: string; query?: never };

/** How a list request pages (tool.schema.json#/definitions/pagination). */
export interface PaginationSpec {
  style: 'cursor' | 'page' | 'offset' | 'link';
  /** JSON pointer to each page's list ("" = the body). */
  items?: string;
  param: PageParam;
  cursor?: string;
  has_more?: string;
  total?: string;
  page_size?: number | string;
  max_pages?: number | string;
  max_bytes?: number;
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
  /** Header name -> exact value, any of several values, or present (true) / absent (false). */
  headers?: Record<string, string | string[] | boolean>;
  /** A template over response, args and account; the rule matches when it renders truthy. */
  when?: string;
  step?: string;
  /** snake_case, or a template whose value is turned into snake_case. */
  code: string;
  message: string;
  /** A JSON pointer into the answer's body, or a template; "" appends no detail. */
  detail?: string;
  hint?: string;
  retryable?: boolean;
  /** Whether the credits go back (default: 429 and 5xx). */
  refund?: boolean;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** The version of the spec language a file is written in (`version:`; absent = 1). */
export type LanguageVersion = 1;

export interface ToolSpec {
  version?: LanguageVersion;
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
  /** Stored when a new account leaves the field out; stands in for accounts saved before the field existed. */
  default?: string;
}

export interface ProviderSpec {
  version?: LanguageVersion;
  id: string;
  title: string;
  account: { kind: string; fields: AccountFieldSpec[] };
  base_url: { field: string; path?: string; resolve?: string };
  auth?: { basic?: { username: string; password: string }; headers?: Record<string, string>; query?: Record<string, string> };
  /** Constants, or templates over non-secret account fields. */
  headers?: Record<string, string>;
  errors?: ErrorRuleSpec[];
  /** Where error answers keep their machine code (a pointer) and their detail (a pointer or a template). */
  error_body?: { code?: string; detail?: string };
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

/** A file of exchanges beside a tool spec (schemas/exchanges.schema.json). */
export interface ExchangesSpec {
  version?: LanguageVersion;
  account?: Record<string, string>;
  exchanges: ExchangeSpec[];
}

export interface ExchangeSpec {
  name: string;
  arguments: Record<string, unknown>;
  requests: ExchangeRequestSpec[];
  result?: unknown;
  error?: { code: string; message?: string; retryable?: boolean; provider_status?: number | null };
}

export interface ExchangeRequestSpec {
  method: HttpMethod;
  path: string;
  query?: Record<string, string | string[]>;
  headers?: Record<string, string>;
  body?: unknown;
  answer: { status?: number; headers?: Record<string, string>; body?: unknown };
}
