// The default workspace: a shared Welcome page with nested content, a Projects database with two data
// sources (Tasks uses every property type), templates, users, and a page the integration cannot see.
import { insertBlocks, type BlockDraft } from './blocks.ts';
import type { DatabaseRecord, DataSourceRecord, PageRecord, ParentRef, Workspace } from './model.ts';
import { newPropertyId, type PropSchema, type SelectOption } from './properties.ts';
import { textItems, type Annotations, type RichTextItem } from './richtext.ts';
import { newId, type Json } from './util.ts';

export interface SeedIds {
  users: { ada: string; grace: string; bot: string };
  welcomePage: string;
  gettingStartedPage: string;
  meetingNotesPage: string;
  meetingNotes: string[];
  privatePage: string;
  projectsDatabase: string;
  tasksDataSource: string;
  milestonesDataSource: string;
  privateDatabase: string;
  privateDataSource: string;
  taskRows: string[];
  bugReportTemplate: string;
  featureTemplate: string;
  /** The Welcome page's bulleted item with nested children, and its toggle. */
  nestedListItem: string;
  toggleBlock: string;
}

// --- block builders
const rt = (content: string, annotations: Partial<Annotations> = {}, url: string | null = null) => textItems(content, annotations, url);
const text = (type: string, rich_text: RichTextItem[], extra: Json = {}, children: BlockDraft[] = []): BlockDraft => ({
  type,
  data: { rich_text, color: 'default', ...extra },
  children,
});
const p = (content: string | RichTextItem[], children: BlockDraft[] = []) =>
  text('paragraph', typeof content === 'string' ? rt(content) : content, {}, children);
const h = (level: 1 | 2 | 3, content: string) => text(`heading_${level}`, rt(content), { is_toggleable: false });
const li = (content: string, children: BlockDraft[] = []) => text('bulleted_list_item', rt(content), {}, children);
const ol = (content: string) => text('numbered_list_item', rt(content));
const todo = (content: string, checked: boolean) => text('to_do', rt(content), { checked });
const code = (language: string, source: string): BlockDraft => ({ type: 'code', data: { caption: [], rich_text: rt(source), language }, children: [] });

const option = (name: string, color: string): SelectOption => ({ id: newId(), name, color, description: null });
const BASE_TIME = Date.parse('2025-06-02T09:00:00.000Z');
const hoursLater = (n: number) => new Date(BASE_TIME + n * 3_600_000).toISOString();

