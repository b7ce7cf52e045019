// What the pages show of restrictions (keys, connected apps, the consent page): the tools a credential could be
// allowed, grouped by provider with read/write and destructive marked, the current choices to fill a form
// with, and a short summary for the lists.
import { type Restrictions, restrictionsView } from '../access/restrictions.ts';
import type { CustomToolDoc } from '../servers/custom-tools.ts';
import type { Catalog } from '../toolspec/catalog.ts';

export interface ToolChoice {
  name: string;
  provider: string;
  credits: number;
  readOnly: boolean;
  destructive: boolean;
}

/** The tools (by exposed name, once each) with what their specs say; tools whose spec is gone are left out. */
export function toolChoices(tools: CustomToolDoc[], catalog: Catalog): ToolChoice[] {
  const byName = new Map<string, ToolChoice>();
  for (const t of tools) {
    const base = catalog.tools.get(t.base_tool);
    if (!base || byName.has(t.name)) continue;
    byName.set(t.name, {
      name: t.name,
      provider: base.provider.spec.title,
      credits: base.spec.credits,
      readOnly: base.spec.annotations.readOnlyHint === true,
      destructive: base.spec.annotations.destructiveHint === true,
    });
  }
  return [...byName.values()].sort((a, b) => a.provider.localeCompare(b.provider) || a.name.localeCompare(b.name));
}

/** The choices grouped by provider, each marked checked when the allow-list names it. */
export function toolGroups(choices: ToolChoice[], checked: string[] = []) {
  const groups = new Map<string, Array<ToolChoice & { checked: boolean }>>();
  for (const c of choices) {
    const list = groups.get(c.provider) ?? [];
    list.push({ ...c, checked: checked.includes(c.name) });
    groups.set(c.provider, list);
  }
  return [...groups.entries()].map(([provider, tools]) => ({ provider, tools }));
}

/** Tools to choose from: one set, or one per server when the form's server is chosen in it (data-server-select). */
export type ToolSets = ToolChoice[] | Array<{ serverId: string; serverName: string; choices: ToolChoice[] }>;

/** The restriction controls of a form (see views/partials/restrictions.hbs), filled with the current values. */
export function restrictionForm(idPrefix: string, r: Restrictions | undefined, sets: ToolSets, o: { expiry?: boolean } = {}) {
  const mode = r?.tools ? 'subset' : r?.access === 'read' ? 'read' : 'all';
  const perServer = sets.length > 0 && 'serverId' in sets[0];
  const list = (perServer ? sets : [{ choices: sets as ToolChoice[] }]) as Array<{ serverId?: string; serverName?: string; choices: ToolChoice[] }>;
  return {
    idPrefix,
    modeAll: mode === 'all',
    modeRead: mode === 'read',
    modeSubset: mode === 'subset',
    toolSets: list.map((s) => ({ serverId: s.serverId, serverName: s.serverName, groups: toolGroups(s.choices, r?.tools) })),
    noTools: list.every((s) => s.choices.length === 0),
    expiry: o.expiry !== false,
    // Expiry is chosen as a day and ends with it (UTC, like budgets).
    expires: r?.expires_at ? r.expires_at.toISOString().slice(0, 10) : '',
    // Sent back unchanged when the day is not changed (an expiry set through the API keeps its exact time).
    expiresExact: r?.expires_at ? r.expires_at.toISOString() : '',
    credits: r?.credit_limit?.credits ?? '',
    perMonth: r?.credit_limit?.per === 'month',
  };
}

/** Badges for a list row: what the credential may do, at a glance. */
export function restrictionBadges(r: Restrictions | undefined, spent: number | null, now = Date.now()) {
  const v = restrictionsView(r, now);
  const badges: Array<{ text: string; tone: string; title?: string }> = [];
  if (v.tools) badges.push({ text: `${v.tools.length} tool${v.tools.length === 1 ? '' : 's'}`, tone: 'accent', title: v.tools.join(', ') });
  if (v.access === 'read') badges.push({ text: 'read-only', tone: 'accent', title: 'Only tools that change nothing' });
  if (v.credit_limit) {
    badges.push({
      text: `${spent ?? 0} / ${v.credit_limit.credits} credits per ${v.credit_limit.per}`,
      tone: spent !== null && spent >= v.credit_limit.credits ? 'warn' : '',
      title: `Budget: ${v.credit_limit.credits} credits per UTC ${v.credit_limit.per}`,
    });
  }
  if (v.expires_at) {
    const days = v.expires_in_days!;
    const expired = v.expires_at.getTime() <= now;
    badges.push({
      text: expired ? 'expired' : `expires in ${days} day${days === 1 ? '' : 's'}`,
      tone: expired ? 'danger' : days <= 7 ? 'warn' : '',
      title: `Expires ${v.expires_at.toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    });
  }
  return { badges, unrestricted: badges.length === 0 };
}

/** Whether a credential expires within `days` (and has not yet). */
export function expiresWithin(r: Restrictions | undefined, days: number, now = Date.now()): boolean {
  const at = r?.expires_at?.getTime();
  return at !== undefined && at > now && at - now <= days * 86_400_000;
}
