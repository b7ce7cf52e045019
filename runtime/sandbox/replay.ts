// The sandbox of a provider written in YAML alone: its exchanges (runtime/toolspec/exchanges.ts) answer it. A
// provider that has exchanges and no simulator of its own (sandboxes/in-service.ts) gets one, so "Try it with
// sandbox accounts" includes it: each request is answered with the canned answer of the first exchange request
// it is (method, path, query and body; credentials aside), and anything else with a 501 that says so.
import type { ServerResponse } from 'node:http';
import { listen, readBody } from '../../sandboxes/harness.ts';
import { SANDBOX_DOMAIN, type SandboxDefinition } from '../../sandboxes/in-service.ts';
import type { Catalog, Provider } from '../toolspec/catalog.ts';
import { type ToolExchanges, cannedAnswer, replay } from '../toolspec/exchanges.ts';
import type { CatalogSource } from '../toolspec/live.ts';

/** The sandboxes served from exchanges, for the providers of the catalog that have exchanges and no sandbox. */
export function replaySandboxes(catalog: CatalogSource, served: ReadonlySet<string>): SandboxDefinition[] {
  const byProvider = new Map<Provider, ToolExchanges[]>();
  for (const file of catalog.current.exchanges.values()) {
    const provider = catalog.current.tools.get(file.toolId)?.provider;
    if (provider && !served.has(provider.spec.account.kind)) byProvider.set(provider, [...(byProvider.get(provider) ?? []), file]);
  }
  return [...byProvider].map(([provider, files]) => definition(catalog, provider, files));
}

function definition(catalog: CatalogSource, provider: Provider, files: ToolExchanges[]): SandboxDefinition {
  const { id, title, base_url } = provider.spec;
  // Under a name of their own, so that no provider id can take a simulator's host (jira.sandbox.invalid).
  const host = `${id.replace(/_/g, '-')}.exchanges.${SANDBOX_DOMAIN}`;
  // The exchanges name the provider by one URL (https://api.github.com); the sandbox answers at its path.
  const named = new URL(files[0].account[base_url.field]);
  const origin = `https://${host}`;
  const example = exampleCall(catalog.current, files);
  return {
    kind: provider.spec.account.kind,
    name: `Sandbox ${title}`,
    hosts: [host],
    // The exchanges' own field values (the first file's, then the others'), checked by the loader.
    account: () => ({ ...Object.assign({}, ...files.map((f) => f.account).reverse()), [base_url.field]: origin + named.pathname.replace(/\/+$/, '') }),
    start: async ({ sockets }) => {
      const running = await listen(
        async (req, res) => {
          const [path, query = ''] = (req.url ?? '/').split(/\?(.*)/s);
          const got = { method: req.method ?? 'GET', path, query: new URLSearchParams(query), headers: req.headers, body: await readBody(req) };
          // The exchanges as they are now: a reload of the specs is answered at once.
          const current = [...catalog.current.exchanges.values()].filter((f) => catalog.current.tools.get(f.toolId)?.provider.spec.id === id);
          const answer = replay(current, got);
          if (answer) return send(res, cannedAnswer(answer, named.origin, origin));
          send(res, {
            status: 501,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              message: `The ${title} sandbox has no answer for ${got.method} ${got.path}${query ? `?${query}` : ''}: it answers only the requests written in the provider's exchanges (${current.map((f) => f.file).join(', ')})`,
            }),
          });
        },
        { socket: sockets[host], record: false },
      );
      return { close: running.close };
    },
    example,
  };
}

function send(res: ServerResponse, answer: { status: number; headers: Record<string, string>; body: string }): void {
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)) }).end(answer.body);
}

/** A call to try first: the first exchange of a read-only tool that succeeds, else the first exchange at all. */
function exampleCall(catalog: Catalog, files: ToolExchanges[]): SandboxDefinition['example'] {
  const calls = files.flatMap((f) => f.exchanges.map((x) => ({ file: f, exchange: x })));
  const readOnly = (f: ToolExchanges) => catalog.tools.get(f.toolId)?.spec.annotations.readOnlyHint === true;
  const chosen = calls.find((c) => readOnly(c.file) && !c.exchange.error) ?? calls[0];
  return { tool: chosen.file.toolId, arguments: chosen.exchange.arguments };
}
