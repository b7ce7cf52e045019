// The Jira sites an Atlassian OAuth grant reaches: GET <resources_url> (Atlassian's
// /oauth/token/accessible-resources) with the grant's token lists every site of the grant, each with its cloud
// id, name, URL and the scopes granted there (Confluence sites of the same grant too: only those with Jira
// scopes count). Calls then go to https://api.atlassian.com/ex/jira/<cloudId>: 3LO tokens never work at the
// site itself.
import { type ConnectPlugin, ToolError } from '../../runtime/plugin-api.ts';

interface Resource {
  id: string;
  name: string;
  url: string;
}

export const accessibleSitesPlugin: ConnectPlugin<{ resources_url: string }> = {
  name: 'jira.accessible_sites',
  hook: 'connect',
  description: "Lists the Jira sites of an Atlassian OAuth grant (accessible-resources); the chosen site's cloud id makes the account's API base.",
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['resources_url'],
    properties: { resources_url: { type: 'string', pattern: '^https?://' } },
  },
  fields: ['site_url', 'site_name', 'cloud_id'],
  async discover(ctx) {
    const sites = await jiraSites(ctx.options.resources_url, ctx);
    return {
      question: 'Which Jira site should this account use?',
      choices: sites.map((s) => ({ id: s.id, title: s.name, detail: s.url })),
      none: 'The Atlassian account you signed in with gives this app no Jira site: sign in with an account that has access to a Jira Cloud site (or ask its admin for access), then connect again.',
    };
  },
  async complete(choice, ctx) {
    const site = (await jiraSites(ctx.options.resources_url, ctx)).find((s) => s.id === choice.id);
    if (!site) throw new ToolError('not_found', `The Jira site ${choice.title} is no longer in this grant`);
    return { fields: { site_url: site.url, site_name: site.name, cloud_id: site.id }, says: `the Jira site ${site.name} (${site.url})` };
  },
};

async function jiraSites(url: string, ctx: Parameters<ConnectPlugin['discover']>[0]): Promise<Resource[]> {
  const res = await ctx.http.send({ method: 'GET', path: '', url: new URL(url), query: [], headers: {} });
  if (!Array.isArray(res.body)) throw new ToolError('unexpected_response', 'Atlassian answered the list of sites with something that is not a list');
  return res.body.flatMap((r: unknown) => {
    const { id, name, url: site, scopes } = (r ?? {}) as Record<string, unknown>;
    const jira = !Array.isArray(scopes) || scopes.some((s) => typeof s === 'string' && /jira/.test(s));
    const valid = typeof id === 'string' && /^[\w-]{1,64}$/.test(id) && typeof site === 'string' && /^https?:\/\/[^/?#\s]+\/?$/.test(site);
    return jira && valid ? [{ id, name: typeof name === 'string' && name ? name : site, url: site.replace(/\/+$/, '') }] : [];
  });
}
