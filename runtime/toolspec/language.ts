// The facts of the spec language that tools writing specs need (the OpenAPI importer, the reference's
// generator): its schemas, its version, its limits and how files are named. The schemas are the source.
import exchangesSchema from './schemas/exchanges.schema.json' with { type: 'json' };
import providerSchema from './schemas/provider.schema.json' with { type: 'json' };
import toolSchema from './schemas/tool.schema.json' with { type: 'json' };

export { exchangesSchema, providerSchema, toolSchema };

/** The version of the language this runtime reads (`version:` in a spec; absent means this one). */
export const LANGUAGE_VERSION = toolSchema.definitions.version.const;

/**
 * The longest tool description, and the longest `description` inside a tool's input and output schemas, the
 * linter accepts: Claude Code cuts a longer tool description without saying so, and the schemas travel in the
 * same tools/list.
 */
export const MAX_DESCRIPTION_LENGTH: number = toolSchema.properties.description.maxLength;

/** A provider's spec in its folder: `<provider id>/provider.yaml`. */
export const isProviderFile = (name: string): boolean => /^provider\.ya?ml$/.test(name);

/** A tool's exchanges are in `<tool file>.exchanges.yaml` beside `<tool file>.yaml`. */
export const EXCHANGES_SUFFIX = '.exchanges.yaml';
export const isExchangesFile = (name: string): boolean => /\.exchanges\.ya?ml$/.test(name);
/** The exchanges file of a tool file (`get_issue.yaml` -> `get_issue.exchanges.yaml`). */
export const exchangesFileOf = (toolFile: string): string => toolFile.replace(/\.ya?ml$/, EXCHANGES_SUFFIX);
/** The tool file an exchanges file belongs to (`get_issue.exchanges.yaml` -> `get_issue.yaml`). */
export const toolFileOf = (exchangesFile: string): string => exchangesFile.replace(/\.exchanges\.(ya?ml)$/, '.$1');

/** `<NAME>` of a provider's OAuth app variables, OAUTH_<NAME>_CLIENT_ID and _CLIENT_SECRET: its id in upper case, - as _. */
export const oauthEnvName = (providerId: string): string => providerId.toUpperCase().replace(/-/g, '_');
