// Default data of the Jira sandbox (also used by the demo): projects DEMO (software), OPS (service desk),
// MKT (business) and SEC (private to Alice), their workflows, users and a handful of issues.
import type { Issue, JiraStore, Project, Transition, User } from './model.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Accounts of the default seed; Alice's e-mail and token are the sandbox's default credentials. */
export const SEED_USERS = {
  alice: { accountId: '5b10a2844c20165700ede21g', displayName: 'Alice Admin', email: 'alice@example.com', apiToken: 'ATATT3xFfGF0-sim-alice-token' },
  bob: {
    accountId: '712020:5f0c8d3a-2b4e-4c1e-9a7b-0d2c3e4f5a6b',
    displayName: 'Bob Builder',
    email: 'bob@example.com',
    apiToken: 'ATATT3xFfGF0-sim-bob-token',
    scopedApiToken: 'ATATT3xFfGF0-sim-bob-scoped-token',
  },
  carol: { accountId: '712020:c4a1e2b3-9d8f-4e7a-b6c5-d4e3f2a1b0c9', displayName: 'Carol Quiet', email: 'carol@example.com' },
  dave: { accountId: '712020:0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6', displayName: 'Dave Departed', email: 'dave@example.com' },
  automation: { accountId: '557058:f58131cb-b67d-43c7-b30d-6b58d40bd077', displayName: 'Automation for Jira' },
  charlie: {
    accountId: 'qm:1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d:7e8f9a0b-1c2d-3e4f-5a6b-7c8d9e0f1a2b',
    displayName: 'Charlie Customer',
    email: 'charlie@customer.example',
  },
};

function users(): User[] {
  const base = { timeZone: 'Europe/Berlin', locale: 'en_US', active: true, emailVisible: true, accountType: 'atlassian' as const };
  const u = SEED_USERS;
  return [
    { ...base, ...u.alice },
    { ...base, ...u.bob, timeZone: 'America/New_York' },
    { ...base, ...u.carol, emailVisible: false },
    { ...base, ...u.dave, active: false },
    { ...base, ...u.automation, accountType: 'app', timeZone: 'UTC' },
    { ...base, ...u.charlie, accountType: 'customer' },
  ];
}

/** A small ADF document of plain paragraphs. */
export function adfDoc(...paragraphs: string[]): unknown {
  return {
    type: 'doc',
    version: 1,
    content: paragraphs.map((p) => ({ type: 'paragraph', content: [{ type: 'text', text: p }] })),
  };
}

const CREATE_SCREEN = ['description', 'assignee', 'reporter', 'priority', 'labels', 'components', 'fixVersions', 'parent', 'duedate', 'environment'];

