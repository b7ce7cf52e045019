// `npm run check:specs [-- <dir>] [--exchanges]`: lints every spec of <dir> (default tool-specs/, or
// TOOL_SPECS_DIR) without starting anything, every problem of every file at once; with --exchanges, also runs
// the exchanges written beside the tools, offline.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pluginRegistry } from '../../plugins/registry.ts';
import { formatFailure, runExchanges } from '../engine/exchange-runner.ts';
import { SpecLoadError, loadCatalog } from './loader.ts';

const USAGE = 'usage: npm run check:specs [-- <dir>] [--exchanges]';

let parsed;
try {
  parsed = parseArgs({ options: { exchanges: { type: 'boolean', default: false } }, allowPositionals: true });
} catch (err) {
  console.error(`${(err as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (parsed.positionals.length > 1) {
  console.error(`one folder at a time (got ${parsed.positionals.join(', ')})\n${USAGE}`);
  process.exit(2);
}
const dir = path.resolve(parsed.positionals[0] ?? (process.env.TOOL_SPECS_DIR || 'tool-specs'));
try {
  // $schema lines are written relative to the repository's schemas: they are followed for specs inside it only.
  const inRepository = !path.relative(process.cwd(), dir).startsWith('..');
  const catalog = await loadCatalog(dir, pluginRegistry, { schemaPaths: inRepository });
  console.log(`tool specs OK: ${catalog.providers.size} providers, ${catalog.tools.size} tools (${path.relative(process.cwd(), dir) || '.'})`);
  if (parsed.values.exchanges) {
    const report = await runExchanges(catalog);
    if (report.failures.length) {
      console.error(`${report.failures.length} of ${report.ran} exchanges went otherwise than written:\n${report.failures.map(formatFailure).join('\n')}`);
      process.exit(1);
    }
    console.log(`exchanges OK: ${report.ran} exchanges of ${report.tools} tools`);
  }
} catch (err) {
  if (!(err instanceof SpecLoadError)) throw err;
  console.error(err.message);
  process.exit(1);
}
