// Atlassian's classic Jira scopes as the consent page names them, and the scope each Jira route needs at the
// gateway (developer.atlassian.com's "Scopes for OAuth 2.0 (3LO)": read:jira-work for reading issues, projects
// and searches; write:jira-work for creating and changing them; read:jira-user for people).

/** Every scope the sandbox knows, with the words the consent page shows for it. */
export const SCOPE_WORDS: Record<string, string> = {
  'read:jira-work': 'View Jira issue data',
  'write:jira-work': 'Create and manage issues',
  'read:jira-user': 'View user profiles',
  'manage:jira-project': 'Manage project settings',
  'manage:jira-configuration': 'Manage Jira global settings',
  'manage:jira-webhook': 'Manage Jira webhooks',
  'read:me': 'View your profile',
  offline_access: 'Keep its access when you are not using it',
};

const USER_ROUTES = [/^\/rest\/api\/3\/myself$/, /^\/rest\/api\/3\/user\/search$/];
const READING_POSTS = [/^\/rest\/api\/3\/search\/jql$/, /^\/rest\/api\/3\/search\/approximate-count$/];

/** The scope a Jira request needs, from its method and path (below /ex/jira/<cloudId>). */
export function requiredScope(method: string, path: string): string {
  if (USER_ROUTES.some((r) => r.test(path))) return 'read:jira-user';
  if (method === 'GET' || method === 'HEAD' || (method === 'POST' && READING_POSTS.some((r) => r.test(path)))) return 'read:jira-work';
  return 'write:jira-work';
}
