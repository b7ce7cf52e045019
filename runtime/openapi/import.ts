// `npm run import:openapi -- <file|url> --provider <id> [--tag t] [--operation o] [--out dir] [--dry-run]`:
// an OpenAPI document becomes a provider folder of tool specs, then the folder is linted like
// `npm run check:specs`. A composition root of its own: it reads URLs through the one outbound client
// (the outbound guard, ALLOW_PRIVATE_NETWORKS as for the service) and lints with the real plugins.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pluginRegistry } from '../../plugins/registry.ts';
import { createHttpClient } from '../http/client.ts';
import { parseAllowList } from '../http/guard.ts';
import { ToolError } from '../tool-error.ts';
import { SpecLoadError, loadCatalog } from '../toolspec/loader.ts';
import { MAX_DESCRIPTION_LENGTH } from '../toolspec/language.ts';
import { DocumentError, readApiDocument } from './document.ts';
import { ImportError, type ImportPlan, operationLabel, planImport } from './plan.ts';
import { type WriteReport, renderPlan, writePlan } from './write.ts';

const USAGE = `Usage: npm run import:openapi -- <file|url> --provider <id> [options]

  <file|url>           an OpenAPI 3.0/3.1 or Swagger 2.0 document, JSON or YAML (gzipped too)
  --provider <id>      the provider's id: its folder, and the prefix of its tools' names
  --tag <tag>          import the operations with this tag (repeatable)
  --operation <pat>    ...and those matching an operationId or tool name, or "[METHOD] /path" (* wildcards; repeatable)
  --out <dir>          where to write (default: tool-specs/<id>)
  --title <title>      the provider's title (default: the document's info.title)
  --auth <scheme>      when the document declares no security: bearer, basic, header:<Name> or query:<name>
  --credits <n>        credits per call of every tool (default 1)
  --dry-run            say what would be made and what is skipped, write nothing`;

/** Documents can be large (GitHub's is 12 MB): read up to this much, for this long. */
const DOCUMENT_LIMITS = { maxResponseBytes: 128 << 20, timeoutMs: 60_000 };

async function main(argv: string[]): Promise<number> {
  const started = performance.now();
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        provider: { type: 'string' },
        tag: { type: 'string', multiple: true },
        operation: { type: 'string', multiple: true },
        out: { type: 'string' },
        title: { type: 'string' },
        auth: { type: 'string' },
        credits: { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean' },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || !values.provider) {
    console.error(`${positionals.length > 1 ? `one document at a time (got ${positionals.join(', ')})` : 'a document and --provider are needed'}\n\n${USAGE}`);
    return 2;
  }
  const credits = values.credits === undefined ? 1 : Number(values.credits);
  if (!Number.isInteger(credits) || credits < 0) {
    console.error(`--credits ${values.credits}: a whole number of credits, 0 or more`);
    return 2;
  }
  const http = createHttpClient({ ...DOCUMENT_LIMITS, allow: parseAllowList(process.env.ALLOW_PRIVATE_NETWORKS), retries: 1, maxRetryAfterMs: 5000 });
  try {
    const doc = await readApiDocument(positionals[0], async (url) => {
      const res = await http.send({ method: 'GET', url, headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' }, raw: true });
      if (res.status < 200 || res.status > 299) throw new DocumentError(`${url.href} answered HTTP ${res.status}`);
      return res.body as Buffer;
    });
    const plan = planImport(doc, {
      provider: values.provider,
      title: values.title,
      tags: values.tag,
      operations: values.operation,
      credits,
      auth: values.auth,
      descriptionLimit: MAX_DESCRIPTION_LENGTH,
    });
    const out = path.resolve(values.out ?? path.join(process.env.TOOL_SPECS_DIR || 'tool-specs', values.provider));
    const dryRun = values['dry-run'] === true;
    const report = await writePlan(renderPlan(plan, out), out, dryRun);
    console.log(summary(plan, report, out, dryRun, values));
    const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;
    console.log(`imported in ${seconds(started)}, peak memory ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`);
    if (dryRun) return 0;
    const linting = performance.now();
    const lint = await lintFolder(out);
    console.log(`linted in ${seconds(linting)}`);
    return lint;
  } catch (err) {
    if (err instanceof DocumentError || err instanceof ImportError || err instanceof ToolError) {
      console.error(err.message);
      return 1;
    }
    if (err instanceof Error && /^--auth /.test(err.message)) {
      console.error(err.message);
      return 2;
    }
    throw err;
  } finally {
    http.close();
  }
}

function summary(plan: ImportPlan, report: WriteReport, out: string, dryRun: boolean, values: { tag?: string[]; operation?: string[] }): string {
  const doc = plan.document;
  const lines: string[] = [];
  const chosen = [...(values.tag ?? []).map((t) => `--tag ${t}`), ...(values.operation ?? []).map((o) => `--operation ${o}`)];
  const selected = plan.tools.length + plan.skipped.length;
  lines.push(
    `${doc.title}${doc.apiVersion ? ` ${doc.apiVersion}` : ''} (${doc.version === '2.0' ? 'Swagger 2.0' : `OpenAPI ${doc.version}`}): ${selected} of ${doc.operations.length} operations selected${chosen.length ? ` by ${chosen.join(', ')}` : ''}`,
  );
  const where = path.relative(process.cwd(), out) || '.';
  const exchanges = plan.tools.filter((t) => t.exchanges).length;
  lines.push(
    `${dryRun ? 'would make' : 'made'} ${where}/: provider.yaml, ${plan.tools.length} tool${plan.tools.length === 1 ? '' : 's'} and ` +
      `${exchanges} exchanges file${exchanges === 1 ? '' : 's'} (from the document's examples); ${plan.skipped.length} skipped`,
  );
  const width = Math.max(0, ...plan.tools.map((t) => t.spec.id.length));
  lines.push('', 'tools:');
  for (const t of plan.tools) lines.push(`  ${t.spec.id.padEnd(width)}  ${operationLabel(t.operation)}`);
  if (plan.skipped.length) {
    lines.push('', 'skipped:');
    for (const s of plan.skipped) lines.push(`  ${operationLabel(s.operation)}: ${s.reason}`);
  }
  const notes = [...plan.notes.map((n) => `provider: ${n}`), ...plan.tools.flatMap((t) => t.notes.map((n) => `${t.spec.id}: ${n}`))];
  if (notes.length) lines.push('', 'to check by hand:', ...notes.map((n) => `  ${n}`));
  lines.push('');
  const verb = dryRun ? 'would write' : 'written';
  lines.push(`files: ${report.written.length} ${verb}, ${report.unchanged.length} unchanged`);
  if (report.kept.length) lines.push(`kept as edited (no import line): ${report.kept.join(', ')}`);
  if (report.stale.length) lines.push(`imported earlier but not made now (delete them if their operations are gone): ${report.stale.join(', ')}`);
  return lines.join('\n');
}

/** Lints the folder's parent as `npm run check:specs` lints tool-specs/: the new provider among the others. */
async function lintFolder(out: string): Promise<number> {
  const dir = path.dirname(out);
  try {
    const inRepository = !path.relative(process.cwd(), dir).startsWith('..');
    const catalog = await loadCatalog(dir, pluginRegistry, { schemaPaths: inRepository });
    console.log(`lint: tool specs OK: ${catalog.providers.size} providers, ${catalog.tools.size} tools in ${path.relative(process.cwd(), dir) || '.'}`);
    return 0;
  } catch (err) {
    if (!(err instanceof SpecLoadError)) throw err;
    console.error(`lint: ${err.message}`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
