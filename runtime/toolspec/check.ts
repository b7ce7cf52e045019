// `npm run check:specs`: validates every spec in tool-specs/ (or TOOL_SPECS_DIR) without starting anything.
import path from 'node:path';
import { pluginRegistry } from '../../plugins/registry.ts';
import { SpecLoadError, loadCatalog } from './loader.ts';

const dir = path.resolve(process.env.TOOL_SPECS_DIR || 'tool-specs');
try {
  // $schema lines are written relative to the repository's schemas: they are followed for specs inside it only.
  const inRepository = !path.relative(process.cwd(), dir).startsWith('..');
  const catalog = await loadCatalog(dir, pluginRegistry, { schemaPaths: inRepository });
  console.log(`tool specs OK: ${catalog.providers.size} providers, ${catalog.tools.size} tools`);
} catch (err) {
  if (!(err instanceof SpecLoadError)) throw err;
  console.error(err.message);
  process.exit(1);
}
