// Tool and argument names. Tool names must be accepted by every MCP client: [A-Za-z0-9_.-], and at most
// 56 characters (Cursor refuses names over 60 once it prefixes the server's), unique in the catalog.
import { createHash } from 'node:crypto';
import type { ApiOperation } from './document.ts';

export const TOOL_NAME_LIMIT = 56;

/** snake_case in [a-z0-9_]: "issues/list-for-repo" -> "issues_list_for_repo", "getPetById" -> "get_pet_by_id". */
export function snake(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

/** Words a long name loses first: they join, the others say what the tool does. */
const FILLER = new Set(['a', 'an', 'the', 'to', 'for', 'of', 'in', 'on', 'with', 'by', 'from', 'and', 'or', 'as', 'at']);
/** Then long words are shortened the way people shorten them. */
const SHORTER: Record<string, string> = {
  repository: 'repo',
  repositories: 'repos',
  organization: 'org',
  organizations: 'orgs',
  authenticated: 'auth',
  configuration: 'config',
  configurations: 'configs',
  environment: 'env',
  environments: 'envs',
  enterprise: 'ent',
  installation: 'install',
  application: 'app',
  applications: 'apps',
  permissions: 'perms',
  information: 'info',
  administrator: 'admin',
  deployment: 'deploy',
  deployments: 'deploys',
  notification: 'notif',
  notifications: 'notifs',
  subscription: 'sub',
  subscriptions: 'subs',
  attestations: 'attests',
  dependency: 'dep',
  dependencies: 'deps',
  protection: 'prot',
  variables: 'vars',
  variable: 'var',
  settings: 'prefs',
};

/**
 * At most `limit` characters: filler and repeated words dropped (after the first two), long words shortened,
 * then words before the last one dropped; a name of a few very long words is cut and marked with a short hash.
 */
function fit(name: string, limit: number): string {
  if (name.length <= limit) return name;
  const words = name.split('_');
  // A word said before says nothing new ("github_billing_get_github_billing_usage").
  const lean = [...words.slice(0, 2), ...words.slice(2).filter((w, i) => !FILLER.has(w) && !words.slice(0, i + 2).includes(w))];
  const shortened = lean.map((w, i) => (i < 1 ? w : (SHORTER[w] ?? w)));
  // Still too long: words go from before the last one, which tells an org's tool from a repository's.
  while (shortened.join('_').length > limit && shortened.length > 4) shortened.splice(-2, 1);
  const short = shortened.join('_');
  if (short.length <= limit) return short;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 6);
  const room = limit - hash.length - 1;
  const head = short.slice(0, room + 1);
  const cut = head.lastIndexOf('_') > room / 2 ? head.slice(0, head.lastIndexOf('_')) : short.slice(0, room);
  return `${cut.replace(/_+$/, '')}_${hash}`;
}

/**
 * A name for every operation of the document (so that a tool keeps its name whatever is selected):
 * `<provider>_<operationId>` in snake case, else `<provider>_<method>_<path>`; fitted to the limit; a
 * name already taken gets `_2`, `_3` in the document's order.
 */
export function toolNames(operations: readonly ApiOperation[], provider: string): Map<ApiOperation, string> {
  const prefix = snake(provider);
  const names = new Map<ApiOperation, string>();
  const taken = new Set<string>();
  for (const op of operations) {
    const base = snake(op.operationId ?? `${op.method} ${op.path.replace(/[{}]/g, '')}`) || op.method;
    const full = base === prefix || base.startsWith(`${prefix}_`) ? base : `${prefix}_${base}`;
    let name = fit(full, TOOL_NAME_LIMIT);
    for (let n = 2; taken.has(name); n++) name = fit(`${full}_${n}`, TOOL_NAME_LIMIT);
    taken.add(name);
    names.set(op, name);
  }
  return names;
}

/** Names templates refuse to read (prototype access). */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype', 'this']);

/** An argument name a template can read as args.<name>: [A-Za-z0-9_], not starting with a digit. */
export function argumentName(name: string): string {
  const clean = name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '') || 'value';
  if (FORBIDDEN.has(clean)) return `${clean}_value`;
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}
