// The End users page: the people the owner's product serves, newest first, searched and paged as
// GET /api/end-users is (the same repository call, the same cursor), each with the accounts they connected and
// each account's health, the apps they approved, and their own budget. Their accounts of the whole page come in
// one query.
import type { EndUserDoc } from '../access/end-users.ts';
import { publicAccount } from '../accounts/accounts.ts';
import type { ApiDeps } from '../api/context.ts';

const PAGE_SIZE = 50;
const MAX_SEARCH = 200;

export async function endUsersView(d: ApiDeps, ownerId: string, query: Record<string, unknown>) {
  const given = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : '');
  const q = given('q').trim().slice(0, MAX_SEARCH);
  const cursor = given('cursor');
  const searched = q ? [['q', q]] : [];
  const page = await d.endUsers.list(ownerId, { q: q || undefined, limit: PAGE_SIZE, cursor: cursor || undefined });
  const view = { q, searched: q !== '', paged: cursor !== '', firstPage: `/end-users${q ? `?${new URLSearchParams(searched)}` : ''}` };
  if (!page)
    return { ...view, problem: 'This page of end users no longer exists (its link was changed): start again from the newest.', endUsers: [], olderPage: null };
  const [accounts, grants] = page.items.length
    ? await Promise.all([
        d.accounts.ofEndUsers(
          ownerId,
          page.items.map((u) => u._id),
        ),
        d.oauth.grants.list(ownerId),
      ])
    : [[], []];
  const rows = (u: EndUserDoc) => ({
    id: u._id,
    external_id: u.external_id,
    display_name: u.display_name,
    email: u.email,
    created_at: u.created_at,
    label: u.display_name ?? u.external_id,
    // The MCP apps the person approved by OAuth that still act as them.
    apps: grants.filter((g) => g.end_user_id === u._id && !g.revoked_at).map((g) => g.client_name),
    budget: u.credit_limit ? `${u.credit_limit.credits.toLocaleString('en-US')} credits a ${u.credit_limit.per} (UTC)` : null,
    accounts: accounts
      .filter((a) => a.end_user_id === u._id)
      .map((a) => {
        const provider = d.accounts.providersByKind.get(a.kind);
        const account = publicAccount(a, provider);
        return {
          id: a._id,
          name: a.name,
          provider: provider?.spec.title ?? a.kind,
          oauth: a.auth === 'oauth',
          connectedTo: a.connection?.says ?? null,
          state: account.state,
          state_reason: account.state_reason,
          checked_at: account.checked_at,
        };
      }),
  });
  return {
    ...view,
    problem: null,
    endUsers: page.items.map(rows),
    olderPage: page.next_cursor ? `/end-users?${new URLSearchParams([...searched, ['cursor', page.next_cursor]])}` : null,
  };
}
