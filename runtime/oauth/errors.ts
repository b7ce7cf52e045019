// The error answers of the OAuth endpoints: `{error, error_description}` with the code the RFC names
// (RFC 6749 section 5.2, RFC 7591 section 3.2.2, RFC 7009 section 2.2.1).
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'unsupported_token_type'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable';

export class OAuthError extends Error {
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    /** Seconds after which a refused request may be tried again (Retry-After), when that is known. */
    readonly retryAfter?: number,
  ) {
    super(`${code}: ${description}`);
  }

  get body() {
    return { error: this.code, error_description: this.description };
  }
}
