// Moving an issue to a status by name. Jira changes status only through a workflow transition, whose
// name ("Start progress") usually differs from the status it leads to ("In Progress").
import { type CallPlugin, type OutboundRequest, type ProviderHttp, ToolError } from '../../runtime/plugin-api.ts';

interface Transition {
  id: string | number;
  name?: string;
  to?: { name?: string };
}

const same = (a: unknown, b: string) => typeof a === 'string' && a.trim().toLowerCase() === b.trim().toLowerCase();

/** The transition leading to the status named `target` (case-insensitive), else one named `target`. */
export function chooseTransition(transitions: Transition[], target: string): Transition | undefined {
  return transitions.find((t) => same(t.to?.name, target)) ?? transitions.find((t) => same(t.name, target));
}

async function currentStatus(http: ProviderHttp, issuePath: string): Promise<string | undefined> {
  const res = await http.send({ method: 'GET', path: issuePath, query: [['fields', 'status']], headers: {} }, { expectOk: false });
  const name = (res.body as { fields?: { status?: { name?: unknown } } } | null)?.fields?.status?.name;
  return typeof name === 'string' ? name : undefined;
}

function cannotTransition(issueKey: string, target: string, from: string | undefined, transitions: Transition[]): ToolError {
  const prefix = `Cannot transition issue ${issueKey} to "${target}"`;
  if (from && same(from, target)) return new ToolError('cannot_transition', `${prefix}: it is already in "${from}"`);
  const fromText = from ? ` from "${from}"` : '';
  const reachable = [...new Set(transitions.map((t) => t.to?.name).filter((n): n is string => typeof n === 'string'))];
  const detail = reachable.length
    ? `the statuses reachable${fromText} are: ${reachable.join(', ')}`
    : `no transition is available${fromText} (the workflow offers none, or the account lacks the Transition Issues permission)`;
  return new ToolError('cannot_transition', `${prefix}: ${detail}`);
}

/**
 * The rendered request is POST .../issue/{key}/transitions with `status` (a status name) in its body.
 * Reads the issue's available transitions, replaces `status` with {"transition": {"id": "<id>"}} (other
 * body keys such as fields/update pass through) and posts it. Jira answers 204 with no body, so the step's
 * body becomes {transition: {id, name}, status: {name}} for the result mapping.
 */
export const transitionToStatusPlugin: CallPlugin = {
  name: 'jira.transition_to_status',
  hook: 'call',
  description: "Moves an issue to the status named in the body's `status`, through the transition leading there (transition name as fallback).",
  async apply(request: OutboundRequest, { http }) {
    const { status: target, ...rest } = (request.body ?? {}) as Record<string, unknown>;
    if (typeof target !== 'string' || !target.trim())
      throw new ToolError('invalid_arguments', 'A status name is needed to transition the issue', { refund: true });
    const listed = await http.send({ method: 'GET', path: request.path, query: [], headers: {} });
    const transitions = ((listed.body as { transitions?: Transition[] } | null)?.transitions ?? []).filter((t) => t && t.id !== undefined);
    const chosen = chooseTransition(transitions, target);
    if (!chosen) {
      const issuePath = request.path.replace(/\/transitions$/, '');
      const issueKey = decodeURIComponent(issuePath.split('/').pop() ?? '');
      throw cannotTransition(issueKey, target, await currentStatus(http, issuePath), transitions);
    }
    // eslint-disable-next-line no-restricted-syntax -- the body holds the caller's JSON: an own "__proto__" key stays data
    const transition = { ...rest, transition: { id: String(chosen.id) } };
    const done = await http.send(Object.assign({}, request, { body: transition }));
    return Object.assign({}, done, { body: { transition: { id: String(chosen.id), name: chosen.name }, status: { name: chosen.to?.name ?? target } } });
  },
};
