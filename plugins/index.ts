// The plugin registry: every plugin a tool spec may name, by name. A spec never names a module path.
import type { Plugin, PluginRegistry } from '../runtime/plugin-api.ts';
import { adfToMarkdownPlugin, markdownToAdfPlugin } from './jira/index.ts';

const plugins: Plugin[] = [markdownToAdfPlugin, adfToMarkdownPlugin];

export const pluginRegistry: PluginRegistry = new Map(plugins.map((p) => [p.name, p]));
