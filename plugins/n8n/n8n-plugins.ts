// n8n plugins: the workflow shapes of the service spec (2.4), and the webhook trigger, which calls an
// owner-given URL instead of the account's API (through the same guarded client, without credentials).
import { type CallPlugin, type HttpMethod, type ResponsePlugin, ToolError, headerValueProblem } from '../../runtime/plugin-api.ts';
import { updateAt } from '../pointer.ts';
import { publicApiPlugin } from './public-api.ts';

type Json = Record<string, unknown>;
type Shape = 'list_item' | 'detail';

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const pick = (from: Json, keys: readonly string[]): Json => Object.fromEntries(keys.filter((k) => Object.hasOwn(from, k)).map((k) => [k, from[k]]));

const LIST_FIELDS = ['id', 'name', 'active', 'createdAt', 'updatedAt'] as const;
// pinData is only present when n8n sent it (exclude_pinned_data leaves it out).
const DETAIL_FIELDS = ['connections', 'settings', 'pinData'] as const;

/** An n8n workflow reduced to the fields of the service spec (list item or detail). */
export function workflowFields(workflow: unknown, shape: Shape): unknown {
  if (!isObject(workflow)) return workflow;
  const out = pick(workflow, LIST_FIELDS);
  out.tags = Array.isArray(workflow.tags) ? workflow.tags.map((t) => (isObject(t) ? pick(t, ['id', 'name']) : t)) : [];
  if (shape === 'detail') {
    out.nodes = Array.isArray(workflow.nodes) ? workflow.nodes.map(nodeAsGiven) : [];
    Object.assign(out, pick(workflow, DETAIL_FIELDS));
  }
  return out;
}

/**
 * A node as n8n gives it (typeVersion, position, webhookId, disabled, notes, retry settings...). n8n's API
 * never returns credential data, only references by type; each reference is kept to its id and name, so
 * nothing else that a future n8n might put there can leak through.
 */
function nodeAsGiven(node: unknown): unknown {
  if (!isObject(node) || !isObject(node.credentials)) return node;
  const credentials = Object.fromEntries(Object.entries(node.credentials).map(([type, ref]) => [type, isObject(ref) ? pick(ref, ['id', 'name']) : ref]));
  return Object.assign({}, node, { credentials });
}

/** Shapes the workflow(s) of the result: the whole result, or those at `pointer` (e.g. /data/*). */
export const workflowFieldsPlugin: ResponsePlugin<{ shape: Shape; pointer?: string }> = {
  name: 'n8n.workflow_fields',
  hook: 'response',
  description: 'Reduces n8n workflows to the list-item or detail fields of the service spec.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['shape'],
    properties: { shape: { enum: ['list_item', 'detail'] }, pointer: { type: 'string', pattern: '^(/[^/]+)+$' } },
  },
  apply(result, { options }) {
    if (!options.pointer) return workflowFields(result, options.shape);
    updateAt(result, options.pointer, (w) => workflowFields(w, options.shape));
    return result;
  },
};

/** A bad webhook_url/base_url: nothing was sent, so the credit goes back. */
const badArgument = (message: string) => new ToolError('invalid_arguments', message, { refund: true });

/**
 * The absolute webhook URL: `webhookUrl` itself when it is a full http(s) URL, else that path below
 * `baseUrl` (the base_url argument, or the bound account's base URL).
 */
export function webhookTarget(webhookUrl: string, baseUrl: string | undefined): URL {
  if (/^[a-z][a-z0-9+.-]*:/i.test(webhookUrl) || webhookUrl.startsWith('//')) {
    const url = parseHttpUrl(webhookUrl);
    if (!url) throw badArgument('"webhook_url" must be an http(s) URL such as https://n8n.example.com/webhook/my-path, or a relative path');
    return url;
  }
  if (!baseUrl) {
    throw badArgument(
      '"webhook_url" is a relative path, so "base_url" is needed (the n8n instance URL, e.g. https://n8n.example.com), or a custom tool bound to an automation account',
    );
  }
  const base = parseHttpUrl(baseUrl);
  if (!base) throw badArgument('"base_url" must be an http(s) URL such as https://n8n.example.com');
  const url = parseHttpUrl(`${base.origin}${base.pathname.replace(/\/+$/, '')}/${webhookUrl.replace(/^\/+/, '')}`);
  // A path never changes the host: anything that would is refused rather than guessed.
  if (!url || url.origin !== base.origin) throw badArgument('"webhook_url" is not a valid path below the base URL');
  return url;
}

function parseHttpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** query_params values: a list repeats the parameter. */
function queryPairs(params: unknown): Array<[string, string]> {
  if (!isObject(params)) return [];
  return Object.entries(params).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, String(v)]));
}

/**
 * Caller headers with lower-case names, so they replace our defaults (Accept) instead of doubling them. A value
 * HTTP cannot carry is the caller's mistake, refused naming the argument before anything is sent.
 */
function callerHeaders(headers: unknown): Record<string, string> {
  if (!isObject(headers)) return {};
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => {
      const problem = headerValueProblem(String(value));
      if (problem) throw badArgument(`"headers.${name}" ${problem}`);
      return [name.toLowerCase(), String(value)];
    }),
  );
}

const WITH_BODY: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Calls an n8n webhook URL with the caller's method, body, query and headers; no account credentials. Any
 * answer is the tool's result ({status_code, headers, body}); only no answer (timeout, network, guard) fails.
 */
export const triggerWebhookPlugin: CallPlugin = {
  name: 'n8n.trigger_webhook',
  hook: 'call',
  description: 'Sends the request to the webhook URL (full, or a path below base_url or the account base URL); the account API key is never sent.',
  async apply(request, { args, account, http }) {
    const method = String(args.method ?? 'POST') as HttpMethod;
    const url = webhookTarget(String(args.webhook_url), (args.base_url as string | undefined) ?? account.base_url);
    try {
      return await http.send(
        {
          method,
          path: '',
          url,
          query: queryPairs(args.query_params),
          headers: callerHeaders(args.headers),
          body: WITH_BODY.has(method) ? args.body : undefined,
          timeoutMs: request.timeoutMs,
        },
        // Webhook authentication travels in the caller's headers or query; the API key is not for webhooks.
        // The webhook's answer is the result, whatever its status (a Respond to Webhook node may answer a
        // 4xx or a redirect on purpose): it is returned as it is, a redirect included, never followed.
        { withAuth: false, expectOk: false, followRedirects: false },
      );
    } catch (err) {
      if (err instanceof ToolError && err.code === 'timeout') {
        const seconds = (request.timeoutMs ?? 0) / 1000;
        // The workflow may have started: a retry could run it twice, so it is not marked retryable. Paid means
        // paid: once the webhook received the request its credits are kept, whoever chose the timeout.
        const kept = err.refund ? '' : '; it received the request and may have run the workflow, so its credits are kept';
        throw new ToolError('timeout', `The webhook responded too slowly: no answer from ${url.host} within ${seconds} s${kept}`, {
          retryable: false,
          refund: err.refund,
          providerStatus: null,
        });
      }
      throw err;
    }
  },
};

export const n8nPlugins = [workflowFieldsPlugin, triggerWebhookPlugin, publicApiPlugin];
