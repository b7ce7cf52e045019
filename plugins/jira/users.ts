// Jira Cloud identifies people only by accountId (GDPR strict mode): callers give an e-mail, a display
// name or an accountId, and the request must carry {"accountId": "..."}.
import { type ProviderHttp, type RequestPlugin, ToolError, UpstreamStatusError } from '../../runtime/plugin-api.ts';
import { POINTERS_OPTIONS, updateAt } from '../pointer.ts';

/** A user as GET /rest/api/3/user/search returns it (emailAddress is absent when the user hides it). */
export interface JiraUser {
  accountId: string;
  accountType?: string;
  emailAddress?: string;
  displayName?: string;
  active?: boolean;
}

/** 557058:uuid, 712020:uuid, qm:uuid:uuid, or the older 24-character form. */
const ACCOUNT_ID = /^(?:[A-Za-z0-9]{24}|[A-Za-z0-9]+:[A-Za-z0-9-]+(?::[A-Za-z0-9-]+)?)$/;

async function searchUsers(http: ProviderHttp, param: 'query' | 'accountId', value: string): Promise<JiraUser[]> {
  const res = await http.send({ method: 'GET', path: '/rest/api/3/user/search', query: [[param, value]], headers: {} }, { expectOk: false });
  // An accountId Jira does not know may be answered with 400/404 instead of []: that is "no such user".
  if (param === 'accountId' && (res.status === 400 || res.status === 404)) return [];
  if (res.status < 200 || res.status > 299) throw new UpstreamStatusError(res);
  return Array.isArray(res.body) ? (res.body as JiraUser[]).filter((u) => u && typeof u.accountId === 'string') : [];
}

/** "Bob Builder <bob@example.com> (accountId 712020:...)" — what a caller needs to pick the right one. */
function describeUser(u: JiraUser, note = ''): string {
  const email = u.emailAddress ? ` <${u.emailAddress}>` : '';
  return `${u.displayName ?? 'unnamed user'}${email} (accountId ${u.accountId}${note})`;
}

/** A person who can be assigned work: an active Atlassian account (not an app, not a customer). */
const isAssignable = (u: JiraUser) => u.accountType === 'atlassian' && u.active !== false;

/**
 * Resolves an e-mail, display name or accountId to exactly one accountId. An exact e-mail match wins;
 * when no visible e-mail matches, a single found user whose e-mail is hidden is taken. A display name
 * must match one person (an exact name first). Throws ToolError naming the candidates when there is no match or several.
 */
export async function resolveAccountId(http: ProviderHttp, given: string, role: string): Promise<string> {
  const value = given.trim();
  if (ACCOUNT_ID.test(value)) {
    const [byId] = await searchUsers(http, 'accountId', value);
    if (byId && isAssignable(byId)) return byId.accountId;
    if (byId)
      throw new ToolError(
        'user_not_found',
        `The ${role} "${value}" is not an active Jira user: ${describeUser(byId, byId.active === false ? ', inactive' : `, ${byId.accountType}`)}`,
      );
  }
  const found = await searchUsers(http, 'query', value);
  const people = found.filter(isAssignable);
  const wanted = value.toLowerCase();
  let candidates: JiraUser[];
  if (value.includes('@')) {
    const exact = people.filter((u) => u.emailAddress?.toLowerCase() === wanted);
    candidates = exact.length ? exact : people.filter((u) => !u.emailAddress);
  } else {
    const exact = people.filter((u) => u.displayName?.toLowerCase() === wanted);
    candidates = exact.length ? exact : people;
  }
  if (candidates.length === 1) return candidates[0].accountId;
  if (candidates.length > 1) {
    throw new ToolError(
      'ambiguous_user',
      `The ${role} "${value}" matches ${candidates.length} Jira users: ${candidates.map((u) => describeUser(u)).join('; ')}. Give the e-mail address or the accountId`,
    );
  }
  const others = found.map((u) =>
    describeUser(u, u.active === false ? ', inactive' : u.accountType !== 'atlassian' ? `, ${u.accountType ?? 'unknown'} account` : ''),
  );
  throw new ToolError(
    'user_not_found',
    `No active Jira user matches the ${role} "${value}"` + (others.length ? ` (found but not matching or not assignable: ${others.join('; ')})` : ''),
  );
}

/**
 * Replaces the strings at the given body pointers (e.g. /fields/assignee) with {"accountId": ...}.
 * The role named in errors is the pointer's last segment.
 */
export const resolveUsersPlugin: RequestPlugin<{ pointers: string[] }> = {
  name: 'jira.resolve_users',
  hook: 'request',
  description: 'Resolves the e-mails, display names or accountIds at the given body pointers to {"accountId": ...} through the user search.',
  optionsSchema: POINTERS_OPTIONS,
  async apply(request, { options, http }) {
    for (const pointer of options.pointers) {
      const role = pointer.split('/').pop()!;
      const given: string[] = [];
      updateAt(request.body, pointer, (v) => {
        if (typeof v === 'string') given.push(v);
        return undefined;
      });
      const resolved = new Map<string, string>();
      for (const value of given) if (!resolved.has(value)) resolved.set(value, await resolveAccountId(http, value, role));
      updateAt(request.body, pointer, (v) => (typeof v === 'string' ? { accountId: resolved.get(v) } : undefined));
    }
    return request;
  },
};