/** Fills an empty store with the default data set. */
export function seedDefault(store: JiraStore): void {
  store.users.push(...users());
  store.statuses.push(
    { id: '10000', name: 'To Do', description: 'Work that has not been started.', category: 'new' },
    { id: '3', name: 'In Progress', description: 'This issue is being actively worked on at the moment by the assignee.', category: 'indeterminate' },
    { id: '10001', name: 'Done', description: 'Work has been completed.', category: 'done' },
    { id: '10002', name: 'Waiting for support', description: 'The customer is waiting for an agent.', category: 'new' },
    { id: '10003', name: 'Waiting for customer', description: 'An agent is waiting for the customer.', category: 'indeterminate' },
    { id: '10004', name: 'Work in progress', description: 'An agent is working on it.', category: 'indeterminate' },
    { id: '10005', name: 'Resolved', description: 'The request has been resolved.', category: 'done' },
  );
  store.issueTypes.push(
    { id: '10000', name: 'Epic', description: 'A big user story that needs to be broken down.', subtask: false, hierarchyLevel: 1 },
    { id: '10001', name: 'Task', description: 'A small, distinct piece of work.', subtask: false, hierarchyLevel: 0 },
    { id: '10002', name: 'Bug', description: 'A problem or error.', subtask: false, hierarchyLevel: 0 },
    { id: '10003', name: 'Story', description: 'Functionality or a feature expressed as a user goal.', subtask: false, hierarchyLevel: 0 },
    { id: '10004', name: 'Sub-task', description: 'A small piece of work that is part of a larger task.', subtask: true, hierarchyLevel: -1 },
    { id: '10005', name: 'Service Request', description: 'Requests for help or information.', subtask: false, hierarchyLevel: 0 },
    { id: '10006', name: 'Incident', description: 'A system outage or degradation.', subtask: false, hierarchyLevel: 0 },
  );
  const softwareTransitions: Transition[] = [
    { id: '11', name: 'Start progress', from: ['10000'], to: '3' },
    { id: '21', name: 'Stop progress', from: ['3'], to: '10000' },
    { id: '31', name: 'Mark as done', from: ['10000', '3'], to: '10001' },
    { id: '41', name: 'Reopen', from: ['10001'], to: '10000' },
  ];
  const softwareWorkflow = { initialStatusId: '10000', statusIds: ['10000', '3', '10001'], transitions: softwareTransitions };
  const alice = SEED_USERS.alice.accountId;
  const demo: Project = {
    id: '10000',
    key: 'DEMO',
    name: 'Demo Project',
    description: 'The main software project of the demo site.',
    projectTypeKey: 'software',
    simplified: false,
    leadAccountId: alice,
    issueTypeIds: ['10001', '10002', '10003', '10000', '10004'],
    workflow: softwareWorkflow,
    components: [
      { id: '10000', name: 'Frontend', description: 'Web client' },
      { id: '10001', name: 'Backend', description: 'Services and APIs' },
      { id: '10002', name: 'API', description: 'Public REST API' },
    ],
    versions: [
      { id: '10000', name: '1.0', released: true, archived: false, releaseDate: dateOnly(store.now() - 10 * DAY) },
      { id: '10001', name: '1.1', released: false, archived: false },
      { id: '10002', name: '2.0', released: false, archived: false },
    ],
    screenFields: CREATE_SCREEN,
    requiredFields: [],
  };
  const ops: Project = {
    id: '10001',
    key: 'OPS',
    name: 'IT Operations',
    description: 'Service desk for internal IT requests.',
    projectTypeKey: 'service_desk',
    simplified: false,
    leadAccountId: SEED_USERS.bob.accountId,
    issueTypeIds: ['10005', '10006', '10001', '10004'],
    workflow: {
      initialStatusId: '10002',
      statusIds: ['10002', '10003', '10004', '10005'],
      transitions: [
        { id: '51', name: 'Respond to customer', from: ['10002', '10004'], to: '10003' },
        { id: '61', name: 'Start work', from: ['10002', '10003'], to: '10004' },
        {
          id: '71',
          name: 'Resolve this issue',
          from: ['10002', '10003', '10004'],
          to: '10005',
          screen: { fields: ['resolution', 'comment'], required: ['resolution'] },
        },
        { id: '81', name: 'Reopen', from: ['10005'], to: '10002' },
      ],
    },
    components: [
      { id: '10003', name: 'Network', description: 'VPN, Wi-Fi, firewall' },
      { id: '10004', name: 'Email', description: 'Mail servers' },
    ],
    versions: [],
    // Service desk screens have no fix versions; priority is mandatory.
    screenFields: CREATE_SCREEN.filter((f) => f !== 'fixVersions'),
    requiredFields: ['priority'],
  };
  const mkt: Project = {
    id: '10002',
    key: 'MKT',
    name: 'Marketing',
    description: 'Campaigns and launches.',
    projectTypeKey: 'business',
    simplified: true,
    leadAccountId: alice,
    issueTypeIds: ['10001', '10004'],
    workflow: softwareWorkflow,
    components: [],
    versions: [],
    screenFields: CREATE_SCREEN.filter((f) => f !== 'components' && f !== 'fixVersions'),
    requiredFields: [],
  };
  const sec: Project = {
    id: '10003',
    key: 'SEC',
    name: 'Security',
    description: 'Restricted to the security team.',
    projectTypeKey: 'software',
    simplified: false,
    leadAccountId: alice,
    issueTypeIds: ['10001', '10002', '10004'],
    workflow: softwareWorkflow,
    components: [],
    versions: [],
    screenFields: CREATE_SCREEN,
    requiredFields: [],
    visibleTo: [alice],
  };
  store.projects.push(demo, ops, mkt, sec);
  seedIssues(store, demo, ops, mkt, sec);
}

