// An import plan as YAML files that read like hand-written specs: the $schema line, keys in the order a
// person writes them, small maps and lists on one line, long descriptions folded. The same plan always
// gives the same bytes, so re-importing a newer document shows in a diff exactly what the API changed.
// A file whose import line was deleted belongs to its editor: the next import leaves it alone.
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Document, Scalar, isMap, isScalar, isSeq } from 'yaml';
import { exchangesFileOf } from '../toolspec/language.ts';
import type { ImportPlan } from './plan.ts';
import { operationLabel } from './plan.ts';

export const IMPORT_MARK = '# Imported by npm run import:openapi';

export interface WriteReport {
  /** Files written (new or changed). */
  written: string[];
  /** Files whose bytes were already right. */
  unchanged: string[];
  /** Files without the import line: edited by hand, left alone. */
  kept: string[];
  /** Files an earlier import wrote for operations this one did not make. */
  stale: string[];
}

export interface RenderedFile {
  name: string;
  text: string;
}

const SCHEMAS = fileURLToPath(new URL('../toolspec/schemas/', import.meta.url));
const LINE_WIDTH = 110;
/** A map or list whose one-line form is at most this long is written on one line. */
const FLOW_WIDTH = 100;

/** Every file of the plan, rendered. */
export function renderPlan(plan: ImportPlan, outDir: string): RenderedFile[] {
  const schemaLine = (kind: 'provider' | 'tool' | 'exchanges') =>
    `# yaml-language-server: $schema=${path
      .relative(path.resolve(outDir), path.join(SCHEMAS, `${kind}.schema.json`))
      .split(path.sep)
      .join('/')}`;
  const files: RenderedFile[] = [
    {
      name: 'provider.yaml',
      text: `${schemaLine('provider')}\n${IMPORT_MARK} from ${plan.document.title}; delete this line to keep your edits.\n${yamlOf(plan.provider, plan.providerComments)}`,
    },
  ];
  for (const t of plan.tools) {
    const imported = `${IMPORT_MARK} from ${operationLabel(t.operation)}; delete this line to keep your edits.`;
    files.push({ name: t.file, text: `${schemaLine('tool')}\n${imported}\n${yamlOf(t.spec)}` });
    if (t.exchanges) files.push({ name: exchangesFileOf(t.file), text: `${schemaLine('exchanges')}\n${imported}\n${yamlOf(t.exchanges)}` });
  }
  return files;
}

/** Writes the files (unless `dryRun`) and says what happened to each. */
export async function writePlan(files: readonly RenderedFile[], outDir: string, dryRun: boolean): Promise<WriteReport> {
  const report: WriteReport = { written: [], unchanged: [], kept: [], stale: [] };
  if (!dryRun) await mkdir(outDir, { recursive: true });
  const existing = new Map<string, string>();
  for (const name of await readdir(outDir).catch(() => [] as string[])) {
    if (/\.ya?ml$/.test(name)) existing.set(name, await readFile(path.join(outDir, name), 'utf8'));
  }
  for (const f of files) {
    const before = existing.get(f.name);
    existing.delete(f.name);
    if (before === f.text) report.unchanged.push(f.name);
    else if (before !== undefined && !isImported(before)) report.kept.push(f.name);
    else {
      if (!dryRun) await writeFile(path.join(outDir, f.name), f.text);
      report.written.push(f.name);
    }
  }
  for (const [name, text] of existing) if (isImported(text)) report.stale.push(name);
  return report;
}

const isImported = (text: string) => text.split('\n', 3).some((line) => line.startsWith(IMPORT_MARK));

/** YAML of a spec as a person lays it out; `comments` go above top-level keys (each line a comment). */
export function yamlOf(value: unknown, comments: Record<string, string | undefined> = {}): string {
  const doc = new Document(value);
  const root = doc.contents;
  if (isMap(root)) {
    for (const pair of root.items) {
      layout(pair.value);
      const comment = isScalar(pair.key) ? comments[String(pair.key.value)] : undefined;
      if (comment) (pair.key as Scalar).commentBefore = comment;
      // The tool's own description: a folded block, as written by hand.
      if (isScalar(pair.key) && pair.key.value === 'description' && isScalar(pair.value) && String(pair.value.value).length > 80) {
        pair.value.type = Scalar.BLOCK_FOLDED;
      }
    }
  }
  return doc.toString({ lineWidth: LINE_WIDTH, minContentWidth: 40, flowCollectionPadding: true });
}

/**
 * Children first: a collection goes on one line when all it holds is scalars and one-line collections and
 * its one-line form is short; a list of single words (required, enum) always does (the line is wrapped).
 * Returns the length of the node's one-line form, or Infinity when it cannot have one.
 */
function layout(node: unknown): number {
  if (isScalar(node)) return /\n/.test(String(node.value)) ? Infinity : JSON.stringify(node.value ?? null).length;
  if (!isMap(node) && !isSeq(node)) return Infinity;
  let length = 2;
  let words = isSeq(node);
  for (const item of node.items as unknown[]) {
    const [key, value] = isMap(node) ? [(item as { key: unknown }).key, (item as { value: unknown }).value] : [undefined, item];
    length += layout(value) + (key === undefined ? 2 : String((key as { value?: unknown }).value).length + 4);
    words &&= isScalar(value) && !/\s/.test(String(value.value));
  }
  const flow = words || length <= FLOW_WIDTH;
  (node as { flow?: boolean }).flow = flow;
  return flow ? length : Infinity;
}
