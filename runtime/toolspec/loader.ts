// Loads tool-specs/: YAML -> ajv against the spec language's own JSON Schema -> semantic checks ->
// compiled catalog. Every problem is collected and reported as `file:line:col json-path message`.
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document, type Node as YamlNode } from 'yaml';
import { pointerParts } from '../json-pointer.ts';
import type { Plugin, PluginHook, PluginRegistry } from '../plugin-api.ts';
import { type CompiledTemplate, TemplateError, type VariableCheck, compileTemplate, isTemplate } from '../template/template.ts';
import { TreeTemplateError, compileTree } from '../template/tree.ts';
import type { AuthTemplate, BoundPlugin, Catalog, CompiledErrorRule, CompiledRequest, CompiledStep, Provider, BaseTool } from './catalog.ts';
import { isExchangesFile, isProviderFile, providerSchema, toolSchema } from './language.ts';
import type { AccountFieldSpec, ErrorRuleSpec, PluginUseSpec, ProviderSpec, RequestSpec, ToolSpec } from './types.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void;

export interface SpecIssue {
  file: string;
  line: number;
  column: number;
  /** JSON pointer inside the file ('' for the whole document). */
  pointer: string;
  message: string;
}

export function formatIssue(i: SpecIssue): string {
  return `${i.file}:${i.line}:${i.column} ${i.pointer || '/'} ${i.message}`;
}

export class SpecLoadError extends Error {
  constructor(readonly issues: SpecIssue[]) {
    super(`${issues.length} problem(s) in the tool specs:\n${issues.map(formatIssue).join('\n')}`);
  }
}

const metaAjv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
metaAjv.addSchema(toolSchema);
const validateToolShape = metaAjv.getSchema(toolSchema.$id)!;
const validateProviderShape = metaAjv.compile(providerSchema);

/** The ajv for tool arguments: JSON Schema 2020-12 (the MCP default), defaults filled in, every error reported. */
export function createArgumentsAjv(): Ajv2020 {
  // Union types are allowed here only so that the loader's own portability rule names them clearly.
  const ajv = new Ajv2020({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true, coerceTypes: false });
  addFormats(ajv);
  return ajv;
}

/** One YAML file: its parsed value plus a way to turn a JSON pointer into a line and column. */
class SourceFile {
  readonly value: unknown;
  private readonly doc: Document;
  private readonly lines = new LineCounter();

  constructor(
    readonly file: string,
    /** The folder under the specs directory: the provider's id. */
    readonly folder: string,
    text: string,
    readonly issues: SpecIssue[],
  ) {
    this.doc = parseDocument(text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: true });
    for (const e of this.doc.errors) {
      const pos = this.lines.linePos(e.pos[0]);
      issues.push({ file, line: pos.line, column: pos.col, pointer: '', message: `YAML: ${e.message.split('\n')[0]}` });
    }
    this.value = this.doc.errors.length ? undefined : this.doc.toJS();
  }

  /** Position of the deepest YAML node on the pointer's path (the key itself when `key` is set). */
  position(pointer: string[], key = false): { line: number; column: number } {
    let node: unknown = this.doc.contents;
    let offset = (node as YamlNode | null)?.range?.[0] ?? 0;
    for (const seg of pointer) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === seg);
        if (!pair) break;
        offset = (key ? (pair.key as YamlNode).range?.[0] : (pair.value as YamlNode | null)?.range?.[0]) ?? offset;
        node = pair.value;
      } else if (isSeq(node)) {
        const item = node.items[Number(seg)] as YamlNode | undefined;
        if (!item) break;
        offset = item.range?.[0] ?? offset;
        node = item;
      } else break;
    }
    // A quoted scalar starts one character before its text.
    const quoted = isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE');
    const pos = this.lines.linePos(offset);
    return { line: pos.line, column: pos.col + (quoted && !key ? 1 : 0) };
  }

  /** A problem at a place that is no node of the document (a comment). */
  reportAt(line: number, column: number, message: string): void {
    this.issues.push({ file: this.file, line, column, pointer: '', message });
  }

  report(pointer: string[], message: string, inner?: { line: number; column: number }, key = false): void {
    const pos = this.position(pointer, key);
    // Template errors carry a position inside the template text: add it to the leaf's position.
    const line = inner ? pos.line + inner.line - 1 : pos.line;
    const column = inner ? (inner.line > 1 ? inner.column : pos.column + inner.column - 1) : pos.column;
    this.issues.push({ file: this.file, line, column, pointer: toPointer(pointer), message });
  }
}

