// The document's servers and security schemes -> provider.yaml: the account fields an owner fills in, where
// the API answers, how requests authenticate, the headers every operation sends alike, and a cheap request
// that proves an account works.
import { oauthEnvName } from '../toolspec/language.ts';
import type { AccountFieldSpec, ConnectSpec, ProviderSpec, VerifyWay } from '../toolspec/types.ts';
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
  /** Comments written above top-level keys of provider.yaml: what the import assumed there. */
  comments: Partial<Record<keyof ProviderSpec, string>>;
  notes: string[];
}

const FIELD_DESCRIPTION = 300;
/** What OAuth 2 says of the token endpoint when a document says nothing (RFC 6749 §2.3.1, §4.1.3). */
const RFC6749_DEFAULTS = { token_body: 'form', client_auth: 'basic' } as const;
/** A scope as provider.yaml takes it (RFC 6749 §3.3: printable ASCII without space, " or \). */
const SCOPE = /^[!#-[\]-~]+$/;
/** Paths of "who am I" requests: cheap, read-only, and they fail without working credentials. */
const WHO_AM_I = /\/(me|user|self|whoami|viewer|account|myself|current[_-]?user)$/i;

export function providerSpec(doc: ApiDocument, selected: readonly ApiOperation[], options: ProviderOptions): ProviderResult {
  const notes: string[] = [];
  const comments: ProviderResult['comments'] = {};
  let connect: ConnectSpec | undefined;
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
      // A pasted token keeps working beside a connect block.
      const f = secret('access_token', 'Access token', oauthDescription(scheme));
      ((spec.auth ??= {}).headers ??= {}).Authorization = `Bearer {{account.${f}}}`;
      connect ??= connectSpec(doc, selected, schemeName, scheme, spec.title, notes);
      if (connect) comments.connect = connectComment(options.id);
      else
        notes.push(
          `security scheme ${schemeName} (${scheme.type}) is mapped to an access token field: owners paste a token (only an OAuth 2 authorization-code flow becomes a "connect" block)`,
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
  if (connect) spec.connect = connect;
  return { spec, constantHeaders: new Map([...constantHeaders].map(([h, v]) => [h.toLowerCase(), v])), comments, notes };
}

/** What an owner's connection needs, and what the import assumed where the document is silent. */
const connectComment = (id: string) =>
  [
    ` Owners connect by OAuth 2 once the operator registers an app (OAUTH_${oauthEnvName(id)}_CLIENT_ID and _CLIENT_SECRET,`,
    ' with <PUBLIC_URL>/connect/callback as its redirect URI). The document does not say how the token endpoint takes',
    " the client's credentials: token_body form and client_auth basic are OAuth 2's defaults (RFC 6749); PKCE is",
    " sent (servers that do not check it ignore it). Connected accounts call the document's server, not api_url.",
  ].join('\n');

/**
 * An OAuth 2 authorization-code flow (Swagger 2.0's accessCode) as provider.yaml `connect`: its URLs (relative
 * ones against the server), the scopes the selected operations require, calls to the document's server with
 * the access token as a bearer. Undefined, with a note saying why, when the flow cannot be one.
 */
function connectSpec(
  doc: ApiDocument,
  selected: readonly ApiOperation[],
  schemeName: string,
  scheme: SecurityScheme,
  title: string,
  notes: string[],
): ConnectSpec | undefined {
  const flow = scheme.flows?.authorizationCode;
  if (!flow) return undefined;
  const server = doc.servers.find((s) => /^https?:\/\//i.test(s));
  const problem = (why: string) => {
    notes.push(`security scheme ${schemeName}'s authorization-code flow is not a "connect" block: ${why}`);
    return undefined;
  };
  if (!server) return problem('the document names no absolute server for connected accounts to call');
  const absolute = (url: string | undefined) => {
    if (!url || !URL.canParse(url, server + '/')) return undefined;
    const u = new URL(url, server + '/');
    return /^https?:$/.test(u.protocol) && !u.username && !u.password ? u : undefined;
  };
  const authorize = absolute(flow.authorizationUrl);
  const token = absolute(flow.tokenUrl);
  if (!authorize) return problem(`its authorizationUrl (${flow.authorizationUrl ?? 'none'}) is not an http(s) URL`);
  if (!token || token.search) return problem(`its tokenUrl (${flow.tokenUrl ?? 'none'}) is not an http(s) URL without a query`);
  if (flow.refreshUrl && absolute(flow.refreshUrl)?.href !== token.href)
    notes.push(`security scheme ${schemeName} refreshes at ${flow.refreshUrl}: the connect block refreshes at token_url (edit it by hand)`);
  const scopes = requiredScopes(doc, selected, schemeName);
  const odd = scopes.filter((s) => !SCOPE.test(s));
  if (odd.length) notes.push(`scopes left out of the connect block (not OAuth 2 scope tokens): ${odd.join(', ')}`);
  // Constant parameters of the authorization URL stay with it, as authorize_params.
  const params = Object.fromEntries(authorize.searchParams);
  authorize.search = '';
  authorize.hash = '';
  return {
    by: title,
    authorize_url: authorize.href,
    token_url: token.href,
    ...RFC6749_DEFAULTS,
    pkce: true,
    ...(scopes.length > odd.length ? { scopes: scopes.filter((s) => SCOPE.test(s)) } : {}),
    ...(Object.keys(params).length ? { authorize_params: params } : {}),
    api: { base_url: server, headers: { Authorization: 'Bearer {{connection.access_token}}' } },
  };
}

/** The scopes of `schemeName` that the selected operations require (each its first requirement naming the scheme), in order of appearance. */
function requiredScopes(doc: ApiDocument, selected: readonly ApiOperation[], schemeName: string): string[] {
  const scopes = new Set<string>();
  for (const op of selected) {
    const requirement = (op.security ?? doc.security).find((r) => schemeName in r);
    for (const scope of requirement?.[schemeName] ?? []) scopes.add(scope);
  }
  return [...scopes];
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
