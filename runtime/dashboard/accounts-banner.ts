// The banner of every signed-in page while some account of the owner needs them (a connection the provider
// will not renew, credentials it refused): which ones, why, and the link that reconnects each. Calls through
// them are refused until then.
import { reconnectPath } from '../accounts/connections.ts';
import type { ApiDeps } from '../api/context.ts';

export interface AccountsBanner {
  accounts: Array<{ id: string; name: string; provider: string; reason: string; href: string }>;
}

export async function accountsBanner(d: ApiDeps, ownerId: string): Promise<AccountsBanner | null> {
  const waiting = await d.accounts.needingOwner(ownerId);
  if (!waiting.length) return null;
  return {
    accounts: waiting.map((a) => ({
      id: a._id,
      name: a.name,
      provider: d.accounts.providersByKind.get(a.kind)?.spec.title ?? a.kind,
      reason: a.state_reason ?? '',
      href: reconnectPath(a._id),
    })),
  };
}
