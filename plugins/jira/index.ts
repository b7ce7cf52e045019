// Jira Cloud plugins: ADF both ways, users by e-mail, status changes by name, pagination.
import type { Plugin, RequestPlugin, ResponsePlugin } from '../../runtime/plugin-api.ts';
import { ToolError } from '../../runtime/tool-error.ts';
import { POINTERS_OPTIONS, updateAt } from '../pointer.ts';
import { adfToMarkdown, markdownToAdf } from './adf.ts';
import { offsetPagesPlugin, searchJqlPlugin } from './paging.ts';
import { transitionToStatusPlugin } from './transitions.ts';
import { resolveUsersPlugin } from './users.ts';

type Pointers = { pointers: string[] };

/** Text or markdown in the request body becomes Atlassian Document Format (Jira v3 rejects plain strings). */
export const markdownToAdfPlugin: RequestPlugin<Pointers> = {
  name: 'jira.markdown_to_adf',
  hook: 'request',
  description: 'Converts the strings at the given body pointers from text/markdown to Atlassian Document Format.',
  optionsSchema: POINTERS_OPTIONS,
  apply(request, { options }) {
    for (const pointer of options.pointers) updateAt(request.body, pointer, (v) => (typeof v === 'string' ? markdownToAdf(v) : undefined));
    return request;
  },
};

/** ADF in the result becomes readable markdown for the caller. */
export const adfToMarkdownPlugin: ResponsePlugin<Pointers> = {
  name: 'jira.adf_to_markdown',
  hook: 'response',
  description: 'Converts the ADF documents at the given result pointers to markdown text.',
  optionsSchema: POINTERS_OPTIONS,
  apply(result, { options }) {
    for (const pointer of options.pointers) updateAt(result, pointer, (v) => (v && typeof v === 'object' ? adfToMarkdown(v) : undefined));
    return result;
  },
};

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

/** Every Jira plugin, for the registry (plugins/index.ts). */
export const jiraPlugins: Plugin[] = [markdownToAdfPlugin, adfToMarkdownPlugin, resolveUsersPlugin, transitionToStatusPlugin, searchJqlPlugin, offsetPagesPlugin, requireOneOfPlugin];
