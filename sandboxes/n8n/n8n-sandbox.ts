// In-process n8n instance: public API v1 under /api/v1 and webhooks under /webhook and /webhook-test,
// faithful to docs/provider-coverage.md. Listens on 127.0.0.1, or on a unix socket (the service's own sandboxes).
import type http from 'node:http';
import {
  listen,
  readBody,
  recorder,
  sendFault,
  sendJson,
  takeFault,
  type Fault,
  type ListenOptions,
  type RecordedRequest,
  type RunningSandbox,
} from '../harness.ts';
import { handleApi, type ApiContext } from './api.ts';
import { NODE_TYPES, setPublished, type N8nWorkflow } from './model.ts';
import { API_KEYS, API_USERS, CREDENTIAL_DATA, PROJECTS, WEBHOOK_SECRETS, seedTags, seedWorkflows, type SeedKey } from './seed.ts';
import { handleWebhook, type WebhookCall, type WebhookContext, type WebhookMode } from './webhooks.ts';

export type { N8nWorkflow, N8nNode, N8nTag } from './model.ts';
export type { WebhookCall, WebhookMode } from './webhooks.ts';
export type { SeedKey } from './seed.ts';

export interface N8nSandboxOptions extends ListenOptions {
  /** The owner's API key (default the seed's). */
  apiKey?: string;
  /** How long the "Slow report" webhook (path `slow`) waits before answering; default 2000 ms. */
  slowWebhookMs?: number;
}

export interface N8nSandbox extends RunningSandbox {
  /** Owner key: sees every workflow. */
  apiKey: string;
  /** Member key: sees only workflows shared with the member's projects (Marketing team, own project). */
  memberApiKey: string;
  requests: RecordedRequest[];
  faults: Fault[];
  /** Calls that reached a workflow (passed path, method and auth checks), oldest first. */
  webhookCalls: WebhookCall[];
  /** Ids of the seeded workflows by role, e.g. ids.hello, ids.draft (inactive). */
  ids: Record<SeedKey, string>;
  projects: typeof PROJECTS;
  /** What the protected webhooks expect: header `X-Webhook-Token`, basic user/password. */
  secrets: typeof WEBHOOK_SECRETS;
  /** Copies of the current workflows, in list order. */
  workflows(): N8nWorkflow[];
  workflow(id: string): N8nWorkflow | undefined;
  /** `<url>/webhook/<path>` or `<url>/webhook-test/<path>`. */
  webhookUrl(path: string, mode?: WebhookMode): string;
  /** Like clicking "Execute workflow": the test URL of this workflow answers exactly one call. */
  armTestWebhook(workflowId: string): void;
  /** Publishes (activates) or unpublishes a workflow, as the API's activate/deactivate would. */
  setActive(workflowId: string, active: boolean): void;
  setSlowWebhookDelay(ms: number): void;
  /** Turns the public API off or on, as N8N_PUBLIC_API_DISABLED does (off: every /api/v1 path is 404). */
  setPublicApi(enabled: boolean): void;
}

const EDITOR_PAGE =
  '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>n8n.io - Workflow Automation</title></head><body><div id="app"></div></body></html>';

/** Express's own 404 page, for a path no route is mounted on. */
function notMounted(res: http.ServerResponse, method: string, path: string): void {
  res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!DOCTYPE html><html><body><pre>Cannot ${method} ${path}</pre></body></html>`);
}

export async function startN8nSandbox(options: N8nSandboxOptions = {}): Promise<N8nSandbox> {
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const record = recorder(requests, options);
  const ownerKey = options.apiKey ?? API_KEYS.owner;
  let publicApi = true;
  const closing = new AbortController();
  const tags = seedTags();
  // Filled once the port is known (webhook URLs and the redirect target contain it).
  const state: ApiContext & WebhookContext = {
    baseUrl: '',
    workflows: [],
    tags,
    apiUsers: options.apiKey ? { [ownerKey]: API_USERS[API_KEYS.owner], [API_KEYS.member]: API_USERS[API_KEYS.member] } : API_USERS,
    armedTests: new Set(),
    credentialData: CREDENTIAL_DATA,
    calls: [],
    signal: closing.signal,
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const body = await readBody(req);
    record({ method, path: url.pathname, query: url.searchParams, headers: req.headers, body });
    const fault = takeFault(faults, method, url.pathname);
    if (fault) return sendFault(res, fault);

    const path = url.pathname;
    const isApi = path === '/api/v1' || path.startsWith('/api/v1/');
    if (isApi && publicApi) return handleApi(state, req, res, url, body);
    // Disabled, the API's routes are not mounted: every path of it is a 404 (docs/provider-coverage.md; body unverified).
    if (isApi) return notMounted(res, method, path);
    for (const [prefix, mode] of [
      ['/webhook/', 'production'],
      ['/webhook-test/', 'test'],
    ] as const) {
      if (path.startsWith(prefix) || path === prefix.slice(0, -1)) {
        return handleWebhook(state, mode, path.slice(prefix.length), req, res, body, url.searchParams);
      }
    }
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    // Anything else is the editor UI: a page for GET, Express's 404 otherwise.
    if (method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(EDITOR_PAGE);
    }
    notMounted(res, method, path);
  }

  const server = await listen((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) sendJson(res, 500, { message: (err as Error).message });
    });
  }, options);

  state.baseUrl = server.url;
  const seeded = seedWorkflows(server.url, options.slowWebhookMs ?? 2000, tags);
  state.workflows.push(...seeded.workflows);

  const mustFind = (id: string) => {
    const workflow = state.workflows.find((w) => w.id === id);
    if (!workflow) throw new Error(`n8n sandbox: no workflow ${id}`);
    return workflow;
  };

  return {
    url: server.url,
    close: () => {
      closing.abort();
      return server.close();
    },
    apiKey: ownerKey,
    memberApiKey: API_KEYS.member,
    requests,
    faults,
    webhookCalls: state.calls,
    ids: seeded.ids,
    projects: PROJECTS,
    secrets: WEBHOOK_SECRETS,
    workflows: () => structuredClone(state.workflows),
    workflow: (id) => structuredClone(state.workflows.find((w) => w.id === id)),
    webhookUrl: (path, mode = 'production') => `${server.url}/${mode === 'production' ? 'webhook' : 'webhook-test'}/${path}`,
    armTestWebhook: (id) => void state.armedTests.add(mustFind(id).id),
    setActive: (id, active) => setPublished(mustFind(id), active, new Date().toISOString()),
    setPublicApi(enabled) {
      publicApi = enabled;
    },
    setSlowWebhookDelay(ms) {
      const workflow = mustFind(seeded.ids.slow);
      for (const nodes of [workflow.nodes, workflow.activeVersion?.nodes ?? []]) {
        for (const node of nodes) if (node.type === NODE_TYPES.wait) node.parameters.amount = ms / 1000;
      }
    },
  };
}