export function seedWorkspace(ws: Workspace): SeedIds {
  const ada = newId();
  const grace = newId();
  ws.users.set(ada, { id: ada, name: 'Ada Lovelace', type: 'person', email: 'ada@example.com' });
  ws.users.set(grace, { id: grace, name: 'Grace Hopper', type: 'person', email: 'grace@example.com' });
  ws.users.set(ws.botId, { id: ws.botId, name: 'Tool Server Integration', type: 'bot' });
  let clock = 0;

  const addPage = (title: string, parent: ParentRef, options: { shared?: boolean; blocks?: BlockDraft[]; properties?: Record<string, unknown> } = {}) => {
    const page: PageRecord = {
      ...ws.stamp(ada, hoursLater(clock++)),
      id: newId(),
      parent,
      properties: { title: rt(title), ...options.properties },
      icon: null,
      cover: null,
      isLocked: false,
      sharedWith: new Set(options.shared ? [ws.botId] : []),
      children: [],
    };
    ws.pages.set(page.id, page);
    if (parent.kind === 'page') ws.pages.get(parent.id)!.children.push(page.id);
    page.children = insertBlocks(ws, options.blocks ?? [], { kind: 'page', id: page.id });
    return page;
  };

  const addDatabase = (title: string, parentPage: string, sources: Array<{ title: string; schema: PropSchema[] }>) => {
    const db: DatabaseRecord = {
      ...ws.stamp(ada, hoursLater(clock++)),
      id: newId(),
      parent: { kind: 'page', id: parentPage },
      title: rt(title),
      description: rt(`The ${title} database.`),
      isInline: false,
      isLocked: false,
      icon: null,
      cover: null,
      sharedWith: new Set(),
      dataSourceIds: [],
    };
    ws.databases.set(db.id, db);
    ws.pages.get(parentPage)!.children.push(db.id);
    const created = sources.map((s) => {
      const ds: DataSourceRecord = {
        ...ws.stamp(ada, hoursLater(clock++)),
        id: newId(),
        databaseId: db.id,
        title: rt(s.title),
        description: [],
        icon: null,
        schema: s.schema,
        nextUniqueId: 1,
      };
      ws.dataSources.set(ds.id, ds);
      db.dataSourceIds.push(ds.id);
      return ds;
    });
    return { db, sources: created };
  };

  const schema: PropSchema[] = [];
  const prop = (name: string, type: PropSchema['type'], extra: Partial<PropSchema> = {}) => {
    const entry: PropSchema = { id: type === 'title' ? 'title' : newPropertyId(schema), name, type, description: null, ...extra };
    schema.push(entry);
    return entry;
  };

  // --- the shared Welcome page
  const nested = li('First item', [li('Nested item A'), li('Nested item B', [li('Deeper item')])]);
  const toggle = text('toggle', rt('More details'), {}, [p('Hidden until the toggle opens.'), todo('Nested to-do', false)]);
  const welcome = addPage(
    'Welcome',
    { kind: 'workspace' },
    {
      shared: true,
      blocks: [
        h(1, 'Welcome to the workspace'),
        p([
          ...rt('This workspace is '),
          ...rt('simulated', { bold: true }),
          ...rt(' for tests. See the '),
          ...rt('API docs', {}, 'https://developers.notion.com'),
          ...rt('.'),
        ]),
        h(2, 'Getting started'),
        nested,
        li('Second item'),
        ol('Step one'),
        ol('Step two'),
        todo('Share a page with the integration', false),
        todo('Create an integration', true),
        toggle,
        h(3, 'Code sample'),
        code('typescript', 'const answer: number = 42;\nconsole.log(answer);'),
        text('quote', rt('Simple things should be simple.')),
        { type: 'divider', data: {}, children: [] },
        p('The end.'),
      ],
    },
  );
  const welcomeBlocks = welcome.children;
  const gettingStarted = addPage(
    'Getting Started Guide',
    { kind: 'page', id: welcome.id },
    { blocks: [p('Read this first.'), li('Install'), li('Configure')] },
  );
  const meetingNotes = addPage('Meeting notes', { kind: 'page', id: welcome.id }, { blocks: [p('Weekly notes.')] });
  const weeks = Array.from(
    { length: 12 },
    (_, i) => addPage(`Meeting notes week ${i + 1}`, { kind: 'page', id: meetingNotes.id }, { blocks: [p(`Notes of week ${i + 1}.`)] }).id,
  );

  // --- Projects: Tasks uses every one of the eleven types, Milestones is the second data source
  const priority = prop('Priority', 'select', { options: [option('High', 'red'), option('Medium', 'yellow'), option('Low', 'green')] });
  const tags = prop('Tags', 'multi_select', { options: [option('backend', 'blue'), option('frontend', 'purple'), option('docs', 'gray')] });
  const statusOptions = [option('Not started', 'default'), option('In progress', 'blue'), option('Done', 'green')];
  // Notion shows property ids URL-encoded (":UJq" as "%3AUJq"); a fixed one keeps that case in every run.
  const status = prop('Status', 'status', {
    id: '%3AUJq',
    options: statusOptions,
    groups: [
      ['To-do', 'gray'],
      ['In progress', 'blue'],
      ['Complete', 'green'],
    ].map(([name, color], i) => ({ id: newId(), name, color, option_ids: [statusOptions[i].id] })),
  });
  prop('Name', 'title');
  const notes = prop('Notes', 'rich_text');
  const estimate = prop('Estimate', 'number', { numberFormat: 'number' });
  const due = prop('Due', 'date');
  const done = prop('Done', 'checkbox');
  const assignee = prop('Assignee', 'people');
  const link = prop('Link', 'url');
  const contact = prop('Contact', 'email');
  prop('Created', 'created_time');
  // Name first, as Notion lists the title first.
  schema.unshift(
    ...schema.splice(
      schema.findIndex((s) => s.type === 'title'),
      1,
    ),
  );

  const milestoneSchema: PropSchema[] = [
    { id: 'title', name: 'Milestone', type: 'title', description: null },
    { id: newPropertyId([]), name: 'Target', type: 'date', description: null },
  ];
  const projects = addDatabase('Projects', welcome.id, [
    { title: 'Tasks', schema },
    { title: 'Milestones', schema: milestoneSchema },
  ]);
  const [tasks, milestones] = projects.sources;
  const opt = (p: PropSchema, name: string) => p.options!.find((o) => o.name === name)!.id;

  const row = (title: string, values: Record<string, unknown>, template?: PageRecord['template']) => {
    const page = addPage(title, { kind: 'data_source', id: tasks.id });
    Object.assign(page.properties, values);
    page.template = template;
    return page;
  };
  const rows = [
    row('Write API docs', {
      [notes.id]: rt('Cover every endpoint'),
      [estimate.id]: 3,
      [priority.id]: opt(priority, 'Medium'),
      [tags.id]: [opt(tags, 'docs')],
      [due.id]: { start: '2025-07-01', end: null, time_zone: null },
      [done.id]: false,
      [status.id]: opt(status, 'In progress'),
      [assignee.id]: [ada],
      [link.id]: 'https://example.com/docs',
      [contact.id]: 'ada@example.com',
    }),
    row('Fix login bug', {
      [notes.id]: rt('Users are logged out after a minute'),
      [estimate.id]: 5,
      [priority.id]: opt(priority, 'High'),
      [tags.id]: [opt(tags, 'backend'), opt(tags, 'frontend')],
      [due.id]: { start: '2025-06-15', end: null, time_zone: null },
      [done.id]: true,
      [status.id]: opt(status, 'Done'),
      [assignee.id]: [grace],
      [link.id]: null,
      [contact.id]: 'grace@example.com',
    }),
    row('Design landing page', {
      [notes.id]: [],
      [estimate.id]: 8,
      [priority.id]: opt(priority, 'Low'),
      [tags.id]: [opt(tags, 'frontend')],
      [due.id]: { start: '2025-08-10T14:00:00.000Z', end: null, time_zone: null },
      [done.id]: false,
      [status.id]: opt(status, 'Not started'),
      [assignee.id]: [ada, grace],
    }),
    row('Set up CI', {
      [notes.id]: rt('GitHub Actions'),
      [estimate.id]: 2,
      [priority.id]: opt(priority, 'High'),
      [tags.id]: [opt(tags, 'backend')],
      [done.id]: false,
      [status.id]: opt(status, 'In progress'),
    }),
    row('Archive old tickets', { [estimate.id]: null, [done.id]: true, [status.id]: opt(status, 'Done'), [tags.id]: [] }),
  ];
  const bug = row(
    '',
    { [priority.id]: opt(priority, 'High'), [tags.id]: [opt(tags, 'backend')], [status.id]: opt(status, 'Not started') },
    { name: 'Bug report', isDefault: true },
  );
  bug.children = insertBlocks(
    ws,
    [h(2, 'Steps to reproduce'), ol('Open the app'), h(2, 'Expected'), p('Describe what should happen.'), todo('Add a regression test', false)],
    { kind: 'page', id: bug.id },
  );
  const feature = row('', { [priority.id]: opt(priority, 'Medium'), [status.id]: opt(status, 'Not started') }, { name: 'Feature request', isDefault: false });
  feature.children = insertBlocks(ws, [h(2, 'Problem'), p('Who needs this and why?')], { kind: 'page', id: feature.id });
  const milestone = addPage('Beta launch', { kind: 'data_source', id: milestones.id });
  milestone.properties = { title: rt('Beta launch'), [milestoneSchema[1].id]: { start: '2025-09-01', end: null, time_zone: null } };

  // --- not shared with the integration
  const privatePage = addPage('Private notes', { kind: 'workspace' }, { blocks: [p('Nobody shared this page.')] });
  const secret = addDatabase('Secret database', privatePage.id, [
    { title: 'Secrets', schema: [{ id: 'title', name: 'Name', type: 'title', description: null }] },
  ]);

  return {
    users: { ada, grace, bot: ws.botId },
    welcomePage: welcome.id,
    gettingStartedPage: gettingStarted.id,
    meetingNotesPage: meetingNotes.id,
    meetingNotes: weeks,
    privatePage: privatePage.id,
    projectsDatabase: projects.db.id,
    tasksDataSource: tasks.id,
    milestonesDataSource: milestones.id,
    privateDatabase: secret.db.id,
    privateDataSource: secret.sources[0].id,
    taskRows: rows.map((r) => r.id),
    bugReportTemplate: bug.id,
    featureTemplate: feature.id,
    nestedListItem: welcomeBlocks[3],
    toggleBlock: welcomeBlocks[9],
  };
}
