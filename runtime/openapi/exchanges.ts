// One exchange per imported tool, from the document's examples: the arguments (the request body's example,
// the parameters' examples, else the plainest values their schemas take), the request the tool must send
// for them (read back from the spec's own templates, defaults filled as the engine fills them), and the
// document's example answer, which the tool's output schema must accept. `npm run check:specs -- --exchanges`
// runs them offline; they also serve the provider as a sandbox.
import type { ExchangeRequestSpec, ExchangesSpec, JsonSchema, ProviderSpec, ToolSpec } from '../toolspec/types.ts';
import { createArgumentsAjv } from '../toolspec/loader.ts';
import { type ApiOperation, isJsonMediaType } from './document.ts';

const ajv = createArgumentsAjv();

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** `{{args.name}}` or `{{join args.name 'sep'}}`: the two forms tools.ts writes. */
const ARG = /^\{\{args\.(\w+)\}\}$/;
const JOINED = /^\{\{join args\.(\w+) '(.*)'\}\}$/;

/** The exchanges of one tool, or undefined when the document gives no example answer to build them on. */
export function exchangesOf(op: ApiOperation, spec: ToolSpec, provider: ProviderSpec): ExchangesSpec | undefined {
  const answer = exampleAnswer(op);
  if (!answer) return undefined;
  const args = argumentsOf(op, spec);
  const filled = structuredClone(args);
  // The engine fills defaults before rendering: so does the expected request.
  if (!ajv.validate(spec.input, filled)) return undefined;
  const account = Object.fromEntries(provider.account.fields.filter((f) => f.secret).map((f) => [f.name, `example-${f.name}`]));
  const request = expectedRequest(spec, provider, filled, account);
  return {
    ...(Object.keys(account).length ? { account } : {}),
    exchanges: [{ name: answer.name, arguments: args, requests: [{ ...request, answer: answer.answer }] }],
  };
}

/** The first success answer with an example (or with no body at all). */
function exampleAnswer(op: ApiOperation): { name: string; answer: ExchangeRequestSpec['answer'] } | undefined {
  const success = op.responses.filter((r) => /^2\d\d$/.test(r.status)).sort((a, b) => a.status.localeCompare(b.status))[0];
  if (!success) return undefined;
  const status = Number(success.status);
  const types = Object.keys(success.content);
  if (!types.length) return { name: `answers ${status} with no body`, answer: { status } };
  const json = types.find(isJsonMediaType);
  const examples = json ? Object.entries(success.content[json].examples) : [];
  if (!examples.length) return undefined;
  const [name, body] = examples[0];
  return { name: `the document's example${name === 'example' || name === 'default' ? '' : ` ${name}`}`, answer: { status, body } };
}

/** Example values where the document has them, else the plainest value each required argument's schema takes. */
function argumentsOf(op: ApiOperation, spec: ToolSpec): Record<string, unknown> {
  const properties = (spec.input.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((spec.input.required ?? []) as string[]);
  const args: Record<string, unknown> = {};
  const request = spec.request!;
  const byTemplate = (template: unknown) => (typeof template === 'string' ? (ARG.exec(template) ?? JOINED.exec(template))?.[1] : undefined);
  for (const p of op.parameters) {
    const where = p.in === 'path' ? request.path : p.in === 'query' ? request.query?.[p.name] : p.in === 'header' ? request.headers?.[p.name] : undefined;
    const name = p.in === 'path' ? (new RegExp(`\\{\\{args\\.(\\w+)\\}\\}`).exec(pathSegmentOf(op.path, p.name, request.path!)) ?? [])[1] : byTemplate(where);
    if (name && p.example !== undefined) args[name] = p.example;
  }
  const example = Object.values(op.body?.content ?? {}).flatMap((m) => Object.values(m.examples))[0];
  if (isObject(request.body)) {
    for (const [prop, template] of Object.entries(request.body)) {
      const name = byTemplate(template);
      if (name && isObject(example) && example[prop] !== undefined) args[name] = example[prop];
    }
  } else if (byTemplate(request.body) && example !== undefined) args[byTemplate(request.body)!] = example;
  for (const name of required) if (args[name] === undefined) args[name] = plainValue(properties[name] ?? {});
  return args;
}

/** The template segment of the spec's path that stands for the parameter `{name}` of the document's path. */
function pathSegmentOf(docPath: string, name: string, specPath: string): string {
  const i = docPath.split('/').findIndex((seg) => seg.includes(`{${name}}`));
  return i < 0 ? '' : (specPath.split('/')[i] ?? '');
}

/** The plainest value a schema takes: its const, default or first enum value, else one of its type. */
function plainValue(schema: JsonSchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.anyOf)) return plainValue((schema.anyOf as JsonSchema[]).find((b) => b.type !== 'null') ?? {});
  switch (schema.type) {
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return [plainValue((schema.items as JsonSchema | undefined) ?? { type: 'string' })];
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
      return Object.fromEntries(((schema.required ?? []) as string[]).map((r) => [r, plainValue(props[r] ?? {})]));
    }
    default:
      return FORMAT_VALUES[String(schema.format)] ?? 'example';
  }
}

const FORMAT_VALUES: Record<string, string> = {
  uuid: '00000000-0000-4000-8000-000000000000',
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  email: 'someone@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
};

/** The request the tool sends for these arguments, as the provider receives it. */
function expectedRequest(
  spec: ToolSpec,
  provider: ProviderSpec,
  args: Record<string, unknown>,
  account: Record<string, string>,
): Omit<ExchangeRequestSpec, 'answer'> {
  const request = spec.request!;
  const base = provider.account.fields.find((f) => f.name === provider.base_url.field)?.default;
  const prefix = (base ? new URL(base).pathname.replace(/\/+$/, '') : '') + (provider.base_url.path ?? '');
  const path = prefix + request.path!.replace(/\{\{args\.(\w+)\}\}/g, (_m, name: string) => encodeURIComponent(String(args[name])));
  const query: Record<string, string | string[]> = {};
  for (const [param, template] of Object.entries(request.query ?? {})) {
    const joined = JOINED.exec(String(template));
    const value = args[(joined ?? ARG.exec(String(template)) ?? [])[1] ?? ''];
    if (value === undefined || value === null) continue;
    if (joined) query[param] = (value as unknown[]).map(String).join(joined[2]);
    else if (Array.isArray(value)) query[param] = value.length === 1 ? String(value[0]) : value.map((v) => text(v));
    else query[param] = text(value);
  }
  for (const [param, template] of Object.entries(provider.auth?.query ?? {})) {
    query[param] = template.replace(/\{\{account\.(\w+)\}\}/g, (_m, f: string) => account[f] ?? '');
  }
  const out: Omit<ExchangeRequestSpec, 'answer'> = { method: request.method, path };
  if (Object.keys(query).length) out.query = query;
  const body = renderBody(request.body, args);
  if (body !== undefined) out.body = body;
  return out;
}

const text = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

function renderBody(template: unknown, args: Record<string, unknown>): unknown {
  if (typeof template === 'string') return args[ARG.exec(template)?.[1] ?? ''];
  if (!isObject(template)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [prop, t] of Object.entries(template)) {
    const v = renderBody(t, args);
    if (v !== undefined) out[prop] = v;
  }
  return out;
}
