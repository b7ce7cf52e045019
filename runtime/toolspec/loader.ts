// Loads tool-specs/: YAML -> ajv against the spec language's own JSON Schema -> semantic checks ->
// compiled catalog. Every problem of every file is collected (a key with a schema problem gets only that one;
// the rest of its file is still checked) and reported as `file:line:col json-path message`.
import { createHash } from 'node:crypto';
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { pointerParts } from '../json-pointer.ts';
import type { Plugin, PluginHook, PluginRegistry } from '../plugin-api.ts';
import { type CompiledTemplate, TemplateError, type VariableCheck, compileTemplate, isTemplate } from '../template/template.ts';
import { TreeTemplateErrors, compileTree } from '../template/tree.ts';
import type {
  BoundPlugin,
  Catalog,
  CompiledConnect,
  CompiledErrorRule,
  CompiledPagination,
  CompiledRequest,
  CompiledStep,
  DetailSource,
  Provider,
  BaseTool,
} from './catalog.ts';
import { type ToolExchanges, compileExchanges } from './exchanges.ts';
import { MAX_DESCRIPTION_LENGTH, exchangesSchema, isExchangesFile, isProviderFile, providerSchema, toolFileOf, toolSchema } from './language.ts';
import { longDescriptions, typeLists, unmappedRequired } from './lint.ts';
import { SourceFile, SpecLoadError, type SpecIssue, keysWithProblems, reportAjvErrors, tooLong } from './source-file.ts';
import type {
  AccountFieldSpec,
  ConnectSpec,
  ErrorRuleSpec,
  ExchangesSpec,
  PaginationSpec,
  PluginUseSpec,
  ProviderSpec,
  RequestSpec,
  ToolSpec,
} from './types.ts';

export { SpecLoadError, formatIssue, type SpecIssue } from './source-file.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;

// verbose: the problems quote the value they are about (a description's length, a version).
const metaAjv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true });
metaAjv.addSchema(toolSchema);
const validateToolShape = metaAjv.getSchema(toolSchema.$id)!;
const validateProviderShape = metaAjv.compile(providerSchema);
const validateExchangesShape = metaAjv.compile(exchangesSchema);

/** The ajv for tool arguments: JSON Schema 2020-12 (the MCP default), defaults filled in, every error reported. */
export function createArgumentsAjv(): Ajv2020 {
  // Union types are allowed here only so that the loader's own portability rule names them clearly.
  const ajv = new Ajv2020({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true, coerceTypes: false });
  addFormats(ajv);
  return ajv;
}

export interface LoadOptions {
  /** File names in problems are relative to this folder (default: the working directory). */
  relativeTo?: string;
  /**
   * Also check that each relative `$schema` line leads to an existing file (`npm run check:specs` does, for
   * the specs as they are written; a copy of the specs elsewhere, such as a test's, keeps lines that lead nowhere).
   */
  schemaPaths?: boolean;
  /**
   * The catalog of an earlier load of the same folder with the same plugins and options: a file whose text
   * is unchanged keeps what it compiled to (a tool also needs its provider kept), so that a reload costs what
   * changed. Unchanged results are the same objects: `!==` tells what a reload changed.
   */
  previous?: Catalog;
}

/**
 * The ajv that compiled a catalog's tool schemas; a load with `previous` compiles into the same one (a new
 * ajv's first compile costs 100 ms or more: it compiles JSON Schema 2020-12's own meta-schema).
 */
const argumentsAjvOf = new WeakMap<Catalog, Ajv2020>();

/** The files the loader reads in each provider folder. */
export const isSpecFile = (name: string): boolean => /\.ya?ml$/.test(name);

type FileKind = 'provider' | 'tool' | 'exchanges';

