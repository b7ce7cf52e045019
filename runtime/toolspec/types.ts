// TypeScript shapes of the YAML spec files: generated from the JSON Schemas in ./schemas (spec-types.ts, `npm run
// generate:spec`), which are the source of truth; this module adds the names code uses that no schema spells.
import type { RequestSpec } from './spec-types.ts';

export type * from './spec-types.ts';

export type HttpMethod = RequestSpec['method'];
