// What the OAuth consent page shows: who asks (and how far that is verified), where the person is sent back,
// the server(s) it may use with their tools and credit costs, and the request itself to post back.
import type { ApiDeps, SignedIn } from '../api/context.ts';
import { isolated } from '../names.ts';
import { type AuthorizationRequest, REQUEST_FIELDS } from '../oauth/authorize.ts';
import { restrictionForm, toolChoices } from './restrictions-form.ts';

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The request's own fields, as the page posts them back. */
export function requestFields(r: AuthorizationRequest): Record<string, string> {
  const fields: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: r.client.client_id,
    redirect_uri: r.redirectUri,
    code_challenge: r.codeChallenge,
    code_challenge_method: 'S256',
    resource: r.resource,
    scope: r.scope,
    state: r.state,
  };
  return Object.fromEntries(REQUEST_FIELDS.flatMap((f) => (fields[f] === undefined ? [] : [[f, fields[f]]])));
}

/** Who asks, how far that is verified, and where the person is sent back. */
export function clientFacts(r: AuthorizationRequest) {
  const redirect = new URL(r.redirectUri);
  const verifiedHost = r.client.registration === 'metadata_document' ? new URL(r.client.client_id).host : null;
  const redirectLocal = LOOPBACK.has(redirect.hostname);
  return {
    name: r.client.client_name,
    verifiedHost,
    redirectHost: redirect.host,
    redirectLocal,
    redirectUnverified: !redirectLocal && redirect.host !== verifiedHost,
  };
}

export async function consentView(d: ApiDeps, s: SignedIn, r: AuthorizationRequest, switchUrl: string) {
  const ownerId = s.owner._id;
  const hidden = requestFields(r);
  const base = { email: s.owner.email, switchUrl, hidden, denyBody: { ...hidden, decision: 'deny' }, client: clientFacts(r) };

  const chosen = r.serverId ? await d.servers.get(ownerId, r.serverId) : null;
  // Someone else's server and a missing one read the same: nothing is said about other owners.
  if (r.serverId && !chosen)
    return {
      ...base,
      problem: `${isolated(r.client.client_name)} asks for the server at ${r.resource}, and no server of yours has that address. If another account of yours owns it, sign in with that account.`,
    };
  const servers = chosen ? [chosen] : await d.servers.list(ownerId);
  if (!servers.length)
    return { ...base, problem: 'You have no servers yet. Create a server and add tools to it in the dashboard, then connect the application again.' };
  const [balance, toolLists] = await Promise.all([d.credits.balance(ownerId), Promise.all(servers.map((sv) => d.tools.list(ownerId, sv._id)))]);
  return {
    ...base,
    fixedServer: Boolean(chosen),
    balance,
    servers: servers.map((sv, i) => ({ id: sv._id, name: sv.name, active: sv.active, tools: toolLists[i].length })),
    // What the app may do, chosen like a key's restrictions (no end date here: it can be set later on the Keys page).
    restrictions: restrictionForm(
      'consent',
      undefined,
      chosen
        ? toolChoices(toolLists[0], d.catalog.current)
        : servers.map((sv, i) => ({ serverId: sv._id, serverName: sv.name, choices: toolChoices(toolLists[i], d.catalog.current) })),
      { expiry: false },
    ),
  };
}
