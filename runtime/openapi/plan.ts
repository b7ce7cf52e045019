// What an import makes of a document: the operations chosen (by tag, operationId or method and path), a
// provider spec, one tool spec per operation that can be a tool, and each one left out with its reason.
// Pure: nothing is read or written here (document.ts reads, write.ts writes).
import type { ExchangesSpec, ProviderSpec, ToolSpec } from '../toolspec/types.ts';
import type { ApiDocument, ApiOperation } from './document.ts';
import { exchangesOf } from './exchanges.ts';
import { snake, toolNames } from './names.ts';
import { providerSpec } from './provider.ts';
import { toolSpec } from './tools.ts';

export interface ImportOptions {
  /** The provider's id: the folder's name, the tools' `provider`, the prefix of their names. */
  provider: string;
  title?: string;
  /** Operations with any of these tags... */
  tags?: string[];
  /** ...or matching any of these: an operationId or tool name (`*` wildcards), or `[METHOD] /path` (`*` wildcards). */
  operations?: string[];
  credits?: number;
  auth?: string;
  /** The longest tool description the linter accepts. */
  descriptionLimit: number;
}

export interface PlannedTool {
  operation: ApiOperation;
  spec: ToolSpec;
  /** File name in the provider's folder. */
  file: string;
  notes: string[];
  /** Its exchanges, from the document's examples (none when the document has no example answer). */
  exchanges?: ExchangesSpec;
}

export interface ImportPlan {
  document: ApiDocument;
  provider: ProviderSpec;
  /** Comments above top-level keys of provider.yaml. */
  providerComments: Partial<Record<keyof ProviderSpec, string>>;
  tools: PlannedTool[];
  skipped: Array<{ operation: ApiOperation; reason: string }>;
  /** About the provider: how its auth was mapped, what is left to do by hand. */
  notes: string[];
}

export class ImportError extends Error {}

const PROVIDER_ID = /^[a-z][a-z0-9_-]*$/;

/** "GET /repos/{owner}/{repo}/issues (issues/list-for-repo)" */
export function operationLabel(op: ApiOperation): string {
  return `${op.method.toUpperCase()} ${op.path}${op.operationId ? ` (${op.operationId})` : ''}`;
}

export function planImport(doc: ApiDocument, options: ImportOptions): ImportPlan {
  if (!PROVIDER_ID.test(options.provider)) {
    throw new ImportError(`--provider ${options.provider}: a provider id is lower-case letters, digits, _ and -, starting with a letter (e.g. github)`);
  }
  const names = toolNames(doc.operations, options.provider);
  const selected = select(doc, names, options);
  const provider = providerSpec(doc, selected, { id: options.provider, title: options.title, auth: options.auth });
  const tools: PlannedTool[] = [];
  const skipped: ImportPlan['skipped'] = [];
  const prefix = `${snake(options.provider)}_`;
  for (const operation of selected) {
    const name = names.get(operation)!;
    const made = toolSpec(operation, {
      provider: options.provider,
      name,
      credits: options.credits ?? 1,
      descriptionLimit: options.descriptionLimit,
      providerHeaders: provider.constantHeaders,
    });
    if ('skip' in made) skipped.push({ operation, reason: made.skip });
    else {
      const file = `${name.startsWith(prefix) ? name.slice(prefix.length) : name}.yaml`;
      tools.push({ operation, spec: made.spec, file, notes: made.notes, exchanges: exchangesOf(operation, made.spec, provider.spec) });
    }
  }
  return { document: doc, provider: provider.spec, providerComments: provider.comments, tools, skipped, notes: provider.notes };
}

function select(doc: ApiDocument, names: ReadonlyMap<ApiOperation, string>, options: ImportOptions): ApiOperation[] {
  const tags = (options.tags ?? []).map((t) => t.toLowerCase());
  const patterns = (options.operations ?? []).map((p) => ({ text: p, test: operationMatcher(p, names) }));
  if (!tags.length && !patterns.length) return doc.operations;
  const known = new Set(doc.operations.flatMap((op) => op.tags.map((t) => t.toLowerCase())));
  const unknownTags = tags.filter((t) => !known.has(t));
  if (unknownTags.length) {
    throw new ImportError(`--tag ${unknownTags.join(', ')}: no operation has this tag (the document's tags: ${[...known].sort().join(', ') || 'none'})`);
  }
  const unmatched = patterns.filter((p) => !doc.operations.some(p.test));
  if (unmatched.length) {
    throw new ImportError(
      `--operation ${unmatched.map((p) => p.text).join(', ')}: matches no operation (give an operationId, a tool name, or a method and path such as "GET /repos/*/issues"; * matches anything)`,
    );
  }
  return doc.operations.filter((op) => op.tags.some((t) => tags.includes(t.toLowerCase())) || patterns.some((p) => p.test(op)));
}

/** `issues/create`, `github_issues_*`, `/repos/*`, `GET /repos/{owner}/{repo}/issues`, `post,patch /repos/*`. */
function operationMatcher(pattern: string, names: ReadonlyMap<ApiOperation, string>): (op: ApiOperation) => boolean {
  const glob = (p: string) => new RegExp(`^${p.split('*').map(escape).join('.*')}$`, 'i');
  const m = /^(?:([A-Za-z*]+(?:[,|][A-Za-z]+)*)\s+)?(\/.*)$/.exec(pattern.trim());
  if (m) {
    const methods = m[1] && m[1] !== '*' ? m[1].toLowerCase().split(/[,|]/) : undefined;
    const path = glob(m[2]);
    return (op) => (!methods || methods.includes(op.method)) && path.test(op.path);
  }
  const id = glob(pattern.trim());
  return (op) => (op.operationId !== undefined && id.test(op.operationId)) || id.test(names.get(op) ?? '');
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
