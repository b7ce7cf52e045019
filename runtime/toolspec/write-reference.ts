// `npm run docs:spec`: writes the reference of the spec language (docs/spec-language.md) from the schemas and the
// helper table (runtime/toolspec/reference.ts).
import { writeFile } from 'node:fs/promises';
import { languageReference } from './reference.ts';

export const REFERENCE_FILE = 'docs/spec-language.md';

await writeFile(REFERENCE_FILE, languageReference());
console.log(`wrote ${REFERENCE_FILE}`);
