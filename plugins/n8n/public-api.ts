// n8n's public API, told apart from what answers when it is not there. n8n's own 404s are JSON
// {"message": ...}: "Not Found" (owner or admin key) or 'Workflow with ID "x" not found.' (member key) for an
// unknown workflow, "not found" for an unknown route under /api/v1 (docs/provider-coverage.md). With the public
// API disabled (N8N_PUBLIC_API_DISABLED) every /api/v1 path is 404 but the instance still answers /healthz
// with {"status":"ok"}; a Base URL that is not an n8n instance root answers with web pages or foreign 404s.
import { type CallPlugin, type ProviderHttp, ToolError, type UpstreamResponse, UpstreamStatusError } from '../../runtime/plugin-api.ts';

const WORKFLOW_MISSING = /^(Not Found|Workflow with ID ".*" not found\.)$/;

const isN8nError = (body: unknown): body is { message: string } =>
  body !== null && typeof body === 'object' && !Array.isArray(body) && typeof (body as { message?: unknown }).message === 'string';

export const publicApiPlugin: CallPlugin = {
  name: 'n8n.public_api',
  hook: 'call',
  description:
    "Sends the request to n8n's public API; a 404 that is not n8n's 'workflow not found', or a web page instead of JSON, is diagnosed: public API disabled, Base URL with a wrong path, or no n8n instance there.",
  async apply(request, { account, http }) {
    const res = await http.send(request, { expectOk: false });
    const json = /json/i.test(String(res.headers['content-type'] ?? ''));
    if (res.status >= 200 && res.status < 300 && json) return res;
    if (res.status === 404 && json && isN8nError(res.body) && WORKFLOW_MISSING.test(res.body.message)) throw new UpstreamStatusError(res);
    if (res.status !== 404 && !(res.status >= 200 && res.status < 300)) throw new UpstreamStatusError(res);
    throw await diagnose(res, account.base_url, http);
  },
};

/** Why the public API did not answer, from the answer itself and the instance's health check. */
async function diagnose(res: UpstreamResponse, baseUrl: string, http: ProviderHttp): Promise<ToolError> {
  const root = new URL(baseUrl);
  const fix = `set the account's Base URL to the root of the n8n instance (e.g. https://your-name.app.n8n.cloud or http://localhost:5678)`;
  if (res.status === 404 && isN8nError(res.body) && res.body.message === 'not found') {
    return new ToolError(
      'n8n_wrong_path',
      `n8n at ${root.host} has no such API route: the Base URL ${baseUrl} seems to carry a path (such as /api/v1) that the service adds itself; ${fix}`,
      { providerStatus: 404, refund: true },
    );
  }
  // The health check lives beside the API, under the same root (an instance behind a proxy path included).
  const healthUrl = new URL(`${root.pathname.replace(/\/+$/, '')}/healthz`, root.origin);
  const health = await http
    .send({ method: 'GET', path: '', url: healthUrl, query: [], headers: {} }, { expectOk: false, withAuth: false })
    .catch(() => undefined);
  if (health?.status === 200 && isN8nHealth(health.body)) {
    return new ToolError(
      'n8n_api_disabled',
      `The n8n instance at ${root.host} answers, but its public API does not (HTTP ${res.status} for /api/v1): it is disabled there (N8N_PUBLIC_API_DISABLED=true, or a plan without API access). Enable it, then create an API key under Settings > n8n API`,
      { providerStatus: res.status, refund: true },
    );
  }
  return new ToolError(
    'n8n_unreachable_api',
    `No n8n instance answers at ${baseUrl}: ${root.host} answered HTTP ${res.status}${res.status < 300 ? ' with a web page' : ''} and has no n8n health check (/healthz); ${fix}`,
    {
      providerStatus: res.status,
      refund: true,
    },
  );
}

const isN8nHealth = (body: unknown) => body !== null && typeof body === 'object' && (body as { status?: unknown }).status === 'ok';
