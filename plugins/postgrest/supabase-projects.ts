// The Supabase projects an OAuth grant of the Management API reaches, each with the keys of its Data API:
// GET <management_url>/v1/projects, then GET /v1/projects/{ref}/api-keys for each. The owner picks a project
// and one of its keys; the account then holds that project's Data API URL and that key, exactly what an
// owner would paste. Keys are fetched with ?reveal=true only for the one picked (secret keys come masked
// otherwise).
import { type ConnectChoice, type ConnectContext, type ConnectPlugin, ToolError } from '../../runtime/plugin-api.ts';

type Options = { management_url: string; data_api_url: string };

interface Project {
  ref: string;
  name: string;
  region: string;
  status: string;
}

interface ApiKey {
  id: string;
  name: string;
  type: string;
  api_key: string | null;
}

/** What each kind of key lets the tools do, said plainly on the picker. */
const BYPASSES_RLS = 'Bypasses row-level security: the tools can read and change every row of every table the Data API exposes.';
const OBEYS_RLS = "Obeys row-level security: the tools see and change only what your policies allow this key's role (as a browser app would).";

export const supabaseProjectsPlugin: ConnectPlugin<Options> = {
  name: 'postgrest.supabase_projects',
  hook: 'connect',
  description: "Lists the Supabase projects of a Management API grant with their Data API keys; the chosen project's URL and key make the account.",
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['management_url', 'data_api_url'],
    properties: {
      management_url: { type: 'string', pattern: '^https?://' },
      data_api_url: { type: 'string', pattern: '^https?://.*\\{ref\\}', description: 'A project\'s Data API URL, "{ref}" standing for its ref.' },
    },
  },
  fields: ['project_ref', 'project_name', 'key_name'],
  async discover(ctx) {
    const projects = await listProjects(ctx);
    const keyLists = await Promise.all(projects.map((p) => listKeys(ctx, p.ref, false)));
    return {
      question: 'Which Supabase project, and which of its keys, should the tools use?',
      choices: projects.flatMap((p, i) => keyLists[i].flatMap((k) => choiceOf(p, k))),
      none: 'The Supabase account you signed in with has no project with a Data API key this app can see: create a project at supabase.com/dashboard (or ask to be added to one), then connect again.',
    };
  },
  async complete(choice, ctx) {
    const [ref, keyId] = choice.id.split('/');
    const project = (await listProjects(ctx)).find((p) => p.ref === ref);
    const key = project && (await listKeys(ctx, ref, true)).find((k) => k.id === keyId);
    if (!project || !key?.api_key) throw new ToolError('not_found', `The project or key ${choice.title} is no longer in this grant`);
    return {
      fields: { url: ctx.options.data_api_url.replace('{ref}', ref), project_ref: ref, project_name: project.name, key_name: key.name },
      secrets: { key: key.api_key },
      says: `the Supabase project “${project.name}” (${ref}) with its ${keyTitle(key)}`,
    };
  },
};

function choiceOf(project: Project, key: ApiKey): ConnectChoice[] {
  const privileged = key.name === 'service_role' || key.type === 'secret';
  const usable = ['anon', 'service_role'].includes(key.name) || ['publishable', 'secret'].includes(key.type);
  if (!usable) return [];
  return [
    {
      id: `${project.ref}/${key.id}`,
      title: keyTitle(key),
      detail: privileged ? BYPASSES_RLS : OBEYS_RLS,
      group: `${project.name} (${project.ref}, ${project.region})${project.status && project.status !== 'ACTIVE_HEALTHY' ? `: ${project.status.toLowerCase().replace(/_/g, ' ')}` : ''}`,
      ...(privileged ? { caution: 'Use it only for tools you trust with all of the data.' } : {}),
    },
  ];
}

const keyTitle = (key: ApiKey) =>
  key.type === 'legacy' || !['publishable', 'secret'].includes(key.type) ? `${key.name} key` : `${key.type} key “${key.name}”`;

async function listProjects(ctx: ConnectContext<Options>): Promise<Project[]> {
  const body = await getJson(ctx, '/v1/projects');
  return body.flatMap((p) => {
    const { ref, id, name, region, status } = (p ?? {}) as Record<string, unknown>;
    const projectRef = typeof ref === 'string' ? ref : id;
    if (typeof projectRef !== 'string' || !/^[a-z0-9]{1,64}$/.test(projectRef)) return [];
    return [
      {
        ref: projectRef,
        name: typeof name === 'string' ? name : projectRef,
        region: typeof region === 'string' ? region : '',
        status: typeof status === 'string' ? status : '',
      },
    ];
  });
}

async function listKeys(ctx: ConnectContext<Options>, ref: string, reveal: boolean): Promise<ApiKey[]> {
  const body = await getJson(ctx, `/v1/projects/${encodeURIComponent(ref)}/api-keys`, reveal ? [['reveal', 'true']] : []);
  return body.flatMap((k) => {
    const { id, name, type, api_key } = (k ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string') return [];
    return [
      {
        id: typeof id === 'string' && id ? id : name,
        name,
        type: typeof type === 'string' ? type : 'legacy',
        api_key: typeof api_key === 'string' ? api_key : null,
      },
    ];
  });
}

async function getJson(ctx: ConnectContext<Options>, path: string, query: Array<[string, string]> = []): Promise<unknown[]> {
  const res = await ctx.http.send({ method: 'GET', path: '', url: new URL(ctx.options.management_url.replace(/\/+$/, '') + path), query, headers: {} });
  if (!Array.isArray(res.body)) throw new ToolError('unexpected_response', `Supabase answered ${path} with something that is not a list`);
  return res.body;
}
