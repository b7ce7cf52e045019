// `npm run generate:spec`: writes what is generated from the spec language's schemas: its reference
// (docs/spec-language.md, with the template helper table) and the TypeScript shapes of spec files
// (runtime/toolspec/spec-types.ts). test/spec-reference.test.ts fails when a committed one is out of date.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { languageReference } from './reference.ts';
import { specTypes } from './schema-types.ts';

/** Each generated file (relative to the repository) and what writes it. */
export const GENERATED: Readonly<Record<string, () => string>> = {
  'docs/spec-language.md': languageReference,
  'runtime/toolspec/spec-types.ts': specTypes,
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [file, generate] of Object.entries(GENERATED)) {
    await writeFile(file, generate());
    console.log(`wrote ${file}`);
  }
}
