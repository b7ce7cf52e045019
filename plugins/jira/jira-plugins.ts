// Jira Cloud plugins: ADF both ways, users by e-mail, status changes by name, pagination.
import { type Plugin, type RequestPlugin, type ResponsePlugin, ToolError } from '../../runtime/plugin-api.ts';
import type { MarkdownInput } from '../markdown-limits.ts';
import { POINTERS_OPTIONS, convertAt, convertEachAt } from '../pointer.ts';
import { accessibleSitesPlugin } from './accessible-sites.ts';
import { type AdfDoc, adfToMarkdown } from './adf.ts';
import { apiGatewayPlugin } from './api-gateway.ts';
import { offsetPagesPlugin, searchJqlPlugin } from './paging.ts';
import { transitionToStatusPlugin } from './transitions.ts';
import { resolveUsersPlugin } from './users.ts';

const ADF_MODULE = new URL('./adf.ts', import.meta.url);

/**
 * Text or markdown in the request body becomes Atlassian Document Format (Jira v3 rejects plain strings),
 * converted off the event loop within the markdown limits (plugins/markdown-limits.ts); `argument` names the
 * text in their errors.
 */
export const markdownToAdfPlugin: RequestPlugin<{ pointers: string[]; argument: string }> = {
  name: 'jira.markdown_to_adf',
  hook: 'request',
  description: 'Converts the strings at the given body pointers from text/markdown to Atlassian Document Format; `argument` names them in errors.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['pointers', 'argument'],
    properties: Object.assign({}, POINTERS_OPTIONS.properties, { argument: { type: 'string', minLength: 1 } }),
  },
  async apply(request, { options, offLoop }) {
    const convert = (text: unknown) =>
      typeof text === 'string' ? offLoop<AdfDoc>(ADF_MODULE, 'boundedMarkdownToAdf', { argument: options.argument, text } satisfies MarkdownInput) : undefined;
    await convertEachAt(request.body, options.pointers, convert);
    return request;
  },
};

/** ADF in the result becomes readable markdown for the caller. */
export const adfToMarkdownPlugin = convertAt(
  'jira.adf_to_markdown',
  'response',
  'Converts the ADF documents at the given result pointers to markdown text.',
  (v) => (v && typeof v === 'object' ? adfToMarkdown(v) : undefined),
);

/**
 * Refuses a call that names none of the given arguments (an update with nothing to change). It runs as a
 * response plugin because then no step ran and nothing was sent; the credits are given back. (A schema-level
 * minProperties would also reject a custom tool's partial defaults.)
 */
export const requireOneOfPlugin: ResponsePlugin<{ args: string[] }> = {
  name: 'jira.require_one_of',
  hook: 'response',
  description: 'Fails with invalid_arguments (refunded) unless at least one of the named arguments was given.',
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['args'],
    properties: { args: { type: 'array', minItems: 1, items: { type: 'string' } } },
  },
  apply(result, { options, args }) {
    if (options.args.some((name) => args[name] !== undefined)) return result;
    throw new ToolError('invalid_arguments', `Nothing to do: give at least one of ${options.args.join(', ')}`, { refund: true });
  },
};

/** Every Jira plugin, for the registry (plugins/registry.ts). */
export const jiraPlugins: Plugin[] = [
  apiGatewayPlugin,
  accessibleSitesPlugin,
  markdownToAdfPlugin,
  adfToMarkdownPlugin,
  resolveUsersPlugin,
  transitionToStatusPlugin,
  searchJqlPlugin,
  offsetPagesPlugin,
  requireOneOfPlugin,
];