/** Loads and compiles every spec under `dir`; throws SpecLoadError listing every problem. */
export async function loadCatalog(dir: string, plugins: PluginRegistry, options: LoadOptions = {}): Promise<Catalog> {
  const issues: SpecIssue[] = [];
  const rel = (f: string) => path.relative(options.relativeTo ?? process.cwd(), f) || f;
  const files: Record<FileKind, SourceFile[]> = { provider: [], tool: [], exchanges: [] };
  const earlier = new Map<string, Provider | BaseTool>(
    [...(options.previous?.providers.values() ?? []), ...(options.previous?.tools.values() ?? [])].map((c) => [c.file, c]),
  );
  const folders = (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  // Read all at once (a reload of hundreds of files is otherwise the sum of their reads), then taken in order.
  const listed = await Promise.all(folders.map(async (folder) => ({ folder, names: (await readdir(path.join(dir, folder))).filter(isSpecFile).sort() })));
  const paths = listed.flatMap(({ folder, names }) => names.map((name) => ({ folder, name, file: path.join(dir, folder, name) })));
  const texts = await Promise.all(paths.map((f) => readFile(f.file, 'utf8')));
  for (const [i, { folder, name, file }] of paths.entries()) {
    const text = texts[i];
    const digest = createHash('sha256').update(text).digest('hex');
    const kept = earlier.get(rel(file));
    const src = new SourceFile(rel(file), folder, text, issues, digest, kept?.digest === digest ? kept : undefined);
    const kind: FileKind = isProviderFile(name) ? 'provider' : isExchangesFile(name) ? 'exchanges' : 'tool';
    files[kind].push(src);
    await checkSchemaLine(src, file, text, kind, options.schemaPaths === true);
  }

  const providers = new Map<string, Provider>();
  // Providers whose provider.yaml has problems, by folder and id: their tools are still checked, as far as
  // they can be without the provider (with its account fields when they are well formed).
  const broken = new Map<string, AccountFieldSpec[] | undefined>();
  /** The id each folder's provider.yaml declares (reported above when it is not the folder's name). */
  const folderIds = new Map<string, string>();
  for (const [src, spec, unshaped] of checkedFiles<ProviderSpec>(files.provider, validateProviderShape, 'provider', providers)) {
    if (typeof spec.id === 'string' && !unshaped.has('id')) {
      folderIds.set(src.folder, spec.id);
      if (spec.id !== src.folder) {
        src.report(['id'], `provider "${spec.id}" is in the folder "${src.folder}": a provider's folder is named by its id (${spec.id}/provider.yaml)`);
      }
    }
    const provider = (src.kept as Provider | undefined) ?? compileProvider(src, spec, plugins, unshaped);
    if (provider) providers.set(spec.id, provider);
    else {
      const fields = unshaped.has('account') ? undefined : spec.account.fields;
      for (const name of new Set([src.folder, folderIds.get(src.folder) ?? src.folder])) broken.set(name, fields);
    }
  }

  // argsAjv keeps what it compiled until it is told to forget: the schemas of a failed load, of a tool's
  // earlier version (before compiling the new one: a schema's $id would collide), of a removed tool.
  const argsAjv = (options.previous && argumentsAjvOf.get(options.previous)) ?? createArgumentsAjv();
  const forget = (spec: ToolSpec) => argsAjv.removeSchema(spec.input).removeSchema(spec.output);
  const compiled: ToolSpec[] = [];
  const tools = new Map<string, BaseTool>();
  /** Compiled tools by file, for their exchanges. */
  const toolsByFile = new Map<string, BaseTool>();
  for (const [src, spec, unshaped] of checkedFiles<ToolSpec>(files.tool, validateToolShape, 'tool', tools)) {
    let provider: Provider | undefined;
    let accountFields: readonly AccountFieldSpec[] | undefined;
    if (!unshaped.has('provider') && typeof spec.provider === 'string') {
      // A tool naming the id its folder's provider declares is right; the provider's folder is what is wrong.
      const misplaced = spec.provider !== src.folder && spec.provider !== folderIds.get(src.folder);
      if (misplaced) src.report(['provider'], `the tool is in the folder "${src.folder}", so its provider is "${src.folder}", not "${spec.provider}"`);
      provider = providers.get(spec.provider);
      if (!provider && !broken.has(spec.provider)) {
        // Said once: a misplaced tool's message already names the provider it should have.
        if (!misplaced) src.report(['provider'], `unknown provider "${spec.provider}" (declared: ${[...providers.keys()].join(', ') || 'none'})`);
        continue;
      }
      accountFields = provider ? provider.spec.account.fields : broken.get(spec.provider);
    }
    const kept = src.kept as BaseTool | undefined;
    let tool = kept && kept.provider === provider ? kept : undefined;
    if (!tool) {
      const earlierVersion = earlier.get(src.file) as BaseTool | undefined;
      if (earlierVersion && earlierVersion.spec !== spec) forget(earlierVersion.spec);
      compiled.push(spec);
      tool = compileTool(src, spec, provider, accountFields, plugins, argsAjv, unshaped);
    }
    if (tool && unshaped.size === 0) {
      tools.set(spec.id, tool);
      toolsByFile.set(src.file, tool);
    }
  }

  const exchanges = new Map<string, ToolExchanges>();
  for (const src of files.exchanges) {
    if (src.value === undefined) continue;
    const shaped = validateExchangesShape(src.value);
    if (!shaped) reportAjvErrors(src, validateExchangesShape.errors);
    const toolFile = path.join(path.dirname(src.file), toolFileOf(path.basename(src.file)));
    const tool = toolsByFile.get(toolFile);
    if (!tool) {
      if (!files.tool.some((t) => t.file === toolFile)) {
        src.report([], `exchanges belong beside their tool: there is no ${path.basename(toolFile)} in this folder`);
      }
      continue;
    }
    const compiled = shaped ? compileExchanges(src, src.value as unknown as ExchangesSpec, tool) : undefined;
    if (compiled) exchanges.set(tool.spec.id, compiled);
  }

  if (issues.length) {
    compiled.forEach(forget);
    throw new SpecLoadError(issues);
  }
  for (const old of options.previous?.tools.values() ?? []) if (!compiled.includes(old.spec) && tools.get(old.spec.id) !== old) forget(old.spec);
  const sorted = new Map([...tools.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const catalog = { providers, tools: sorted, exchanges };
  argumentsAjvOf.set(catalog, argsAjv);
  return catalog;
}

const SCHEMA_LINE = /^#\s*yaml-language-server:\s*\$schema=(\S+)/m;
const KIND_WORDS: Record<FileKind, string> = { provider: 'a provider spec', tool: 'a tool spec', exchanges: 'an exchanges file' };

/**
 * A `# yaml-language-server: $schema=...` line, when present, must name the schema of its kind of file and
 * (with `checkPath`), as a relative path, lead to it: a wrong one makes editors check the file against the
 * wrong language, or none.
 */
async function checkSchemaLine(src: SourceFile, file: string, text: string, kind: FileKind, checkPath: boolean): Promise<void> {
  const m = SCHEMA_LINE.exec(text);
  if (!m) return;
  const line = text.slice(0, m.index).split('\n').length;
  const column = m[0].length - m[1].length + 1;
  const expected = `${kind}.schema.json`;
  const named = m[1].split(/[/\\]/).pop();
  if (named !== expected) {
    src.reportAt(line, column, `the $schema line names "${named}", but ${KIND_WORDS[kind]} is written in ${expected}`);
    return;
  }
  if (!checkPath || /^[a-z][a-z0-9+.-]*:/i.test(m[1])) return;
  const target = path.resolve(path.dirname(file), m[1]);
  try {
    await access(target);
  } catch {
    const schema = path.relative(path.dirname(file), fileURLToPath(new URL(`./schemas/${expected}`, import.meta.url)));
    src.reportAt(line, column, `the $schema line leads to ${m[1]}, which does not exist relative to this file; the schema is at ${schema}`);
  }
}

/**
 * Every file that parsed to an object, checked against the language's schema (its problems reported), with
 * the top-level keys that had a schema problem: the semantic checks leave those out and check the rest. A
 * well-formed file whose id was declared before (in `seen`) is reported and left out.
 */
function* checkedFiles<T extends { id: string }>(
  files: SourceFile[],
  validate: ValidateFunction,
  what: string,
  seen: ReadonlyMap<string, { file: string }>,
): Generator<[SourceFile, T, ReadonlySet<string>]> {
  for (const src of files) {
    // A kept file compiled without a problem at the last load: its spec is what it compiled from.
    const kept = src.kept?.spec as unknown as T | undefined;
    if (!kept && (src.value === null || typeof src.value !== 'object' || Array.isArray(src.value))) {
      if (src.value !== undefined) src.report([], `${what} spec must be a YAML mapping (key: value lines)`);
      continue;
    }
    const unshaped = kept || validate(src.value) ? new Set<string>() : keysWithProblems(validate.errors);
    if (unshaped.size) reportAjvErrors(src, validate.errors);
    const spec = kept ?? (src.value as unknown as T);
    const earlier = typeof spec.id === 'string' ? seen.get(spec.id) : undefined;
    if (earlier) src.report(['id'], `${what} "${spec.id}" is already declared in ${earlier.file}`);
    else yield [src, spec, unshaped];
  }
}

/** A check of `account.<field>` reads: known fields (any, when they are not known), secrets only where allowed. */
function accountVariable(
  fields: ReadonlyMap<string, AccountFieldSpec> | undefined,
  secretsAllowed: string | false,
): (name: string | undefined) => string | null {
  return (name) => {
    if (!fields) return null;
    const f = name === undefined ? undefined : fields.get(name);
    if (!f) return `unknown variable "account.${name ?? ''}" (account fields: ${[...fields.keys()].join(', ')})`;
    return f.secret && !secretsAllowed ? `"account.${name}" is a secret: it can only be used in the provider's auth section` : null;
  };
}

function compileProvider(src: SourceFile, spec: ProviderSpec, plugins: PluginRegistry, unshaped: ReadonlySet<string>): Provider | undefined {
  const before = src.issues.length;
  const fieldList = unshaped.has('account') ? undefined : spec.account.fields;
  const fields = fieldList && new Map(fieldList.map((f) => [f.name, f]));
  const secretFields = new Set((fieldList ?? []).filter((f) => f.secret).map((f) => f.name));
  fieldList?.forEach((f, i) => {
    if (f.pattern) {
      try {
        new RegExp(f.pattern, 'u');
      } catch (err) {
        src.report(['account', 'fields', String(i), 'pattern'], `invalid regular expression: ${(err as Error).message}`);
      }
    }
  });
  const isField = (name: string) => !fields || fields.has(name);
  if (fields && !unshaped.has('base_url')) {
    const baseField = fields.get(spec.base_url.field);
    if (!baseField) src.report(['base_url', 'field'], `"${spec.base_url.field}" is not an account field`);
    else if (baseField.secret || baseField.format !== 'url') {
      src.report(['base_url', 'field'], `"${spec.base_url.field}" must be a non-secret account field with format: url`);
    }
  }
  const authHeaders: Provider['authHeaders'] = [];
  const authQuery: Provider['authQuery'] = [];
  const headers: Provider['headers'] = [];
  if (!unshaped.has('auth')) {
    for (const role of ['username', 'password'] as const) {
      const name = spec.auth?.basic?.[role];
      if (name !== undefined && !isField(name)) src.report(['auth', 'basic', role], `"${name}" is not an account field`);
    }
    const inAuth = fieldScope(accountVariable(fields, 'auth'));
    for (const [key, list] of [
      ['headers', authHeaders],
      ['query', authQuery],
    ] as const) {
      for (const [name, text] of Object.entries(spec.auth?.[key] ?? {})) {
        const t = compileLeaf(src, ['auth', key, name], text, inAuth);
        if (t) list.push({ name, template: t, fields: t.variables.map((v) => v[1]) });
      }
    }
  }
  if (!unshaped.has('headers')) {
    const inHeaders = fieldScope(accountVariable(fields, false), 'secrets belong under auth.headers');
    for (const [name, text] of Object.entries(spec.headers ?? {})) {
      if (/^host$/i.test(name)) src.report(['headers', name], 'the Host header cannot be set');
      const value = isTemplate(text) ? compileLeaf(src, ['headers', name], text, inHeaders) : text;
      if (value !== undefined) headers.push({ name, value, fields: typeof value === 'string' ? [] : value.variables.map((v) => v[1]) });
    }
  }
  // Provider rules serve every tool: any argument may be named, the account's non-secret fields and the answer.
  const ruleScope: VariableCheck = ([root, name]) =>
    root === 'args' || root === 'response'
      ? null
      : root === 'account'
        ? accountVariable(fields, false)(name)
        : unknownRoot(root, name, 'args, account, response');
  const errors = unshaped.has('errors') ? [] : compileErrorRules(src, spec.errors ?? [], ['errors'], ruleScope, undefined);
  const errorBody: Provider['errorBody'] = {};
  if (!unshaped.has('error_body') && spec.error_body) {
    if (spec.error_body.code !== undefined) errorBody.code = pointerParts(spec.error_body.code);
    if (spec.error_body.detail !== undefined) errorBody.detail = compileDetail(src, ['error_body', 'detail'], spec.error_body.detail, ruleScope);
  }
  const verify: Provider['verify'] = [];
  if (!unshaped.has('verify') && spec.verify !== undefined) {
    const ways = Array.isArray(spec.verify) ? spec.verify : [spec.verify];
    ways.forEach((way, i) => {
      const at = Array.isArray(spec.verify) ? ['verify', String(i)] : ['verify'];
      for (const field of [...(way.when?.set ?? []), ...(way.when?.unset ?? [])]) {
        if (!isField(field)) src.report([...at, 'when'], `"${field}" is not an account field`);
      }
      const request = compileRequest(
        src,
        { method: way.method, path: way.path, body: way.body },
        at,
        () => 'the verification request takes no variables',
        plugins,
      );
      if (request) verify.push({ way, request });
    });
  }
  const baseResolver =
    spec.base_url?.resolve && !unshaped.has('base_url')
      ? bindPlugins(src, [{ use: spec.base_url.resolve }], ['base_url', 'resolve'], 'base', plugins, true)[0]
      : undefined;
  const connect = spec.connect && !unshaped.has('connect') ? compileConnect(src, spec.connect, fields, plugins) : undefined;
  if (src.issues.length > before || unshaped.size) return undefined;
  return { spec, file: src.file, digest: src.digest, secretFields, authHeaders, authQuery, headers, errors, errorBody, verify, baseResolver, connect };
}

/**
 * provider.yaml `connect`: the discovery plugin, and the templates of connect.api over the account fields a
 * connected account has (the provider's, those kept from the token answer, those the plugin sets) and the
 * access token. Without the provider's fields (its account section has a schema problem) any field is taken.
 */
function compileConnect(
  src: SourceFile,
  spec: ConnectSpec,
  fields: ReadonlyMap<string, AccountFieldSpec> | undefined,
  plugins: PluginRegistry,
): CompiledConnect {
  const at = (...rest: string[]) => ['connect', ...rest];
  const discover = spec.discover ? bindPlugins(src, [spec.discover], at('discover'), 'connect', plugins, true)[0] : undefined;
  const connectedFields = new Set([...(fields?.keys() ?? []), ...(spec.keep ?? []), ...(discover?.plugin.fields ?? [])]);
  const check =
    (token: boolean): VariableCheck =>
    ([root, name, ...rest]) => {
      if (rest.length) return `"${[root, name, ...rest].join('.')}" goes too deep: account fields and the access token are strings`;
      if (root === 'account')
        return !fields || connectedFields.has(name) ? null : `unknown account field "${name}" (a connected account has: ${[...connectedFields].join(', ')})`;
      if (root === 'connection' && token) return name === 'access_token' ? null : `"connection.${name}" is not known: only connection.access_token`;
      return `only account.<field>${token ? ' and connection.access_token' : ''} can be used here, not "${root}"`;
    };
  let api: CompiledConnect['api'];
  if (spec.api) {
    // Expressions only in the path: the host of a connected account's calls is the provider.yaml's, never a value's.
    if (!/^https?:\/\/[^/{}]+(\/|$)/.test(spec.api.base_url) || new URL(spec.api.base_url.split('{{')[0]).origin === 'null')
      src.report(at('api', 'base_url'), 'the host must be written out: expressions may only be in the path');
    const base = compileLeaf(src, at('api', 'base_url'), spec.api.base_url, check(false));
    const headers = Object.entries(spec.api.headers).flatMap(([name, text]) => {
      const template = compileLeaf(src, at('api', 'headers', name), text, check(true));
      return template ? [{ name, template }] : [];
    });
    if (!headers.some((h) => h.template.variables.some(([root]) => root === 'connection')))
      src.report(at('api', 'headers'), 'no header sends connection.access_token: the calls would not use the connection');
    if (base) api = { base, headers };
  } else if (!discover) {
    src.report(at(), 'without connect.api, calls use base_url and auth like a pasted account: a connect.discover plugin must fill those fields');
  }
  const says = spec.says === undefined ? undefined : compileLeaf(src, at('says'), spec.says, check(false));
  const discoveryOrigins = new Set(
    Object.values(spec.discover?.with ?? {}).flatMap((v) => (typeof v === 'string' && /^https?:\/\//.test(v) && URL.canParse(v) ? [new URL(v).origin] : [])),
  );
  return { spec, discover, api, discoveryOrigins, says };
}

/** A scope of account fields only (provider headers): `check` judges the field. */
function fieldScope(check: (name: string | undefined) => string | null, secretWords?: string): VariableCheck {
  return ([root, field, ...rest]) => {
    if (root !== 'account') return `only account.<field> can be used here, not "${root}"`;
    const problem = check(field);
    if (problem) return secretWords && problem.includes('is a secret') ? `"account.${field}" is a secret: ${secretWords}` : problem;
    return rest.length ? `account fields are strings: "${[root, field, ...rest].join('.')}" goes too deep` : null;
  };
}

function unknownRoot(root: string, name: string | undefined, roots: string): string {
  const variable = [root, name].filter(Boolean).join('.');
  if (root === 'item') return `"${variable}" is only defined inside $filter and $map of a list mapped item by item ($each)`;
  return `unknown variable "${variable}" (roots: ${roots})`;
}

/**
 * Compiles a tool spec. Without a provider (its provider.yaml has problems) everything that does not depend
 * on the provider is still checked, and the account fields too when they are known; nothing is returned.
 * Keys in `unshaped` had a schema problem: their checks are left out, and what depends on them is lenient.
 */
function compileTool(
  src: SourceFile,
  spec: ToolSpec,
  provider: Provider | undefined,
  accountFields: readonly AccountFieldSpec[] | undefined,
  plugins: PluginRegistry,
  argsAjv: Ajv2020,
  unshaped: ReadonlySet<string>,
): BaseTool | undefined {
  const before = src.issues.length;
  const has = (key: keyof ToolSpec) => spec[key] !== undefined && !unshaped.has(key);
  if (!unshaped.has('request') && !unshaped.has('steps') && !spec.request === !spec.steps) {
    src.report([], 'declare either "request" (one call) or "steps" (several calls), not both and not neither');
  }
  if (has('input') && spec.input.additionalProperties !== false)
    src.report(['input'], 'input must set additionalProperties: false so unknown arguments are refused');
  const compiled: Partial<Record<'input' | 'output', BaseTool['validate']>> = {};
  for (const key of ['input', 'output'] as const) {
    if (!has(key)) continue;
    try {
      compiled[key] = argsAjv.compile(spec[key]);
    } catch (err) {
      src.report([key], `not a valid JSON Schema: ${(err as Error).message}`);
    }
    for (const at of typeLists(spec[key])) {
      src.report(
        [key, ...at],
        'a list of types is not portable to every model provider (some accept one type per schema): write anyOf with one type in each branch',
      );
    }
    for (const { at, length } of longDescriptions(spec[key], MAX_DESCRIPTION_LENGTH)) src.report([key, ...at], tooLong(length));
  }
  const declaredArgs = has('input') ? Object.keys((spec.input.properties as Record<string, unknown> | undefined) ?? {}) : undefined;
  const accountVar = accountVariable(accountFields && new Map(accountFields.map((f) => [f.name, f])), false);
  const stepNames: string[] = [];
  const check =
    (roots: { steps: readonly string[] | undefined; response: boolean }): VariableCheck =>
    ([root, name]) => {
      switch (root) {
        case 'args':
          if (name === undefined || !declaredArgs) return null;
          return declaredArgs.includes(name) ? null : `unknown variable "args.${name}" (declared arguments: ${declaredArgs.join(', ') || 'none'})`;
        case 'account':
          return accountVar(name);
        case 'steps':
          if (name === undefined || !roots.steps || roots.steps.includes(name)) return null;
          return `unknown variable "steps.${name}" (earlier steps: ${roots.steps.join(', ') || 'none'})`;
        case 'response':
          return roots.response ? null : '"response" is only available in the response mapping and error rules';
        default:
          return unknownRoot(root, name, `args, account, steps${roots.response ? ', response' : ''}`);
      }
    };

  const stepsShaped = !unshaped.has('request') && !unshaped.has('steps');
  const stepSpecs = !stepsShaped ? [] : (spec.steps ?? (spec.request ? [{ name: 'request', request: spec.request }] : []));
  const steps: CompiledStep[] = [];
  stepSpecs.forEach((s, i) => {
    const at = spec.steps ? ['steps', String(i)] : ['request'];
    if (stepNames.includes(s.name)) src.report([...at, 'name'], `step name "${s.name}" is used twice`);
    const scope = check({ steps: [...stepNames], response: false });
    const when = s.when === undefined ? undefined : compileLeaf(src, [...at, 'when'], s.when, scope);
    const request = compileRequest(src, s.request, spec.steps ? [...at, 'request'] : at, scope, plugins);
    if (request) steps.push({ name: s.name, title: (s as { title?: string }).title ?? s.name, when, request });
    stepNames.push(s.name);
  });
  const knownSteps = stepsShaped ? stepNames : undefined;

  let responseMap;
  let responsePlugins: BaseTool['responsePlugins'] = [];
  if (has('response')) {
    const mapScope = check({ steps: knownSteps, response: true });
    if (spec.response!.map !== undefined) responseMap = compileTreeAt(src, ['response', 'map'], spec.response!.map, mapScope);
    responsePlugins = bindPlugins(src, spec.response!.plugins ?? [], ['response', 'plugins'], 'response', plugins);
  }
  if (has('output') && stepsShaped && !unshaped.has('response')) checkOutputMapped(src, spec, stepSpecs.at(-1)?.request.paginate !== undefined);
  const errors = has('errors') ? compileErrorRules(src, spec.errors ?? [], ['errors'], check({ steps: knownSteps, response: true }), knownSteps) : [];

  const { input: validate, output: validateOutput } = compiled;
  if (src.issues.length > before || !provider || !validate || !validateOutput) return undefined;
  return { spec, file: src.file, digest: src.digest, provider, validate, validateOutput, steps, responseMap, responsePlugins, errors };
}

/**
 * A required output property that the result never has fails every call: the response map's (or, without one,
 * a paginated request's default result's) keys are checked against the output schema. Response plugins may
 * add anything, so a tool with some is not judged.
 */
function checkOutputMapped(src: SourceFile, spec: ToolSpec, lastPaginated: boolean): void {
  if (spec.response?.plugins?.length) return;
  const mapped = spec.response?.map !== undefined;
  const map = mapped ? spec.response!.map : lastPaginated ? { items: '', has_more: '', next_cursor: '' } : undefined;
  for (const { at, property } of unmappedRequired(spec.output, map)) {
    src.report(
      mapped ? ['response', 'map', ...at] : ['output', 'required'],
      `the output requires "${property}", which ${mapped ? 'this mapping does not produce' : 'the default result of a paginated request ({items, has_more, next_cursor}) does not have'}: every call would fail`,
    );
  }
}

function compileRequest(src: SourceFile, req: RequestSpec, at: string[], scope: VariableCheck, plugins: PluginRegistry): CompiledRequest | undefined {
  const before = src.issues.length;
  if (req.path === undefined && !req.call && !req.plugins?.length) {
    src.report(at, 'a request needs a "path" (or a call/request plugin that builds it)');
  }
  const pathParts: CompiledRequest['path'] = [];
  if (req.path !== undefined) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(req.path) || req.path.startsWith('//')) {
      src.report([...at, 'path'], 'the path cannot name a host: the host comes only from the account');
    }
    if (/[?#]/.test(req.path)) src.report([...at, 'path'], 'put query parameters under "query", not in the path');
    for (const segment of req.path.split('/').slice(1)) {
      if (!isTemplate(segment)) pathParts.push(segment);
      else {
        const t = compileLeaf(src, [...at, 'path'], segment, scope);
        if (t) pathParts.push(t);
      }
    }
  }
  const query: CompiledRequest['query'] = [];
  for (const [name, value] of Object.entries(req.query ?? {})) {
    const t = compileTreeAt(src, [...at, 'query', name], value, scope);
    if (t) query.push([name, t]);
  }
  const headers: CompiledRequest['headers'] = [];
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    if (/^host$/i.test(name)) src.report([...at, 'headers', name], 'the Host header cannot be set');
    const t = compileTreeAt(src, [...at, 'headers', name], value, scope);
    if (t) headers.push([name, t]);
  }
  const body = req.body === undefined ? undefined : compileTreeAt(src, [...at, 'body'], req.body, scope);
  const timeoutSeconds = req.timeout_seconds === undefined ? undefined : compileTreeAt(src, [...at, 'timeout_seconds'], req.timeout_seconds, scope);
  const requestPlugins = bindPlugins(src, req.plugins ?? [], [...at, 'plugins'], 'request', plugins);
  const call = req.call ? bindPlugins(src, [req.call], [...at, 'call'], 'call', plugins, true)[0] : undefined;
  const paginate = req.paginate && compilePagination(src, req, req.paginate, [...at, 'paginate'], scope);
  if (src.issues.length > before) return undefined;
  return { method: req.method, path: pathParts, query, headers, body, timeoutSeconds, plugins: requestPlugins, call, paginate };
}

/** Which keys of `paginate` each style reads (the others would be silently ignored: they are refused). */
const STYLE_KEYS: Record<PaginationSpec['style'], ReadonlyArray<keyof PaginationSpec>> = {
  cursor: ['cursor', 'has_more'],
  page: ['has_more', 'total', 'page_size'],
  offset: ['has_more', 'total', 'page_size'],
  link: [],
};

function compilePagination(src: SourceFile, req: RequestSpec, p: PaginationSpec, at: string[], scope: VariableCheck): CompiledPagination | undefined {
  const before = src.issues.length;
  if (req.call) src.report(at, 'paginate and a call plugin cannot go together: the call plugin carries out the request itself');
  for (const key of ['cursor', 'has_more', 'total', 'page_size'] as const) {
    if (p[key] !== undefined && !STYLE_KEYS[p.style].includes(key)) src.report([...at, key], `"${key}" means nothing to the ${p.style} style`, undefined, true);
  }
  if (p.style === 'cursor' && p.cursor === undefined) src.report(at, 'the cursor style needs "cursor": the JSON pointer to the next cursor in the body');
  if (p.style === 'page' && p.total !== undefined && p.page_size === undefined) src.report([...at, 'total'], 'the page style reads total only with page_size');
  const param = p.param.query !== undefined ? { in: 'query' as const, name: p.param.query } : { in: 'body' as const, name: p.param.body! };
  if (param.in === 'body' && (req.method === 'GET' || req.method === 'DELETE')) {
    src.report([...at, 'param', 'body'], `a ${req.method} request has no body: select the page in the query`);
  }
  if (p.style === 'link' && param.in !== 'query')
    src.report([...at, 'param'], 'the link style reads the page from the next link\'s query: give "param: { query: <name> }"');
  const number = (key: 'page_size' | 'max_pages') => {
    const value = p[key];
    if (value === undefined) return undefined;
    if (typeof value === 'number' && (!Number.isInteger(value) || value < 1)) src.report([...at, key], `${key} must be a whole number of at least 1`);
    if (typeof value === 'string' && !isTemplate(value)) src.report([...at, key], `${key} is a number or a template such as "{{args.${key}}}"`);
    return compileTreeAt(src, [...at, key], value, scope);
  };
  const pageSize = number('page_size');
  const maxPages = number('max_pages');
  if (src.issues.length > before) return undefined;
  const parts = (pointer: string | undefined) => (pointer === undefined ? undefined : pointerParts(pointer));
  return {
    style: p.style,
    items: pointerParts(p.items ?? ''),
    itemsPointer: p.items ?? '',
    param,
    cursor: parts(p.cursor),
    hasMore: parts(p.has_more),
    total: parts(p.total),
    pageSize,
    maxPages,
    maxBytes: p.max_bytes ?? 262_144,
  };
}

function compileErrorRules(
  src: SourceFile,
  rules: ErrorRuleSpec[],
  at: string[],
  scope: VariableCheck,
  steps: readonly string[] | undefined,
): CompiledErrorRule[] {
  return rules.map((r, i) => {
    const where = [...at, String(i)];
    if (r.step !== undefined && steps && !steps.includes(r.step)) src.report([...where, 'step'], `unknown step "${r.step}"`);
    const leaf = (key: 'message' | 'hint' | 'code', text: string) => (isTemplate(text) ? (compileLeaf(src, [...where, key], text, scope) ?? text) : text);
    return {
      status: r.status === undefined ? undefined : new Set(Array.isArray(r.status) ? r.status : [r.status]),
      providerCodes: r.provider_code === undefined ? undefined : new Set(Array.isArray(r.provider_code) ? r.provider_code : [r.provider_code]),
      contains: r.contains?.toLowerCase(),
      headers:
        r.headers &&
        Object.entries(r.headers).map(([name, value]): [string, readonly string[] | boolean] => [
          name.toLowerCase(),
          typeof value === 'boolean' ? value : Array.isArray(value) ? value : [value],
        ]),
      when: r.when === undefined ? undefined : compileLeaf(src, [...where, 'when'], r.when, scope),
      step: r.step,
      code: leaf('code', r.code),
      message: leaf('message', r.message),
      detail: r.detail === undefined ? undefined : compileDetail(src, [...where, 'detail'], r.detail, scope),
      hint: r.hint === undefined ? undefined : leaf('hint', r.hint),
      retryable: r.retryable,
      refund: r.refund,
    };
  });
}

/** A detail source: a JSON pointer (starting with /) or a template ("" or plain text: that text). */
function compileDetail(src: SourceFile, at: string[], text: string, scope: VariableCheck): DetailSource | undefined {
  if (text.startsWith('/')) return { pointer: pointerParts(text) };
  const template = compileLeaf(src, at, text, scope);
  return template && { template };
}

function bindPlugins<H extends PluginHook>(
  src: SourceFile,
  uses: PluginUseSpec[],
  at: string[],
  hook: H,
  registry: PluginRegistry,
  single = false,
): Array<BoundPlugin<Extract<Plugin, { hook: H }>>> {
  const bound: Array<BoundPlugin<Extract<Plugin, { hook: H }>>> = [];
  uses.forEach((u, i) => {
    const where = single ? at : [...at, String(i)];
    const plugin = registry.get(u.use);
    if (!plugin) {
      src.report([...where, 'use'], `unknown plugin "${u.use}" (registered: ${[...registry.keys()].sort().join(', ') || 'none'})`);
      return;
    }
    if (plugin.hook !== hook) {
      src.report([...where, 'use'], `plugin "${u.use}" is a ${plugin.hook} plugin and cannot be used as a ${hook} plugin`);
      return;
    }
    const options = u.with ?? {};
    if (plugin.optionsSchema) {
      const ok = optionsAjv.validate(plugin.optionsSchema, options);
      if (!ok) {
        reportAjvErrors(src, optionsAjv.errors, [...where, 'with']);
        return;
      }
    }
    bound.push({ plugin: plugin as Extract<Plugin, { hook: H }>, options });
  });
  return bound;
}

const optionsAjv = new Ajv({ allErrors: true, strict: false, useDefaults: true });

function compileLeaf(src: SourceFile, at: string[], text: string, scope: VariableCheck): CompiledTemplate | undefined {
  try {
    return compileTemplate(text, scope);
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    src.report(at, err.message, { line: err.line, column: err.column });
    return undefined;
  }
}

function compileTreeAt(src: SourceFile, at: string[], value: unknown, scope: VariableCheck) {
  try {
    return compileTree(value, scope);
  } catch (err) {
    if (!(err instanceof TreeTemplateErrors)) throw err;
    for (const p of err.problems) src.report([...at, ...p.pointer], p.message, { line: p.line, column: p.column });
    return undefined;
  }
}
