// What the three OAuth sandboxes (Atlassian, Notion, Supabase) have in common: the apps registered at them, the
// record of their token endpoint, and the controls a test uses to act as the user at the provider.
//
// Serving the consent pages from another server (the service's own origin, where a browser can reach them):
// each sandbox's `pages` is a request handler for its browser-facing routes only (the authorize page and the
// form it posts). It reads `req.url` relative to where it is mounted, so the host strips its mount prefix
// first (`/sandbox-consent/tracker/authorize?...` -> `/authorize?...`), and every link and form action in the
// pages is relative: the pages work under any prefix. The token endpoint and the APIs stay on the sandbox's
// own listeners (server to server). The consent form carries its own single-use request id; the pages set a
// strict Content-Security-Policy of their own (no script, no external resource, one hashed inline style).
import type http from 'node:http';
import type { SandboxClock } from './clock.ts';

/** An OAuth app registered at the provider by its developer (our operator). */
export interface OAuthClient {
  clientId: string;
  clientSecret: string;
  /** The callback URLs registered for the app; the authorize request must name one of them exactly. */
  redirectUris: string[];
  /** The app's name on the consent page (default "Tool Server"). */
  name?: string;
  /** The scopes the app may request (Atlassian: the developer console's permissions); default every scope the sandbox knows. */
  scopes?: string[];
}

/** One request that reached a token endpoint, in arrival order. */
export interface TokenRequestRecord {
  /** On the sandbox clock. */
  at: number;
  /** `grant_type` as sent ('' when missing). */
  grantType: string;
  /** The client it authenticated as, or claimed to be. */
  clientId?: string;
  status: number;
  /** The OAuth `error` answered, when it was refused. */
  error?: string;
}

/** A grant as a test inspects it (never its tokens). */
export interface GrantView {
  id: string;
  clientId: string;
  /** The provider's user who consented. */
  subject: string;
  scopes: string[];
  createdAt: number;
  /** Ended by the user (app removed, password changed) or by the provider. */
  revoked: boolean;
  /** Refresh tokens that would still be honoured now (not spent, expired or revoked). */
  liveRefreshTokens: number;
  /** Access tokens that would still be honoured now. */
  liveAccessTokens: number;
}

/** What every OAuth sandbox gives a test. */
export interface OAuthControls {
  readonly clock: SandboxClock;
  /** Every request the token endpoint answered, in arrival order (one a scripted fault answered is not in it). */
  readonly tokenRequests: TokenRequestRecord[];
  /** How many requests reached the token endpoint (with this grant_type, when given). */
  tokenRequestCount(grantType?: string): number;
  /** The user removes the app at the provider: every grant of the client (default every client) ends at once. */
  revokeApp(clientId?: string): void;
  /** The grants made so far, newest last. */
  grants(): GrantView[];
  /** The browser-facing routes (consent), for mounting under a path of another server (see the header above). */
  readonly pages: http.RequestListener;
}
