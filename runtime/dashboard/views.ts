// The dashboard's templates: its own Handlebars instance (never the tool-spec one), every .hbs under
// views/ compiled once at start; `{{ }}` escapes every value, and no template uses triple braces for data
// (the markdown helpers escape everything themselves).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Handlebars from 'handlebars';
import type { AccountsBanner } from './accounts-banner.ts';
import type { CreditBanner } from './credits.ts';
import { markdownBlock, markdownInline } from './markdown.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const hbs = Handlebars.create();

const dateTime = (v: unknown) => {
  if (!v) return '—';
  const d = new Date(v as string);
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
};
const helpers = {
  eq: (a: unknown, b: unknown) => a === b,
  not: (a: unknown) => !a,
  defined: (a: unknown) => a !== undefined && a !== null,
  or: (...args: unknown[]) => args.slice(0, -1).some(Boolean),
  dateTime,
  plural: (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`,
  number: (n: number) => (typeof n === 'number' ? n.toLocaleString('en-US') : n),
  json: (v: unknown) => JSON.stringify(v),
  inc: (n: number) => n + 1,
  uri: (v: unknown) => encodeURIComponent(String(v ?? '')),
  concat: (...args: unknown[]) => args.slice(0, -1).join(''),
  asset: (file: string) => assetUrl(file),
  // The catalog's descriptions: escaped, with only inline code, emphasis and safe links as markup (markdown.ts).
  markdown: (text: unknown) => new hbs.SafeString(typeof text === 'string' ? markdownBlock(text) : ''),
  markdownInline: (text: unknown) => new hbs.SafeString(typeof text === 'string' ? markdownInline(text) : ''),
};
hbs.registerHelper(helpers);
// Strict: a `{{name}}` that the data does not have throws instead of rendering as nothing (a misspelt
// variable is a failing page, not a silent blank); only the helpers above and Handlebars' own may be used.
const compileOptions: CompileOptions = {
  strict: true,
  knownHelpersOnly: true,
  knownHelpers: Object.fromEntries(Object.keys(helpers).map((name) => [name, true])),
};

for (const file of readdirSync(path.join(here, 'views', 'partials'))) {
  hbs.registerPartial(path.basename(file, '.hbs'), hbs.compile(readFileSync(path.join(here, 'views', 'partials', file), 'utf8'), compileOptions));
}
const pages = new Map<string, HandlebarsTemplateDelegate>();
for (const file of readdirSync(path.join(here, 'views')).filter((f) => f.endsWith('.hbs'))) {
  pages.set(path.basename(file, '.hbs'), hbs.compile(readFileSync(path.join(here, 'views', file), 'utf8'), compileOptions));
}

/** Static files under assets/, with a content hash for cache-busting URLs. */
export const assets = new Map<string, { body: Buffer; type: string; hash: string }>();
const TYPES: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml' };
for (const file of readdirSync(path.join(here, 'assets'))) {
  const body = readFileSync(path.join(here, 'assets', file));
  assets.set(file, { body, type: TYPES[path.extname(file)] ?? 'application/octet-stream', hash: createHash('sha256').update(body).digest('hex').slice(0, 12) });
}
function assetUrl(file: string): string {
  return `/assets/${file}?v=${assets.get(file)!.hash}`;
}

export interface PageFrame {
  title: string;
  /** The nav entry to highlight. */
  section?: string;
  email?: string;
  csrfToken?: string;
  /** The banner of a signed-in owner short of credits. */
  credits?: CreditBanner | null;
  /** The banner of a signed-in owner some of whose accounts need them. */
  accounts?: AccountsBanner | null;
}

/** Renders a page inside the layout (or the bare layout for signed-out pages). */
export function render(page: string, frame: PageFrame, data: Record<string, unknown> = {}): string {
  const template = pages.get(page);
  if (!template) throw new Error(`no dashboard view ${page}`);
  const body = template({ ...data, frame });
  return pages.get('layout')!({ ...frame, body: new hbs.SafeString(body), signedIn: Boolean(frame.email) });
}
