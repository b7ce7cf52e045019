// What is generated from the spec language's schemas (its reference, docs/spec-language.md, and the TypeScript
// shapes of spec files, runtime/toolspec/spec-types.ts): the committed files must be what the generator writes,
// and every helper's example must give what the reference says it gives.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { HELPERS, compileTemplate } from '../runtime/template/template.ts';
import { exchangesSchema, providerSchema, toolSchema } from '../runtime/toolspec/language.ts';
import { GENERATED } from '../runtime/toolspec/generate.ts';
import { languageReference } from '../runtime/toolspec/reference.ts';

describe('the reference of the spec language', () => {
  it('and the types of spec files are what npm run generate:spec writes', async () => {
    for (const [file, generate] of Object.entries(GENERATED)) {
      const committed = await readFile(file, 'utf8');
      expect(committed === generate(), `${file} is out of date: run npm run generate:spec and commit it`).toBe(true);
    }
  });

  it("renders every helper's example to what the reference says", () => {
    for (const [name, helper] of Object.entries(HELPERS)) {
      const rendered = compileTemplate(helper.example.template, () => null).render({ args: helper.example.args ?? {} });
      expect(rendered, name).toEqual(helper.example.gives);
    }
  });

  it('names every key of every schema', () => {
    const reference = languageReference();
    const keys = (schema: unknown): string[] =>
      schema && typeof schema === 'object'
        ? Object.entries(schema).flatMap(([k, v]) =>
            // The object schema of input and output is written as "JSON Schema (type object)", not as its one key.
            k === 'objectSchema' ? [] : k === 'properties' ? [...Object.keys(v as object), ...keys(v)] : keys(v),
          )
        : [];
    for (const schema of [toolSchema, providerSchema, exchangesSchema]) {
      for (const key of new Set(keys(schema))) expect(reference, key).toMatch(new RegExp(`\`([\\w.\\[\\]]+\\.)?${key.replace('$', '\\$')}\``));
    }
  });
});
