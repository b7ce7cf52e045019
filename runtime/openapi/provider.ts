// The document's servers and security schemes -> provider.yaml: the account fields an owner fills in, where
// the API answers, how requests authenticate, the headers every operation sends alike, and a cheap request
// that proves an account works.
import type { AccountFieldSpec, ProviderSpec, VerifyWay } from '../toolspec/types.ts';
import { type ApiDocument, type ApiOperation, RESERVED_HEADERS, type SecurityRequirement, type SecurityScheme, fixedValue } from './document.ts';
import { snake } from './names.ts';
import { shorten, titled } from './text.ts';

export interface ProviderOptions {
  id: string;
  title?: string;
  /** `--auth`: the scheme to use when the document declares none (bearer, basic, header:<Name>, query:<name>). */
  auth?: string;
}

export interface ProviderResult {
  spec: ProviderSpec;
  /** Header parameters the provider sends as constants: lower-case name -> value. */
  constantHeaders: Map<string, string>;
  notes: string[];
}

const FIELD_DESCRIPTION = 300;
/** Paths of "who am I" requests: cheap, read-only, and they fail without working credentials. */
const WHO_AM_I = /\/(me|user|self|whoami|viewer|account|myself|current[_-]?user)$/i;

export function providerSpec(doc: ApiDocument, selected: readonly ApiOperation[], options: ProviderOptions): ProviderResult {
  const notes: string[] = [];
  const fields: AccountFieldSpec[] = [baseField(doc, notes)];
  const spec: ProviderSpec = {
    id: options.id,
    title: options.title ?? doc.title,
    account: { kind: options.id.replace(/-/g, '_'), fields },
    base_url: { field: 'api_url' },
  };
  const { schemes, optional } = chosenSecurity(doc, selected, options.auth, notes);
  const fieldName = (wanted: string) => {
    let name = wanted;
    for (let n = 2; fields.some((f) => f.name === name); n++) name = `${wanted}_${n}`;
    return name;
  };
  const secret = (name: string, title: string, description: string): string => {
    const field = fieldName(name);
    fields.push({ name: field, title, description, secret: true, ...(optional ? { required: false } : {}) });
    return field;
  };
  for (const [schemeName, scheme] of schemes) {
    const said = scheme.description ? shorten(scheme.description, FIELD_DESCRIPTION) : undefined;
    if (scheme.type === 'http' && scheme.scheme?.toLowerCase() === 'bearer') {
      const f = secret('token', 'Token', said ?? `Sent as "Authorization: Bearer <token>"${scheme.bearerFormat ? ` (${scheme.bearerFormat})` : ''}`);
      ((spec.auth ??= {}).headers ??= {}).Authorization = `Bearer {{account.${f}}}`;
    } else if (scheme.type === 'http' && scheme.scheme?.toLowerCase() === 'basic') {
      const username = fieldName('username');
      fields.push({ name: username, title: 'Username', ...(said ? { description: said } : {}), ...(optional ? { required: false } : {}) });
      const password = secret('password', 'Password', 'Sent with the username as HTTP Basic authentication');
      (spec.auth ??= {}).basic = { username, password };
    } else if (scheme.type === 'apiKey' && scheme.name) {
      const f = secret(snake(scheme.name).replace(/^x_/, '') || 'api_key', titled(scheme.name), said ?? `Sent as the ${scheme.in} ${scheme.name}`);
      if (scheme.in === 'query') ((spec.auth ??= {}).query ??= {})[scheme.name] = `{{account.${f}}}`;
      else if (scheme.in === 'cookie') ((spec.auth ??= {}).headers ??= {}).Cookie = `${scheme.name}={{account.${f}}}`;
      else ((spec.auth ??= {}).headers ??= {})[scheme.name] = `{{account.${f}}}`;
    } else if (scheme.type === 'oauth2' || scheme.type === 'openIdConnect') {
      const f = secret('access_token', 'Access token', oauthDescription(scheme));
      ((spec.auth ??= {}).headers ??= {}).Authorization = `Bearer {{account.${f}}}`;
      notes.push(
        `security scheme ${schemeName} (${scheme.type}) is mapped to an access token field: owners paste a token; a provider "connect" block would let them sign in instead`,
      );
    } else {
      notes.push(
        `security scheme ${schemeName} (${scheme.type}${scheme.scheme ? ` ${scheme.scheme}` : ''}) cannot be expressed: add its authentication by hand`,
      );
    }
  }
  const constantHeaders = providerHeaders(selected);
  if (constantHeaders.size) {
    spec.headers = {};
    for (const [name, value] of constantHeaders) spec.headers[name] = value;
  }
  const verify = spec.auth ? verifyWay(doc, spec.title) : undefined;
  if (verify) spec.verify = verify;
  else if (spec.auth) notes.push('no "who am I" request (GET .../me, /user...) was found for verify: add one by hand, or accounts cannot be verified');
  return { spec, constantHeaders: new Map([...constantHeaders].map(([h, v]) => [h.toLowerCase(), v])), notes };
}

