// One spec file as the loader reads it: its YAML, its value, and the problems found in it, each placed at the
// line and column of the JSON pointer it concerns (`file:line:col json-path message`).
import type { ErrorObject } from 'ajv';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document, type Node as YamlNode } from 'yaml';
import { pointerParts } from '../json-pointer.ts';
import type { BaseTool, Provider } from './catalog.ts';
import { MAX_DESCRIPTION_LENGTH } from './language.ts';

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

/** One YAML file: its parsed value plus a way to turn a JSON pointer into a line and column. */
export class SourceFile {
  private parsed?: { doc: Document; lines: LineCounter; value: unknown };

  constructor(
    readonly file: string,
    /** The folder under the specs directory: the provider's id. */
    readonly folder: string,
    private readonly text: string,
    readonly issues: SpecIssue[],
    /** The sha-256 of the text. */
    readonly digest: string,
    /** What the same text compiled to at the last load (LoadOptions.previous): it had no problem then. */
    readonly kept?: Provider | BaseTool,
  ) {
    // A kept file is parsed only if it has to be compiled again (its provider changed).
    if (!kept) this.parse();
  }

  get value(): unknown {
    return this.parse().value;
  }

  private parse(): NonNullable<SourceFile['parsed']> {
    if (this.parsed) return this.parsed;
    const lines = new LineCounter();
    const doc = parseDocument(this.text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    for (const e of doc.errors) {
      const pos = lines.linePos(e.pos[0]);
      this.issues.push({ file: this.file, line: pos.line, column: pos.col, pointer: '', message: `YAML: ${e.message.split('\n')[0]}` });
    }
    this.parsed = { doc, lines, value: doc.errors.length ? undefined : doc.toJS() };
    return this.parsed;
  }

  /** Position of the deepest YAML node on the pointer's path (the key itself when `key` is set). */
  position(pointer: string[], key = false): { line: number; column: number } {
    const { doc, lines } = this.parse();
    let node: unknown = doc.contents;
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
    const pos = lines.linePos(offset);
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

export function toPointer(parts: string[]): string {
  return parts.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

export function reportAjvErrors(src: SourceFile, errors: ErrorObject[] | null | undefined, base: string[] = []): void {
  for (const e of errors ?? []) {
    const at = [...base, ...pointerParts(e.instancePath)];
    if (e.keyword === 'additionalProperties') {
      const prop = (e.params as { additionalProperty: string }).additionalProperty;
      src.report([...at, prop], `unknown property "${prop}"`, undefined, true);
    } else if (e.keyword === 'required') {
      src.report(at, `missing required property "${(e.params as { missingProperty: string }).missingProperty}"`);
    } else if (e.keyword === 'maxLength' && at.at(-1) === 'description') {
      src.report(at, tooLong((e.data as string).length));
    } else if (e.keyword === 'const' && at.length === 1 && at[0] === 'version') {
      src.report(at, `version ${JSON.stringify(e.data)} is not a version of the spec language this service reads (${JSON.stringify(e.params.allowedValue)})`);
    } else if (e.keyword === 'enum') {
      src.report(at, `${e.message}: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`);
    } else if (e.keyword !== 'oneOf' && e.keyword !== 'if') {
      src.report(at, e.message ?? 'is invalid');
    }
  }
}

/** The problem of a description over the limit, in words. */
export function tooLong(length: number): string {
  return `the description has ${length.toLocaleString('en')} characters, over the limit of ${MAX_DESCRIPTION_LENGTH.toLocaleString('en')} (Claude Code cuts longer ones without a word): shorten it`;
}

/** The top-level keys under which a schema check found a problem (their semantic checks are left out). */
export function keysWithProblems(errors: ErrorObject[] | null | undefined): Set<string> {
  const keys = new Set<string>();
  for (const e of errors ?? []) {
    const [first] = pointerParts(e.instancePath);
    if (first !== undefined) keys.add(first);
    else if (e.keyword === 'additionalProperties') keys.add((e.params as { additionalProperty: string }).additionalProperty);
    else if (e.keyword === 'required') keys.add((e.params as { missingProperty: string }).missingProperty);
  }
  return keys;
}
