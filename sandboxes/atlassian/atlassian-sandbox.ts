// Atlassian's OAuth 2.0 (3LO) authorization server and API gateway (/work/shared/connections.md §1), in front of
// one Jira sandbox per site:
// - auth host (auth.atlassian.com): GET /authorize renders the consent page (app name, scopes in words, the
//   signed-in user's sites; Accept / Cancel); POST /oauth/token takes a JSON body with the client id and secret
//   in it (authorization_code, refresh_token with rotation, the 10-minute reuse leeway, family revocation,
//   90 days idle and 365 days absolute on the sandbox clock).
// - API host (api.atlassian.com): GET /oauth/token/accessible-resources, and /ex/jira/<cloudId>/rest/api/3/...
//   routed to that site's Jira sandbox with `Authorization: Bearer <access_token>` (scoped API tokens by Basic
//   too, as the real gateway). A 3LO token is refused at the site's own URL.
import type { SocketAddress } from '../harness.ts';
import type { JiraSandbox } from '../jira/jira-sandbox.ts';
import type { SandboxClock } from '../oauth/clock.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';
import type { RecordedRequest } from '../harness.ts';

export interface AtlassianSiteOptions {
  /** The site's name, as in <name>.atlassian.net. */
  name: string;
  /** Its cloud id (random UUID by default). */
  cloudId?: string;
  /** An existing Jira sandbox to stand for this site (default: one is started on loopback, and closed with this sandbox). */
  jira?: JiraSandbox;
}

export interface AtlassianSandboxOptions {
  /** The OAuth apps registered at the developer console. */
  clients: OAuthClient[];
  /** The signed-in user's sites; default two (`DEFAULT_SITES`); `[]` is an account without a Jira site. */
  sites?: AtlassianSiteOptions[];
  clock?: SandboxClock;
  /** Unix sockets for the auth and API hosts (the service's own sandboxes); loopback ports by default. */
  authSocket?: SocketAddress;
  apiSocket?: SocketAddress;
  /** Keep every request to the auth and API hosts in `requests` (default true). */
  record?: boolean;
}

export interface AtlassianSite {
  cloudId: string;
  name: string;
  /** The site's own URL (the Jira sandbox's); 3LO tokens are refused there. */
  url: string;
  /** The site's data and requests. */
  jira: JiraSandbox;
}

export interface AtlassianSandbox extends OAuthControls {
  /** Stands for https://auth.atlassian.com (GET /authorize, POST /oauth/token). */
  authUrl: string;
  /** Stands for https://api.atlassian.com (/oauth/token/accessible-resources, /ex/jira/<cloudId>/...). */
  apiUrl: string;
  sites: AtlassianSite[];
  /** The signed-in Atlassian account that consents (Alice Admin of the Jira seed). */
  user: { accountId: string; name: string; email: string };
  /** Requests to the auth and API hosts (the sites record their own). */
  requests: RecordedRequest[];
  /** The user changes their password: every grant of every app ends. */
  changePassword(): void;
  close(): Promise<void>;
}

/** The two sites a user has unless a test says otherwise. */
export const DEFAULT_SITES: readonly AtlassianSiteOptions[] = [{ name: 'acme' }, { name: 'acme-labs' }];

export async function startAtlassianSandbox(options: AtlassianSandboxOptions): Promise<AtlassianSandbox> {
  void options;
  throw new Error('startAtlassianSandbox: being built on branch oauth-sandboxes');
}
