// ESLint: the recommended rules of ESLint and typescript-eslint (no type-aware rules: they would need a
// TypeScript program per run, and `npm run typecheck` already runs the compiler), plus the import
// boundaries of docs/architecture.md ("Layers"): each folder's block lists the imports that would be a
// wrong arrow, and its message names the layer rule that the import breaks.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** `../x/` one folder up (runtime/<layer>/file.ts), or any depth (plugins/<family>/file.ts). */
const up = '^\\.\\./';
const anyUp = '^(\\.\\./)+';
const layers = (names) => `(${names.join('|')})`;

// Every layer: the composition roots build the layers, never the other way round; tests are not product code.
const common = [
  {
    regex: `${anyUp}test/`,
    message: 'Layers: nothing under runtime/, plugins/ or sandboxes/ imports test/ (product code never depends on the test suite).',
  },
  {
    regex: `${anyUp}(runtime/)?(service|components|app|main|demo|demo-data|admin|indexes|config)\\.ts$`,
    message: 'Layers: only the composition roots (runtime/components.ts, app.ts, service.ts, main.ts, demo*.ts, admin.ts) import the composition roots.',
  },
  {
    group: ['node:async_hooks', 'async_hooks'],
    importNames: ['AsyncLocalStorage', 'createHook'],
    message:
      'Speed: AsyncLocalStorage turns on promise hooks for the whole process on Node 20 (about 45 µs of CPU per MCP call in bench:profile); hand the callee what it needs instead.',
  },
];

/** A block of restricted imports for some files: their own patterns plus the common ones. */
function boundary(files, patterns, ignores = []) {
  return { files, ignores, rules: { 'no-restricted-imports': ['error', { patterns: [...patterns, ...common] }] } };
}

const web = ['koa', '@koa/router', '@koa/*'];
const noWeb = (layer) => ({ group: web, message: `Layers: ${layer} knows nothing of HTTP serving (koa); the app and the web layers do.` });

