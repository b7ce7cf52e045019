// The default n8n instance: projects, API users, tags, webhook secrets and workflows.
// Used by the sandbox tests and by `npm run demo`.
import {
  NODE_TYPES,
  chain,
  countTriggers,
  nanoIdFrom,
  setPublished,
  uuidFrom,
  type N8nConnections,
  type N8nNode,
  type N8nProject,
  type N8nTag,
  type N8nWorkflow,
} from './model.ts';

export const PROJECTS = {
  owner: { id: nanoIdFrom('project:owner'), name: 'Olivia Owner <owner@example.com>', type: 'personal' },
  marketing: { id: nanoIdFrom('project:marketing'), name: 'Marketing', type: 'team' },
  member: { id: nanoIdFrom('project:member'), name: 'Max Member <member@example.com>', type: 'personal' },
} satisfies Record<string, N8nProject>;

/** Who an API key belongs to: the owner sees everything, a member only what is shared with their projects. */
export interface ApiUser {
  role: 'owner' | 'member';
  projectIds: string[];
}

/** n8n API keys are JWTs; these only need to look like one. */
function fakeJwt(subject: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: subject, iss: 'n8n', aud: 'public-api' })}.${Buffer.from(`sim-${subject}`).toString('base64url')}`;
}

export const API_KEYS = {
  owner: fakeJwt('owner-user'),
  member: fakeJwt('member-user'),
};

export const API_USERS: Record<string, ApiUser> = {
  [API_KEYS.owner]: { role: 'owner', projectIds: [PROJECTS.owner.id] },
  [API_KEYS.member]: { role: 'member', projectIds: [PROJECTS.member.id, PROJECTS.marketing.id] },
};

/** Credentials the protected webhooks expect (what a caller must send). */
export const WEBHOOK_SECRETS = {
  headerAuth: { name: 'X-Webhook-Token', value: 'sim-header-token-7f3a' },
  basicAuth: { user: 'hook-user', password: 'hook-pass-91c2' },
};

const CREDENTIALS = {
  header: { id: nanoIdFrom('cred:header'), name: 'Webhook token', type: 'httpHeaderAuth' },
  basic: { id: nanoIdFrom('cred:basic'), name: 'Webhook basic auth', type: 'httpBasicAuth' },
};

/** Secret data by credential id, as the Webhook node would load it. */
export const CREDENTIAL_DATA: Record<string, Record<string, string>> = {
  [CREDENTIALS.header.id]: { ...WEBHOOK_SECRETS.headerAuth },
  [CREDENTIALS.basic.id]: { ...WEBHOOK_SECRETS.basicAuth },
};

// 'archive' exists but tags no workflow.
const TAG_NAMES = ['production', 'marketing', 'internal', 'legacy', 'archive'] as const;
type TagName = (typeof TAG_NAMES)[number];

const day = (n: number) => `2025-03-${String(n).padStart(2, '0')}T09:30:00.000Z`;

export function seedTags(): N8nTag[] {
  return TAG_NAMES.map((name, i) => ({ id: nanoIdFrom(`tag:${name}`), name, createdAt: day(1 + i), updatedAt: day(1 + i) }));
}

interface WorkflowSeed {
  key: string;
  name: string;
  description?: string;
  active: boolean;
  tags: TagName[];
  project: N8nProject;
  sharedWith?: N8nProject[];
  nodes: N8nNode[];
  connections: N8nConnections;
  pinData?: N8nWorkflow['pinData'];
  settings?: Record<string, unknown>;
}

/** Builds nodes of one workflow with stable ids, laid out left to right. */
function nodeMaker(key: string) {
  let x = 0;
  return (name: string, type: string, parameters: Record<string, unknown>, extra: Partial<N8nNode> = {}): N8nNode => {
    const node: N8nNode = {
      id: uuidFrom(`${key}:${name}`),
      name,
      type,
      typeVersion: type === NODE_TYPES.webhook ? 2 : type === NODE_TYPES.respond ? 1.1 : 1,
      position: [x, 0],
      parameters,
      ...(type === NODE_TYPES.webhook && { webhookId: uuidFrom(`${key}:webhookId`) }),
      ...extra,
    };
    x += 220;
    return node;
  };
}

function webhookSeeds(baseUrl: string, slowMs: number): WorkflowSeed[] {
  const seeds: WorkflowSeed[] = [];
  const add = (seed: Omit<WorkflowSeed, 'nodes' | 'connections'>, build: (node: ReturnType<typeof nodeMaker>) => N8nNode[]) => {
    const nodes = build(nodeMaker(seed.key));
    seeds.push({ ...seed, nodes, connections: chain(...nodes.map((n) => n.name)) });
  };
  const owner = PROJECTS.owner;

  add({ key: 'hello', name: 'Hello webhook', active: true, tags: ['production'], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'hello', responseMode: 'lastNode', options: {} }),
    node('No Operation, do nothing', 'n8n-nodes-base.noOp', {}),
  ]);
  add({ key: 'echo', name: 'Echo (every method)', description: 'Answers with what it received', active: true, tags: ['internal'], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, {
      multipleMethods: true,
      httpMethod: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      path: 'echo',
      responseMode: 'lastNode',
      responseData: 'firstEntryJson',
      options: {},
    }),
  ]);
  add(
    {
      key: 'orders',
      name: 'Order notifications',
      description: 'Forwards new orders to the CRM',
      active: true,
      tags: ['production', 'marketing'],
      project: owner,
    },
    (node) => [
      node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'orders/new', responseMode: 'onReceived', options: {} }),
      node('Send to CRM', NODE_TYPES.httpRequest, { method: 'POST', url: 'https://crm.example.com/api/orders', sendBody: true }),
    ],
  );
  add({ key: 'greet', name: 'Greeting (text reply)', active: true, tags: ['marketing'], project: PROJECTS.marketing }, (node) => [
    node('Webhook', NODE_TYPES.webhook, { httpMethod: 'GET', path: 'greet', responseMode: 'responseNode', options: {} }),
    node('Respond to Webhook', NODE_TYPES.respond, { respondWith: 'text', responseBody: '=Hello {{ $json.query.name }}!', options: {} }),
  ]);
  add(
    {
      key: 'lead',
      name: 'Lead intake',
      description: 'Stores a lead and answers with it',
      active: true,
      tags: ['marketing', 'internal'],
      project: owner,
      sharedWith: [PROJECTS.marketing],
    },
    (node) => [
      node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'lead', responseMode: 'responseNode', options: {} }),
      node('Respond to Webhook', NODE_TYPES.respond, {
        respondWith: 'firstIncomingItem',
        options: { responseCode: 201, responseHeaders: { entries: [{ name: 'X-Lead-Status', value: 'received' }] } },
      }),
    ],
  );
  add({ key: 'slow', name: 'Slow report', active: true, tags: ['internal'], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'slow', responseMode: 'lastNode', options: {} }),
    node('Wait', NODE_TYPES.wait, { resume: 'timeInterval', amount: slowMs / 1000, unit: 'seconds' }),
  ]);
  add({ key: 'fail', name: 'Broken pipeline', active: true, tags: ['internal'], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'fail', responseMode: 'lastNode', options: {} }),
    node('Stop and Error', NODE_TYPES.stopAndError, { errorMessage: 'Upstream CRM rejected the record' }),
  ]);
  add({ key: 'headerAuth', name: 'Header-auth webhook', active: true, tags: ['production', 'internal'], project: owner }, (node) => [
    node(
      'Webhook',
      NODE_TYPES.webhook,
      { httpMethod: 'POST', path: 'secure-header', authentication: 'headerAuth', responseMode: 'lastNode', options: {} },
      { credentials: { httpHeaderAuth: { id: CREDENTIALS.header.id, name: CREDENTIALS.header.name } } },
    ),
  ]);
  add({ key: 'basicAuth', name: 'Basic-auth webhook', active: true, tags: ['production'], project: owner }, (node) => [
    node(
      'Webhook',
      NODE_TYPES.webhook,
      { httpMethod: 'POST', path: 'secure-basic', authentication: 'basicAuth', responseMode: 'lastNode', options: {} },
      { credentials: { httpBasicAuth: { id: CREDENTIALS.basic.id, name: CREDENTIALS.basic.name } } },
    ),
  ]);
  add({ key: 'contact', name: 'Contact form', active: true, tags: [], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, {
      multipleMethods: true,
      httpMethod: ['GET', 'POST'],
      path: 'contact',
      responseMode: 'onReceived',
      options: {},
    }),
  ]);
  add({ key: 'moved', name: 'Moved endpoint', active: true, tags: ['legacy'], project: owner }, (node) => [
    node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'moved', responseMode: 'responseNode', options: {} }),
    node('Respond to Webhook', NODE_TYPES.respond, { respondWith: 'redirect', redirectURL: `${baseUrl}/webhook/hello`, options: {} }),
  ]);
  add(
    {
      key: 'draft',
      name: 'Draft: lead scoring',
      description: 'Scores inbound leads (work in progress)',
      active: false,
      tags: ['marketing'],
      project: owner,
      pinData: { Webhook: [{ json: { headers: {}, params: {}, query: {}, body: { email: 'ada@example.com', score: 42 } } }] },
    },
    (node) => [
      node('Webhook', NODE_TYPES.webhook, { httpMethod: 'POST', path: 'lead-score', responseMode: 'lastNode', options: {} }),
      node('Score', NODE_TYPES.set, { assignments: { assignments: [{ name: 'score', value: 42, type: 'number' }] } }),
    ],
  );
  return seeds;
}

function otherSeeds(): WorkflowSeed[] {
  const nightly = nodeMaker('nightly');
  const nightlyNodes = [
    nightly('Schedule Trigger', NODE_TYPES.schedule, { rule: { interval: [{ field: 'cronExpression', expression: '0 2 * * *' }] } }),
    nightly(
      'Fetch contacts',
      NODE_TYPES.httpRequest,
      { url: 'https://crm.example.com/api/contacts' },
      { notes: 'Paged by the CRM: 100 contacts a call', notesInFlow: true, retryOnFail: true, maxTries: 3 },
    ),
    nightly('Old export', NODE_TYPES.set, { values: {} }, { disabled: true }),
  ];
  const scratch = nodeMaker('scratch');
  const scratchNodes = [scratch("When clicking 'Execute workflow'", 'n8n-nodes-base.manualTrigger', {})];
  return [
    {
      key: 'nightly',
      name: 'Nightly CRM sync',
      active: true,
      tags: ['production'],
      project: PROJECTS.owner,
      sharedWith: [PROJECTS.marketing],
      nodes: nightlyNodes,
      connections: chain(...nightlyNodes.map((n) => n.name)),
      settings: { executionOrder: 'v1', timezone: 'Europe/Berlin', saveDataSuccessExecution: 'none', errorWorkflow: nanoIdFrom('wf:fail') },
    },
    {
      key: 'scratch',
      name: 'Scratchpad',
      active: false,
      tags: [],
      project: PROJECTS.member,
      nodes: scratchNodes,
      connections: {},
    },
  ];
}

function buildWorkflow(seed: WorkflowSeed, index: number, tags: N8nTag[]): N8nWorkflow {
  const id = nanoIdFrom(`wf:${seed.key}`);
  const createdAt = day(5 + index);
  const share = (project: N8nProject, role: 'workflow:owner' | 'workflow:editor') => ({
    role,
    workflowId: id,
    projectId: project.id,
    createdAt,
    updatedAt: createdAt,
    project: { ...project },
  });
  const workflow: N8nWorkflow = {
    id,
    name: seed.name,
    ...(seed.description !== undefined && { description: seed.description }),
    active: false,
    isArchived: false,
    versionId: uuidFrom(`${seed.key}:version:1`),
    activeVersionId: null,
    triggerCount: 0,
    createdAt,
    updatedAt: createdAt,
    nodes: seed.nodes,
    connections: seed.connections,
    settings: seed.settings ?? { executionOrder: 'v1' },
    staticData: null,
    pinData: seed.pinData ?? null,
    meta: countTriggers(seed.nodes) > 0 ? { templateCredsSetupCompleted: true } : null,
    tags: seed.tags.map((name) => tags.find((t) => t.name === name)!),
    shared: [share(seed.project, 'workflow:owner'), ...(seed.sharedWith ?? []).map((p) => share(p, 'workflow:editor'))],
    activeVersion: null,
  };
  if (seed.active) setPublished(workflow, true, createdAt);
  return workflow;
}

/** Keys of the seeded workflows, for tests that need one by role. */
export type SeedKey =
  'hello' | 'echo' | 'orders' | 'greet' | 'lead' | 'slow' | 'fail' | 'headerAuth' | 'basicAuth' | 'contact' | 'moved' | 'draft' | 'nightly' | 'scratch';

export function seedWorkflows(baseUrl: string, slowMs: number, tags: N8nTag[]): { workflows: N8nWorkflow[]; ids: Record<SeedKey, string> } {
  const seeds = [...webhookSeeds(baseUrl, slowMs), ...otherSeeds()];
  const workflows = seeds.map((seed, i) => buildWorkflow(seed, i, tags));
  const ids = Object.fromEntries(seeds.map((seed, i) => [seed.key, workflows[i].id])) as Record<SeedKey, string>;
  return { workflows, ids };
}