function dateOnly(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function seedIssues(store: JiraStore, demo: Project, ops: Project, mkt: Project, sec: Project): void {
  const now = store.now();
  const { alice, bob, carol, automation, charlie } = SEED_USERS;
  const ago = (ms: number) => now - ms;
  const add = (project: Project, f: Partial<Issue> & { summary: string; issueTypeId: string }): Issue =>
    store.addIssue(project, { creatorId: alice.accountId, ...f });

  const epic = add(demo, {
    summary: 'Checkout revamp',
    issueTypeId: '10000',
    statusId: '3',
    assigneeId: alice.accountId,
    labels: ['frontend'],
    description: adfDoc('Rebuild the checkout flow end to end.'),
    created: ago(40 * DAY),
    updated: ago(6 * DAY),
    priorityId: '2',
  });
  add(demo, {
    summary: 'Redesign the cart page',
    issueTypeId: '10003',
    parentId: epic.id,
    assigneeId: bob.accountId,
    labels: ['frontend', 'ux'],
    componentIds: ['10000'],
    fixVersionIds: ['10001'],
    priorityId: '2',
    description: adfDoc('The cart page should show shipping costs before checkout.'),
    created: ago(20 * DAY),
    updated: ago(2 * DAY),
    duedate: dateOnly(now + 5 * DAY),
  });
  const bug = add(demo, {
    summary: 'Login fails with SSO',
    issueTypeId: '10002',
    statusId: '3',
    assigneeId: carol.accountId,
    reporterId: bob.accountId,
    labels: ['auth', 'customer-reported'],
    componentIds: ['10001'],
    priorityId: '1',
    description: adfDoc('Users signing in through the SSO provider get a 500 error.', 'Steps: open /login, choose SSO.'),
    environment: adfDoc('Production, Chrome 120'),
    created: ago(5 * DAY),
    updated: ago(1 * DAY),
    duedate: dateOnly(now - 2 * DAY),
  });
  store.addComment(bug, bob.accountId, adfDoc('I can reproduce this on staging.'), ago(4 * DAY));
  store.addComment(bug, carol.accountId, adfDoc('The token audience is wrong; fix coming.'), ago(1 * DAY));
  add(demo, {
    summary: 'Write release notes',
    issueTypeId: '10001',
    statusId: '10001',
    assigneeId: alice.accountId,
    fixVersionIds: ['10000'],
    created: ago(30 * DAY),
    updated: ago(10 * DAY),
    statusChanged: ago(10 * DAY),
    priorityId: '3',
  });
  const upgrade = add(demo, {
    summary: 'Upgrade database driver',
    issueTypeId: '10001',
    priorityId: '4',
    componentIds: ['10001'],
    description: adfDoc('Move to the new major version of the driver.'),
    created: ago(3 * DAY),
    updated: ago(2 * DAY),
  });
  add(demo, {
    summary: 'Update connection pool settings',
    issueTypeId: '10004',
    parentId: upgrade.id,
    assigneeId: bob.accountId,
    created: ago(2 * DAY + HOUR),
    updated: ago(2 * DAY),
  });
  add(demo, {
    summary: 'Run load tests',
    issueTypeId: '10004',
    parentId: upgrade.id,
    statusId: '10001',
    assigneeId: alice.accountId,
    created: ago(2 * DAY),
    updated: ago(1 * DAY),
  });
  add(demo, {
    summary: 'Typo on settings page',
    issueTypeId: '10002',
    priorityId: '5',
    reporterId: automation.accountId,
    creatorId: automation.accountId,
    created: ago(HOUR),
    updated: ago(HOUR),
  });

  add(ops, {
    summary: 'Grant VPN access',
    issueTypeId: '10005',
    reporterId: charlie.accountId,
    componentIds: ['10003'],
    description: adfDoc('I need VPN access for the new laptop.'),
    created: ago(6 * HOUR),
    updated: ago(6 * HOUR),
  });
  add(ops, {
    summary: 'Mail server down',
    issueTypeId: '10006',
    statusId: '10004',
    assigneeId: bob.accountId,
    priorityId: '1',
    componentIds: ['10004'],
    labels: ['outage'],
    created: ago(2 * DAY),
    updated: ago(3 * HOUR),
  });
  add(ops, {
    summary: 'Disk usage alert',
    issueTypeId: '10006',
    statusId: '10005',
    resolutionId: '10001',
    priorityId: '4',
    created: ago(9 * DAY),
    updated: ago(8 * DAY),
  });
  add(mkt, { summary: 'Plan launch webinar', issueTypeId: '10001', assigneeId: alice.accountId, created: ago(4 * DAY), updated: ago(4 * DAY) });
  add(sec, { summary: 'Rotate signing keys', issueTypeId: '10001', assigneeId: alice.accountId, created: ago(7 * DAY), updated: ago(7 * DAY) });
}

/** Adds `count` Tasks to a project for pagination tests; each one a minute older than the next. Returns their keys. */
export function seedManyIssues(store: JiraStore, projectKey: string, count: number, overrides: Partial<Issue> = {}): string[] {
  const project = store.projects.find((p) => p.key === projectKey);
  if (!project) throw new Error(`unknown project ${projectKey}`);
  const start = store.now() - count * 60_000;
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = start + i * 60_000;
    const issue = store.addIssue(project, {
      summary: `Generated issue ${i + 1}`,
      issueTypeId: project.issueTypeIds.find((id) => !store.issueType(id).subtask)!,
      creatorId: SEED_USERS.alice.accountId,
      created: at,
      updated: at,
      labels: ['generated'],
      ...overrides,
    });
    keys.push(issue.key);
  }
  return keys;
}
