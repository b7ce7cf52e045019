// Jira Cloud plugins: ADF both ways.
import type { RequestPlugin, ResponsePlugin } from '../../runtime/plugin-api.ts';
import { POINTERS_OPTIONS, updateAt } from '../pointer.ts';
import { adfToMarkdown, markdownToAdf } from './adf.ts';

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