function toPointer(parts: string[]): string {
  return parts.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

function reportAjvErrors(src: SourceFile, errors: ErrorObject[] | null | undefined, base: string[] = []): void {
  for (const e of errors ?? []) {
    const at = [...base, ...pointerParts(e.instancePath)];
    if (e.keyword === 'additionalProperties') {
      const prop = (e.params as { additionalProperty: string }).additionalProperty;
      src.report([...at, prop], `unknown property "${prop}"`, undefined, true);
    } else if (e.keyword === 'required') {
      src.report(at, `missing required property "${(e.params as { missingProperty: string }).missingProperty}"`);
    } else if (e.keyword === 'enum') {
      src.report(at, `${e.message}: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`);
    } else if (e.keyword !== 'oneOf' && e.keyword !== 'if') {
      src.report(at, e.message ?? 'is invalid');
    }
  }
}

export interface LoadOptions {
  /** File names in problems are relative to this folder (default: the working directory). */
  relativeTo?: string;
  /**
   * Also check that each relative `$schema` line leads to an existing file (`npm run check:specs` does, for
   * the specs as they are written; a copy of the specs elsewhere, such as a test's, keeps lines that lead nowhere).
   */
  schemaPaths?: boolean;
}

/** Loads and compiles every spec under `dir`; throws SpecLoadError listing every problem. */
export async function loadCatalog(dir: string, plugins: PluginRegistry, options: LoadOptions = {}): Promise<Catalog> {
  const issues: SpecIssue[] = [];
  const rel = (f: string) => path.relative(options.relativeTo ?? process.cwd(), f) || f;
  const providerFiles: SourceFile[] = [];
  const toolFiles: SourceFile[] = [];
  const folders = (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  for (const folder of folders) {
    const names = (await readdir(path.join(dir, folder))).filter((n) => /\.ya?ml$/.test(n) && !isExchangesFile(n)).sort();
    for (const name of names) {
      const file = path.join(dir, folder, name);
      const text = await readFile(file, 'utf8');
      const src = new SourceFile(rel(file), folder, text, issues);
      const kind = isProviderFile(name) ? 'provider' : 'tool';
      (kind === 'provider' ? providerFiles : toolFiles).push(src);
      await checkSchemaLine(src, file, text, kind, options.schemaPaths === true);
    }
  }

  const providers = new Map<string, Provider>();
  // Providers whose provider.yaml has problems, by folder and id: their tools are still checked, as far as
  // they can be without the provider (with its account fields when its spec has the right shape).
  const broken = new Map<string, AccountFieldSpec[] | undefined>();
  const shapedProviders = new Set<SourceFile>();
  /** The id each folder's provider.yaml declares (reported above when it is not the folder's name). */
  const folderIds = new Map<string, string>();
  for (const [src, spec] of validFiles<ProviderSpec>(providerFiles, validateProviderShape, 'provider', providers)) {
    shapedProviders.add(src);
    folderIds.set(src.folder, spec.id);
    if (spec.id !== src.folder) {
      src.report(['id'], `provider "${spec.id}" is in the folder "${src.folder}": a provider's folder is named by its id (${spec.id}/provider.yaml)`);
    }
    const provider = compileProvider(src, spec, plugins);
    if (provider) providers.set(spec.id, provider);
    else for (const name of new Set([src.folder, spec.id])) broken.set(name, spec.account.fields);
  }
  for (const src of providerFiles) if (!shapedProviders.has(src) && !providers.has(src.folder)) broken.set(src.folder, undefined);

  const argsAjv = createArgumentsAjv();
  const tools = new Map<string, BaseTool>();
  for (const [src, spec] of validFiles<ToolSpec>(toolFiles, validateToolShape, 'tool', tools)) {
    // A tool naming the id its folder's provider declares is right; the provider's folder is what is wrong.
    const misplaced = spec.provider !== src.folder && spec.provider !== folderIds.get(src.folder);
    if (misplaced) src.report(['provider'], `the tool is in the folder "${src.folder}", so its provider is "${src.folder}", not "${spec.provider}"`);
    const provider = providers.get(spec.provider);
    if (!provider && !broken.has(spec.provider)) {
      // Said once: a misplaced tool's message already names the provider it should have.
      if (!misplaced) src.report(['provider'], `unknown provider "${spec.provider}" (declared: ${[...providers.keys()].join(', ') || 'none'})`);
      continue;
    }
    const tool = compileTool(src, spec, provider, provider ? provider.spec.account.fields : broken.get(spec.provider), plugins, argsAjv);
    if (tool) tools.set(spec.id, tool);
  }

  if (issues.length) throw new SpecLoadError(issues);
  const sorted = new Map([...tools.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { providers, tools: sorted };
}

const SCHEMA_LINE = /^#\s*yaml-language-server:\s*\$schema=(\S+)/m;

/**
 * A `# yaml-language-server: $schema=...` line, when present, must name the schema of its kind of spec and
 * (with `checkPath`), as a relative path, lead to it: a wrong one makes editors check the file against the
 * wrong language, or none.
 */
async function checkSchemaLine(src: SourceFile, file: string, text: string, kind: 'provider' | 'tool', checkPath: boolean): Promise<void> {
  const m = SCHEMA_LINE.exec(text);
  if (!m) return;
  const line = text.slice(0, m.index).split('\n').length;
  const column = m[0].length - m[1].length + 1;
  const expected = `${kind}.schema.json`;
  const named = m[1].split(/[/\\]/).pop();
  if (named !== expected) {
    src.reportAt(line, column, `the $schema line names "${named}", but a ${kind} spec is written in ${expected}`);
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

/** The files that parsed, match the language's schema and declare an id not seen before (in `seen`). */
function* validFiles<T extends { id: string }>(
  files: SourceFile[],
  validate: ValidateFunction,
  what: string,
  seen: ReadonlyMap<string, { file: string }>,
): Generator<[SourceFile, T]> {
  for (const src of files) {
    if (src.value === undefined) continue;
    if (!validate(src.value)) {
      reportAjvErrors(src, validate.errors);
      continue;
    }
    const spec = src.value as unknown as T;
    const earlier = seen.get(spec.id);
    if (earlier) src.report(['id'], `${what} "${spec.id}" is already declared in ${earlier.file}`);
    else yield [src, spec];
  }
}

/** JSON pointers (as parts) of every `type: [..]` inside a schema. */
function typeLists(schema: unknown, at: string[] = []): string[][] {
  if (schema === null || typeof schema !== 'object') return [];
  const found: string[][] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'type' && Array.isArray(value)) found.push([...at, key]);
    else if (key !== 'enum' && key !== 'const' && key !== 'default' && key !== 'examples') found.push(...typeLists(value, [...at, key]));
  }
  return found;
}

function compileProvider(src: SourceFile, spec: ProviderSpec, plugins: PluginRegistry): Provider | undefined {
  const before = src.issues.length;
  const fields = new Map(spec.account.fields.map((f) => [f.name, f]));
  const secretFields = new Set(spec.account.fields.filter((f) => f.secret).map((f) => f.name));
  spec.account.fields.forEach((f, i) => {
    if (f.pattern) {
      try {
        new RegExp(f.pattern, 'u');
      } catch (err) {
        src.report(['account', 'fields', String(i), 'pattern'], `invalid regular expression: ${(err as Error).message}`);
      }
    }
  });
  const baseField = fields.get(spec.base_url.field);
  if (!baseField) src.report(['base_url', 'field'], `"${spec.base_url.field}" is not an account field`);
  else if (baseField.secret || baseField.format !== 'url') {
    src.report(['base_url', 'field'], `"${spec.base_url.field}" must be a non-secret account field with format: url`);
  }
  for (const role of ['username', 'password'] as const) {
    const name = spec.auth?.basic?.[role];
    if (name !== undefined && !fields.has(name)) src.report(['auth', 'basic', role], `"${name}" is not an account field`);
  }
  const accountCheck: VariableCheck = ([root, field, ...rest]) =>
    root !== 'account'
      ? `only account.<field> can be used here, not "${root}"`
      : !fields.has(field)
        ? `unknown account field "${field}" (declared: ${[...fields.keys()].join(', ')})`
        : rest.length
          ? `account fields are strings: "${[root, field, ...rest].join('.')}" goes too deep`
          : null;
  const authTemplates = (key: 'headers' | 'query'): AuthTemplate[] =>
    Object.entries(spec.auth?.[key] ?? {}).flatMap(([name, text]) => {
      const t = compileLeaf(src, ['auth', key, name], text, accountCheck);
      return t ? [{ name, template: t, fields: t.variables.map((v) => v[1]) }] : [];
    });
  const authHeaders = authTemplates('headers');
  const authQuery = authTemplates('query');
  for (const name of Object.keys(spec.headers ?? {})) {
    if (isTemplate(spec.headers![name])) src.report(['headers', name], 'default headers are constants; put account values under auth.headers');
  }
  const errors = compileErrorRules(src, spec.errors ?? [], ['errors'], () => null, new Set());
  const ways = spec.verify === undefined ? [] : Array.isArray(spec.verify) ? spec.verify : [spec.verify];
  const verify: Provider['verify'] = [];
  ways.forEach((way, i) => {
    const at = Array.isArray(spec.verify) ? ['verify', String(i)] : ['verify'];
    for (const field of [...(way.when?.set ?? []), ...(way.when?.unset ?? [])]) {
      if (!fields.has(field)) src.report([...at, 'when'], `"${field}" is not an account field`);
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
  const baseResolver = spec.base_url.resolve
    ? bindPlugins(src, [{ use: spec.base_url.resolve }], ['base_url', 'resolve'], 'base', plugins, true)[0]
    : undefined;
  if (src.issues.length > before) return undefined;
  return { spec, file: src.file, secretFields, authHeaders, authQuery, errors, verify, baseResolver };
}

/**
 * Compiles a tool spec. Without a provider (its provider.yaml has problems) everything that does not depend
 * on the provider is still checked, and the account fields too when they are known; nothing is returned.
 */
function compileTool(
  src: SourceFile,
  spec: ToolSpec,
  provider: Provider | undefined,
  accountFields: readonly AccountFieldSpec[] | undefined,
  plugins: PluginRegistry,
  argsAjv: Ajv2020,
): BaseTool | undefined {
  const before = src.issues.length;
  if (!spec.request === !spec.steps) src.report([], 'declare either "request" (one call) or "steps" (several calls), not both and not neither');
  if (spec.input.additionalProperties !== false) src.report(['input'], 'input must set additionalProperties: false so unknown arguments are refused');
  const compiled: Partial<Record<'input' | 'output', BaseTool['validate']>> = {};
  for (const key of ['input', 'output'] as const) {
    try {
      compiled[key] = argsAjv.compile(spec[key]);
    } catch (err) {
      src.report([key], `not a valid JSON Schema: ${(err as Error).message}`);
    }
  }
  for (const key of ['input', 'output'] as const) {
    for (const at of typeLists(spec[key])) {
      src.report(
        [key, ...at],
        'a list of types is not portable to every model provider (some accept one type per schema): write anyOf with one type in each branch',
      );
    }
  }
  const declaredArgs = Object.keys((spec.input.properties as Record<string, unknown> | undefined) ?? {});
  const stepNames: string[] = [];
  const check =
    (roots: { steps: readonly string[]; response: boolean }): VariableCheck =>
    ([root, name]) => {
      switch (root) {
        case 'args':
          if (name === undefined) return null;
          return declaredArgs.includes(name) ? null : `unknown variable "args.${name}" (declared arguments: ${declaredArgs.join(', ') || 'none'})`;
        case 'account': {
          if (!accountFields) return null;
          const f = accountFields.find((x) => x.name === name);
          if (!f) return `unknown variable "account.${name}" (account fields: ${accountFields.map((x) => x.name).join(', ')})`;
          return f.secret ? `"account.${name}" is a secret: it can only be used in the provider's auth section` : null;
        }
        case 'steps':
          if (name === undefined || roots.steps.includes(name)) return null;
          return `unknown variable "steps.${name}" (earlier steps: ${roots.steps.join(', ') || 'none'})`;
        case 'response':
          return roots.response ? null : '"response" is only available in the response mapping';
        default:
          return `unknown variable "${[root, name].filter(Boolean).join('.')}" (roots: args, account, steps${roots.response ? ', response' : ''})`;
      }
    };

  const stepSpecs = spec.steps ?? (spec.request ? [{ name: 'request', request: spec.request }] : []);
  const base = spec.steps ? ['steps'] : [];
  const steps: CompiledStep[] = [];
  stepSpecs.forEach((s, i) => {
    const at = spec.steps ? [...base, String(i)] : ['request'];
    if (stepNames.includes(s.name)) src.report([...at, 'name'], `step name "${s.name}" is used twice`);
    const scope = check({ steps: [...stepNames], response: false });
    const when = s.when === undefined ? undefined : compileLeaf(src, [...at, 'when'], s.when, scope);
    const request = compileRequest(src, s.request, spec.steps ? [...at, 'request'] : at, scope, plugins);
    if (request) steps.push({ name: s.name, title: (s as { title?: string }).title ?? s.name, when, request });
    stepNames.push(s.name);
  });

  const mapScope = check({ steps: stepNames, response: true });
  let responseMap;
  if (spec.response?.map !== undefined) responseMap = compileTreeAt(src, ['response', 'map'], spec.response.map, mapScope);
  const responsePlugins = bindPlugins(src, spec.response?.plugins ?? [], ['response', 'plugins'], 'response', plugins);
  const errors = compileErrorRules(src, spec.errors ?? [], ['errors'], check({ steps: [], response: false }), new Set(stepNames));

  const { input: validate, output: validateOutput } = compiled;
  if (src.issues.length > before || !provider || !validate || !validateOutput) return undefined;
  return { spec, file: src.file, provider, validate, validateOutput, steps, responseMap, responsePlugins, errors };
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
  if (src.issues.length > before) return undefined;
  return { method: req.method, path: pathParts, query, headers, body, timeoutSeconds, plugins: requestPlugins, call };
}

function compileErrorRules(src: SourceFile, rules: ErrorRuleSpec[], at: string[], scope: VariableCheck, steps: ReadonlySet<string>): CompiledErrorRule[] {
  return rules.map((r, i) => {
    if (r.step !== undefined && !steps.has(r.step)) src.report([...at, String(i), 'step'], `unknown step "${r.step}"`);
    const message = isTemplate(r.message) ? compileLeaf(src, [...at, String(i), 'message'], r.message, scope) : r.message;
    return {
      status: r.status === undefined ? undefined : new Set(Array.isArray(r.status) ? r.status : [r.status]),
      providerCodes: r.provider_code === undefined ? undefined : new Set(Array.isArray(r.provider_code) ? r.provider_code : [r.provider_code]),
      contains: r.contains?.toLowerCase(),
      step: r.step,
      code: r.code,
      message: message ?? r.message,
      hint: r.hint,
      retryable: r.retryable,
    };
  });
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
    if (!(err instanceof TreeTemplateError)) throw err;
    src.report([...at, ...err.pointer], err.message, { line: err.line, column: err.column });
    return undefined;
  }
}