const ALL_LAYERS = [
  'store',
  'template',
  'toolspec',
  'http',
  'engine',
  'mcp',
  'access',
  'accounts',
  'billing',
  'oauth',
  'servers',
  'mail',
  'pipeline',
  'api',
  'dashboard',
  'openapi',
];
const except = (...keep) => ALL_LAYERS.filter((l) => !keep.includes(l));
const toolspecLayer = {
  regex: `${up}${layers(except('template'))}/`,
  message:
    'Layers: runtime/toolspec (the tool-spec language) builds on runtime/template and the plugin API only; it knows nothing of the engine, the MCP endpoint, the API, the dashboard or the store.',
};
const domain = {
  regex: `${up}(${layers(['pipeline', 'api', 'dashboard'])}/|mcp/(?!backend\\.ts$)|engine/(?!engine\\.ts$))`,
  message:
    'Layers: the domain layers (access, accounts, billing, oauth, servers, mail) know nothing of the call pipeline, the API or the dashboard; of MCP only the seam mcp/backend.ts, of the engine only engine/engine.ts.',
};

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'coverage/', 'dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_name` marks a value left unused on purpose (e.g. a field dropped by destructuring with a rest).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // What a call runs through (docs/architecture.md, "The life of one tools/call").
    files: [
      'runtime/{mcp,pipeline,engine,http,template,billing,store,servers,access}/**',
      'runtime/accounts/{accounts,connections}.ts',
      'runtime/tool-error.ts',
      'plugins/**',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement:first-child:not(:last-child)',
          message:
            'Speed: on Node 20, an object literal that starts with a spread and goes on ({ ...a, b }, { ...a, ...b }) costs 1-15 µs where one that starts with a property, or Object.assign({}, a, { b }), costs under 0.1 (docs/bench.md). A spread first stays only where an own "__proto__" key of JSON input must stay data (Object.assign would set the prototype), with a comment.',
        },
        {
          selector: "NewExpression[callee.name='AbortController']",
          message:
            'Speed: on Node 20 an AbortSignal costs ~20 µs of CPU to make; a call is stopped through runtime/cancellation.ts, whose signal is made only for what reads it.',
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      // Tests and the bench read JSON answers of many shapes; `any` there keeps assertions short, and a wrong
      // field fails the assertion anyway.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['runtime/dashboard/assets/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    files: ['eslint.config.js'],
    languageOptions: { globals: globals.node },
  },

  // ---- Import boundaries (docs/architecture.md, "Layers") ----
  boundary(
    ['runtime/*.ts'],
    [
      {
        regex: `^\\./(${layers(['access', 'accounts', 'billing', 'oauth', 'servers', 'mail', 'pipeline', 'mcp', 'api', 'dashboard', 'store'])}/|(service|components|app|main|demo|demo-data|admin|indexes|config)\\.ts$)`,
        message:
          'Layers: the shared modules of runtime/ (plugin-api.ts, tool-error.ts, secrets.ts, log.ts...) sit below every layer and import none above the engine.',
      },
    ],
    ['runtime/{service,components,app,main,demo,demo-data,admin,indexes,config}.ts'],
  ),
  // The composition roots may import every layer, but not the tests.
  boundary(['runtime/{service,components,app,main,demo,demo-data,admin,indexes,config}.ts'], []),
  boundary(
    ['runtime/store/**'],
    [{ regex: up, message: 'Layers: runtime/store is the bottom layer, the store port and its adapters; it imports no other runtime layer.' }],
  ),
  boundary(
    ['runtime/template/**'],
    [{ regex: up, message: 'Layers: runtime/template (the template language) imports no other runtime layer.' }, noWeb('runtime/template')],
  ),
  boundary(
    ['runtime/toolspec/**'],
    [
      toolspecLayer,
      {
        regex: `${anyUp}plugins/`,
        message: 'Layers: runtime/toolspec takes the plugin registry as a parameter (PluginRegistry); only the composition roots pick plugins/registry.ts.',
      },
      noWeb('runtime/toolspec'),
    ],
    ['runtime/toolspec/check.ts'],
  ),
  // The CLI of `npm run check:specs` is a composition root of its own: it loads the specs with the real plugins
  // and runs their exchanges through the engine.
  boundary(
    ['runtime/toolspec/check.ts'],
    [
      {
        regex: `${up}${layers(except('toolspec', 'template', 'engine', 'http'))}/`,
        message:
          'Layers: the CLI of npm run check:specs loads the specs (runtime/toolspec) and runs their exchanges (runtime/engine, runtime/http); it knows nothing of the store, the domain, the pipeline, MCP, the API or the dashboard.',
      },
      noWeb('runtime/toolspec'),
    ],
  ),
  boundary(
    ['runtime/openapi/**'],
    [
      {
        regex: `${up}${layers(except('toolspec', 'openapi'))}/`,
        message:
          'Layers: runtime/openapi (the OpenAPI import) turns documents into tool specs; it builds on runtime/toolspec only and reads nothing from the network itself (import.ts hands it a reader).',
      },
      { regex: `${anyUp}plugins/`, message: 'Layers: runtime/openapi writes specs; only its command line (import.ts) lints them with plugins/registry.ts.' },
      noWeb('runtime/openapi'),
    ],
    ['runtime/openapi/import.ts'],
  ),
  // The CLI of `npm run import:openapi` is a composition root of its own: documents come through the one
  // outbound client (the guard), and what it wrote is linted with the real plugins.
  boundary(
    ['runtime/openapi/import.ts'],
    [
      {
        regex: `${up}${layers(except('toolspec', 'openapi', 'http'))}/`,
        message: 'Layers: the import command reads documents through runtime/http and writes tool specs; it needs no other runtime layer.',
      },
      noWeb('runtime/openapi'),
    ],
  ),
  boundary(
    ['runtime/http/**'],
    [
      { regex: `${up}${layers(ALL_LAYERS)}/`, message: 'Layers: runtime/http (the one outbound client and its guard) imports no other runtime layer.' },
      noWeb('runtime/http'),
    ],
  ),
  boundary(
    ['runtime/engine/**'],
    [
      {
        regex: `${up}${layers(except('toolspec', 'template', 'http'))}/`,
        message:
          'Layers: runtime/engine runs a base tool from the tool spec, the template language and the HTTP client; it knows nothing of the store, billing, access, the pipeline, MCP, the API or the dashboard.',
      },
      noWeb('runtime/engine'),
    ],
  ),
  boundary(
    ['runtime/mcp/**'],
    [
      {
        regex: `${up}(${layers(except('mcp', 'http', 'toolspec'))}/|toolspec/(?!types\\.ts$))`,
        message:
          'Layers: runtime/mcp speaks the protocol only; it reaches the rest of the service through mcp/backend.ts (McpBackend), never access, billing, oauth, servers, the pipeline or the engine.',
      },
    ],
  ),
  // The domain layers; oauth/routes.ts serves the authorization server's endpoints, so only oauth may use koa.
  boundary(['runtime/oauth/**'], [domain]),
  boundary(['runtime/access/**', 'runtime/accounts/**', 'runtime/billing/**', 'runtime/servers/**', 'runtime/mail/**'], [domain, noWeb('a domain layer')]),
  boundary(
    ['runtime/pipeline/**'],
    [
      {
        regex: `${up}(${layers(['api', 'dashboard'])}/|mcp/(?!backend\\.ts$))`,
        message: 'Layers: runtime/pipeline implements mcp/backend.ts (McpBackend); it knows nothing of the rest of the MCP endpoint, the API or the dashboard.',
      },
      noWeb('runtime/pipeline'),
    ],
  ),
  boundary(
    ['runtime/api/**'],
    [
      {
        regex: `${up}(${layers(['pipeline', 'mcp', 'dashboard', 'template'])}/|http/(?!body\\.ts$)|engine/(?!engine\\.ts$)|toolspec/(?!(live|catalog|types)\\.ts$)|store/(?!port\\.ts$))`,
        message:
          'Layers: runtime/api uses the domain layers; of the engine only Engine (engine/engine.ts), of the tool specs only the live catalog and its types, of the store only the port; never the pipeline, the MCP endpoint or the dashboard.',
      },
    ],
  ),
  boundary(
    ['runtime/dashboard/**'],
    [
      {
        regex: `${up}(${layers(['pipeline', 'mcp', 'engine', 'template', 'http', 'store'])}/|toolspec/(?!(live|catalog|types)\\.ts$))`,
        message:
          'Layers: runtime/dashboard renders pages from the domain layers and changes things through the API; it knows nothing of the engine, the pipeline, the MCP endpoint or the store, and of the tool specs only their types and the live catalog.',
      },
    ],
  ),
  boundary(
    ['plugins/**'],
    [
      { regex: `${anyUp}runtime/(?!plugin-api\\.ts$)`, message: 'Layers: plugins import only runtime/plugin-api.ts (and plugins/ files).' },
      { regex: `${anyUp}(sandboxes|bench)/`, message: 'Layers: plugins import only runtime/plugin-api.ts (and plugins/ files).' },
    ],
  ),
  boundary(
    ['sandboxes/**'],
    [
      {
        regex: `${anyUp}(runtime|plugins|bench)/`,
        message:
          'Layers: sandboxes/ simulate the providers on their own; they import nothing from runtime/, plugins/ or bench/ (so they cannot agree with our code by accident).',
      },
    ],
  ),
);
