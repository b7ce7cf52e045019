// Notion's public-integration OAuth (/work/shared/connections.md §2), on the Notion sandbox's own host
// (api.notion.com): GET /v1/oauth/authorize (owner=user) renders the consent page where the user picks the
// pages to share; POST /v1/oauth/token takes HTTP Basic client_id:client_secret and a JSON body
// (authorization_code with the redirect_uri rules, refresh_token with rotation); POST /v1/oauth/revoke and
// /v1/oauth/introspect. The API accepts the access token as a bearer and sees exactly the pages shared with
// that integration's bot; a revoked or expired one gets Notion's 401 `unauthorized`.
//
// Enabled with `startNotionSandbox({ oauth: { clients } })`; the sandbox then has `oauth: NotionOAuth`.
import type { SandboxClock } from '../oauth/clock.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';

export interface NotionOAuthOptions {
  /** The public integrations registered at Notion. */
  clients: OAuthClient[];
  clock?: SandboxClock;
  /** How long an access token works (unverified at Notion; default in sandboxes/oauth/unverified.ts). */
  accessTokenTtlMs?: number;
}

export interface NotionOAuth extends OAuthControls {
  /** The signed-in Notion user who consents (Ada Lovelace of the seed). */
  user: { id: string; name: string; email: string };
  workspace: { id: string; name: string; icon: string | null };
}
