// What every markdown conversion of the plugins (Jira's ADF, Notion's blocks) refuses before and after it
// converts, as the caller's mistake with the argument named: nesting deeper than the converter can follow
// (marked lexes each level of a block quote or list again, so the cost grows with the square of the depth,
// and a few thousand levels exhaust the stack), and a result larger than is ever sent. The tool specs bound
// the input itself (maxLength); the conversion runs off the event loop (PluginContext.offLoop).
import { ToolError } from '../runtime/plugin-api.ts';

/** Block quotes and lists nested deeper than this are refused. */
export const MAX_MARKDOWN_NESTING = 32;

/** The text of one argument to convert, and its name for errors. */
export interface MarkdownInput {
  argument: string;
  text: string;
}

/** The caller's argument cannot be converted: nothing was sent, so the credits go back. */
export const refused = (argument: string, problem: string) => new ToolError('invalid_arguments', `"${argument}" ${problem}`, { refund: true });

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** The container prefix of a line: indentation, block-quote markers and list markers. */
const PREFIX = /^(?:[ \t]|>|[-+*][ \t]|\d{1,9}[.)][ \t])*/;

/**
 * Refuses text nested deeper than MAX_MARKDOWN_NESTING levels, judged line by line without parsing: each block
 * quote marker and list marker of a line's prefix is a level, and so are each two columns of its indentation
 * (a nested list item is indented under its parent). Fenced code is not looked into.
 */
export function checkNesting(input: MarkdownInput): void {
  let fence: string | undefined;
  const lines = input.text.split('\n');
  for (const [index, line] of lines.entries()) {
    const opening = FENCE.exec(line)?.[1];
    if (fence) {
      if (opening?.[0] === fence[0] && opening.length >= fence.length) fence = undefined;
      continue;
    }
    if (opening) {
      fence = opening;
      continue;
    }
    const prefix = PREFIX.exec(line)![0];
    let depth = 0;
    let columns = 0;
    for (const c of prefix) {
      if (c === ' ') columns += 1;
      else if (c === '\t') columns += 4;
      else if (c === '>' || c === '-' || c === '+' || c === '*' || c === '.' || c === ')') depth += 1;
    }
    depth += Math.floor(columns / 2);
    if (depth > MAX_MARKDOWN_NESTING)
      throw refused(input.argument, `is nested more than ${MAX_MARKDOWN_NESTING} levels deep (block quotes and lists, line ${index + 1})`);
  }
}

/** Refuses a conversion result whose JSON is longer than `max` characters; `what` names the format. */
export function checkConvertedSize(input: MarkdownInput, converted: unknown, max: number, what: string): void {
  const size = JSON.stringify(converted).length;
  if (size > max) {
    const kb = (n: number) => `${Math.ceil(n / 1024).toLocaleString('en-US')} KB`;
    throw refused(input.argument, `converts to ${kb(size)} of ${what}, more than the ${kb(max)} sent at most: shorten it or use less formatting`);
  }
}
