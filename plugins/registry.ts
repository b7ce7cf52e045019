// The plugin registry: every plugin a tool spec may name, by name. A spec never names a module path.
import type { Plugin, PluginRegistry } from '../runtime/plugin-api.ts';
import { jiraPlugins } from './jira/jira-plugins.ts';
import { notionPlugins } from './notion/notion-plugins.ts';
import { n8nPlugins } from './n8n/n8n-plugins.ts';
import { postgrestPlugins } from './postgrest/postgrest-plugins.ts';

const plugins: Plugin[] = [...jiraPlugins, ...postgrestPlugins, ...n8nPlugins, ...notionPlugins];

export const pluginRegistry: PluginRegistry = new Map(plugins.map((p) => [p.name, p]));