function baseField(doc: ApiDocument, notes: string[]): AccountFieldSpec {
  const server = doc.servers.find((s) => /^https?:\/\//i.test(s));
  if (!server) {
    notes.push(doc.servers.length ? `the document's server ${doc.servers[0]} is relative: owners enter the API's full URL` : 'the document names no server');
    return { name: 'api_url', title: 'API URL', description: "The API's base URL (https://...)", format: 'url' };
  }
  const others = doc.servers.filter((s) => s !== server && /^https?:\/\//i.test(s));
  const description = `Where the API answers: ${server}${others.length ? ` (the document also names ${others.join(', ')})` : ''}, or your own instance's URL`;
  return { name: 'api_url', title: 'API URL', description, format: 'url', default: server };
}

/** The schemes of the first requirement that applies, and whether it may be left out (an empty alternative). */
function chosenSecurity(
  doc: ApiDocument,
  selected: readonly ApiOperation[],
  auth: string | undefined,
  notes: string[],
): { schemes: Array<[string, SecurityScheme]>; optional: boolean } {
  if (auth) return { schemes: [['--auth', schemeOf(auth)]], optional: false };
  // The document's requirement, else the one most of the selected operations name.
  let alternatives: SecurityRequirement[] = doc.security;
  if (!alternatives.some((r) => Object.keys(r).length)) {
    const counts = new Map<string, { n: number; req: SecurityRequirement[] }>();
    for (const op of selected) {
      if (!op.security?.some((r) => Object.keys(r).length)) continue;
      const key = JSON.stringify(op.security);
      counts.set(key, { n: (counts.get(key)?.n ?? 0) + 1, req: op.security });
    }
    alternatives = [...counts.values()].sort((a, b) => b.n - a.n)[0]?.req ?? [];
  }
  const first = alternatives.find((r) => Object.keys(r).length);
  if (!first) {
    const declared = Object.keys(doc.securitySchemes);
    notes.push(
      declared.length
        ? `no operation requires a security scheme (declared: ${declared.join(', ')}): the provider sends no credentials`
        : 'the document declares no security scheme: the provider sends no credentials (use --auth, or add them by hand)',
    );
    return { schemes: [], optional: false };
  }
  const others = alternatives.filter((r) => r !== first && Object.keys(r).length);
  if (others.length)
    notes.push(`used security ${Object.keys(first).join(' + ')}; the document also accepts ${others.map((r) => Object.keys(r).join(' + ')).join(', ')}`);
  const schemes: Array<[string, SecurityScheme]> = [];
  for (const name of Object.keys(first)) {
    const scheme = doc.securitySchemes[name];
    if (scheme) schemes.push([name, scheme]);
    else notes.push(`security scheme ${name} is required but not declared`);
  }
  return { schemes, optional: alternatives.some((r) => !Object.keys(r).length) };
}

/** `--auth bearer | basic | header:<Name> | query:<name>` as a scheme. */
export function schemeOf(auth: string): SecurityScheme {
  const [kind, name] = auth.split(':', 2);
  switch (kind.toLowerCase()) {
    case 'bearer':
      return { type: 'http', scheme: 'bearer' };
    case 'basic':
      return { type: 'http', scheme: 'basic' };
    case 'header':
    case 'query':
      if (name) return { type: 'apiKey', in: kind.toLowerCase() as 'header' | 'query', name };
  }
  throw new Error(`--auth ${auth}: expected bearer, basic, header:<Name> or query:<name>`);
}

function oauthDescription(scheme: SecurityScheme): string {
  const flow = Object.entries(scheme.flows ?? {})[0];
  const where = flow?.[1].tokenUrl ?? flow?.[1].authorizationUrl ?? scheme.openIdConnectUrl;
  return `An OAuth 2 access token${where ? ` (issued by ${where})` : ''}, sent as "Authorization: Bearer <token>"`;
}

/**
 * Header parameters with a fixed value (an API version such as Notion-Version): the provider sends the value
 * most of the selected operations give on every request, rather than asking the model for it each time.
 */
function providerHeaders(selected: readonly ApiOperation[]): Map<string, string> {
  const counts = new Map<string, { name: string; values: Map<string, number> }>();
  for (const op of selected) {
    for (const p of op.parameters) {
      const value = p.in === 'header' ? fixedValue(p.schema) : undefined;
      if (value === undefined || RESERVED_HEADERS.has(p.name.toLowerCase())) continue;
      const entry = counts.get(p.name.toLowerCase()) ?? { name: p.name, values: new Map<string, number>() };
      entry.values.set(value, (entry.values.get(value) ?? 0) + 1);
      counts.set(p.name.toLowerCase(), entry);
    }
  }
  const out = new Map<string, string>();
  for (const { name, values } of counts.values()) out.set(name, [...values].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0][0]);
  return out;
}

/** A GET "who am I" request without required parameters: the shortest path wins. */
function verifyWay(doc: ApiDocument, title: string): VerifyWay | undefined {
  const candidates = doc.operations
    .filter((op) => op.method === 'get' && WHO_AM_I.test(op.path) && !op.path.includes('{'))
    .filter((op) => !op.parameters.some((p) => p.required && p.in !== 'header'))
    .sort((a, b) => a.path.length - b.path.length || a.path.localeCompare(b.path));
  const op = candidates[0];
  return op && { method: 'GET', path: op.path, says: `${title} accepted the credentials (GET ${op.path}).` };
}
