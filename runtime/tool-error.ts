// The typed failure of a tool call. It becomes an MCP result with isError: true and
// structuredContent.error = {code, message, retryable, provider_status}.

export interface ToolErrorBody {
  code: string;
  message: string;
  retryable: boolean;
  provider_status: number | null;
  /** What a client can act on besides the message (account_needs_reauth: the account and its reconnect link). */
  [detail: string]: unknown;
}

/**
 * The caller acts as an end user who has no usable account of the tool's provider: `details` carry the provider
 * and `connect_url`, the page where they connect one (the MCP endpoint may ask the client to open it instead).
 */
export const ACCOUNT_NOT_CONNECTED = 'account_not_connected';

export class ToolError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly providerStatus: number | null;
  /**
   * True when the credits of the call are given back: the failure is ours or transient (no answer,
   * timeout, provider 5xx or 429, a request we refused to send). A provider's 2xx/4xx answer keeps them.
   */
  readonly refund: boolean;
  /** Fields of structuredContent.error besides the four above (never a secret). */
  readonly details?: Record<string, unknown>;

  constructor(
    code: string,
    message: string,
    opts: { retryable?: boolean; providerStatus?: number | null; refund?: boolean; details?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.providerStatus = opts.providerStatus ?? null;
    this.refund = opts.refund ?? this.retryable;
    this.details = opts.details;
  }

  toJSON(): ToolErrorBody {
    return Object.assign({}, this.details, { code: this.code, message: this.message, retryable: this.retryable, provider_status: this.providerStatus });
  }
}
