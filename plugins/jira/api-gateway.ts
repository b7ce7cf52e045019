// Which URL an account's token works at. A classic API token works at the site (https://x.atlassian.net);
// scoped API tokens and service accounts' tokens work only through Atlassian's API gateway,
// https://api.atlassian.com/ex/jira/<cloudId>, and the site answers them 401. Nothing in a token tells the
// two apart (Atlassian KB "401 Unauthorized error when service account accesses Jira or Confluence API"), so
// the site is asked first, then the gateway with the cloud id the site publishes at /_edge/tenant_info.
import type { BasePlugin, ProviderHttp } from '../../runtime/plugin-api.ts';

const PROBE = '/rest/api/3/myself';
const DEFAULT_GATEWAY = 'https://api.atlassian.com';

export const apiGatewayPlugin: BasePlugin = {
  name: 'jira.api_gateway',
  hook: 'base',
  description:
    "Uses the site URL when the token works there (classic API token), else Atlassian's API gateway for the site's cloud id (scoped API tokens, service accounts).",
  async apply(site, { account, http }) {
    const atSite = await status(http, new URL(site + PROBE));
    if (ok(atSite)) return { base: site, says: `It works through the site URL ${site} (a classic API token).` };

    const tenant = await http.send(
      { method: 'GET', path: '', url: new URL(`${site}/_edge/tenant_info`), query: [], headers: {} },
      { expectOk: false, withAuth: false },
    );
    const cloudId = (tenant.body as { cloudId?: unknown } | null)?.cloudId;
    if (tenant.status !== 200 || typeof cloudId !== 'string' || !/^[\w-]{1,64}$/.test(cloudId)) {
      return {
        base: site,
        says: '',
        problem: `The site URL ${site} answered HTTP ${atSite} and publishes no cloud id at /_edge/tenant_info (HTTP ${tenant.status}), so the API gateway cannot be tried: is it a Jira Cloud site?`,
      };
    }
    const gateway = `${(account.gateway_url || DEFAULT_GATEWAY).replace(/\/+$/, '')}/ex/jira/${cloudId}`;
    const atGateway = await status(http, new URL(gateway + PROBE));
    if (ok(atGateway)) {
      return {
        base: gateway,
        says: `It works through Atlassian's API gateway ${gateway} (a scoped API token or a service account's token; the site URL answered HTTP ${atSite}).`,
      };
    }
    return {
      base: site,
      says: '',
      problem: `Neither the site URL ${site} (HTTP ${atSite}) nor the API gateway for its cloud id ${cloudId} (HTTP ${atGateway}) accepted the e-mail and API token: check both, and for a scoped token its scopes (e.g. read:jira-user)`,
    };
  },
};

const ok = (s: number) => s >= 200 && s < 300;

async function status(http: ProviderHttp, url: URL): Promise<number> {
  return (await http.send({ method: 'GET', path: '', url, query: [], headers: {} }, { expectOk: false })).status;
}
