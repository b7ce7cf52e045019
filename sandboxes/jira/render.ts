// JSON shapes of Jira Cloud REST v3 resources, with `self` URLs built from the sandbox's URL.
import { adfText } from './adf-check.ts';
import {
  PRIORITIES,
  RESOLUTIONS,
  STATUS_CATEGORIES,
  jiraTime,
  type Comment,
  type Component,
  type Issue,
  type IssueType,
  type JiraStore,
  type Priority,
  type Project,
  type Status,
  type Transition,
  type User,
  type Version,
} from './model.ts';

/** Field ids with their display names (the `names` expansion), in the order Jira lists them. */
export const FIELD_NAMES: Record<string, string> = {
  summary: 'Summary',
  issuetype: 'Issue Type',
  project: 'Project',
  status: 'Status',
  priority: 'Priority',
  assignee: 'Assignee',
  reporter: 'Reporter',
  creator: 'Creator',
  description: 'Description',
  environment: 'Environment',
  labels: 'Labels',
  components: 'Components',
  fixVersions: 'Fix versions',
  parent: 'Parent',
  subtasks: 'Sub-tasks',
  duedate: 'Due date',
  created: 'Created',
  updated: 'Updated',
  resolution: 'Resolution',
  resolutiondate: 'Resolved',
  statuscategorychangedate: 'Status Category Changed',
  issuelinks: 'Linked Issues',
  attachment: 'Attachment',
  watches: 'Watchers',
  votes: 'Votes',
  lastViewed: 'Last Viewed',
  customfield_10020: 'Sprint',
  comment: 'Comment',
};

/** `comment` is not navigable: `*navigable` leaves it out, `*all` includes it. */
const NON_NAVIGABLE = new Set(['comment']);

const SCHEMA_TYPES: Record<string, string> = {
  summary: 'string',
  description: 'string',
  environment: 'string',
  issuetype: 'issuetype',
  project: 'project',
  status: 'status',
  priority: 'priority',
  assignee: 'user',
  reporter: 'user',
  creator: 'user',
  labels: 'array',
  components: 'array',
  fixVersions: 'array',
  subtasks: 'array',
  issuelinks: 'array',
  attachment: 'array',
  parent: 'issuelink',
  duedate: 'date',
  created: 'datetime',
  updated: 'datetime',
  resolutiondate: 'datetime',
  statuscategorychangedate: 'datetime',
  resolution: 'resolution',
  comment: 'comments-page',
  watches: 'watches',
  votes: 'votes',
  lastViewed: 'datetime',
  customfield_10020: 'array',
};

export const ISSUE_EXPAND = 'renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations';

/**
 * Resolves a `fields` parameter (comma lists, possibly repeated): `*all`, `*navigable`, ids, `-id` exclusions.
 * Unknown ids are ignored, as Jira does. `onlyId` is true when nothing beyond `id` was asked for.
 */
export function selectFields(params: string[], defaultAll: boolean): { fields: Set<string>; onlyId: boolean } {
  const tokens = params
    .flatMap((p) => p.split(','))
    .map((t) => t.trim())
    .filter(Boolean);
  const includes = tokens.filter((t) => !t.startsWith('-'));
  const excludes = new Set(tokens.filter((t) => t.startsWith('-')).map((t) => t.slice(1)));
  const all = Object.keys(FIELD_NAMES);
  const fields = new Set<string>();
  const add = (ids: string[]) => ids.forEach((id) => fields.add(id));
  if (includes.length === 0 && defaultAll) add(all);
  for (const t of includes) {
    if (t === '*all') add(all);
    else if (t === '*navigable') add(all.filter((f) => !NON_NAVIGABLE.has(f)));
    else {
      const id = all.find((f) => f.toLowerCase() === t.toLowerCase());
      if (id) fields.add(id);
    }
  }
  for (const x of excludes) fields.delete(x);
  const askedForKey = includes.some((t) => t.toLowerCase() === 'key');
  return { fields, onlyId: fields.size === 0 && !askedForKey && !(includes.length === 0 && defaultAll) };
}

export class Renderer {
  constructor(
    private readonly store: JiraStore,
    readonly base: string,
  ) {}

  api(path: string): string {
    return `${this.base}/rest/api/3${path}`;
  }

  private avatars(kind: string, id: string): Record<string, string> {
    const url = (size: number) => `${this.base}/secure/${kind}avatar?size=${size}&avatarId=${encodeURIComponent(id)}`;
    return { '48x48': url(48), '24x24': url(24), '16x16': url(16), '32x32': url(32) };
  }

  user(u: User): Record<string, unknown> {
    return {
      self: this.api(`/user?accountId=${encodeURIComponent(u.accountId)}`),
      accountId: u.accountId,
      accountType: u.accountType,
      ...(u.email && u.emailVisible ? { emailAddress: u.email } : {}),
      avatarUrls: this.avatars('user', u.accountId),
      displayName: u.displayName,
      active: u.active,
      timeZone: u.timeZone,
      locale: u.locale,
    };
  }

  userOrNull(accountId: string | null): Record<string, unknown> | null {
    const u = this.store.user(accountId);
    return u ? this.user(u) : null;
  }

  status(s: Status): Record<string, unknown> {
    const c = STATUS_CATEGORIES[s.category];
    return {
      self: this.api(`/status/${s.id}`),
      description: s.description,
      iconUrl: `${this.base}/images/icons/statuses/generic.png`,
      name: s.name,
      id: s.id,
      statusCategory: { self: this.api(`/statuscategory/${c.id}`), id: c.id, key: c.key, colorName: c.colorName, name: c.name },
    };
  }

  issueType(t: IssueType): Record<string, unknown> {
    return {
      self: this.api(`/issuetype/${t.id}`),
      id: t.id,
      description: t.description,
      iconUrl: `${this.base}/rest/api/2/universal_avatar/view/type/issuetype/avatar/${t.id}?size=medium`,
      name: t.name,
      untranslatedName: t.name,
      subtask: t.subtask,
      avatarId: Number(t.id),
      hierarchyLevel: t.hierarchyLevel,
    };
  }

  priority(p: Priority): Record<string, unknown> {
    return { self: this.api(`/priority/${p.id}`), iconUrl: `${this.base}/images/icons/priorities/${p.name.toLowerCase()}.svg`, name: p.name, id: p.id };
  }

  projectRef(p: Project): Record<string, unknown> {
    return {
      self: this.api(`/project/${p.id}`),
      id: p.id,
      key: p.key,
      name: p.name,
      projectTypeKey: p.projectTypeKey,
      simplified: p.simplified,
      avatarUrls: this.avatars('project', p.id),
    };
  }

  component(c: Component): Record<string, unknown> {
    return { self: this.api(`/component/${c.id}`), id: c.id, name: c.name, description: c.description };
  }

  version(v: Version, projectId: string): Record<string, unknown> {
    return {
      self: this.api(`/version/${v.id}`),
      id: v.id,
      name: v.name,
      archived: v.archived,
      released: v.released,
      ...(v.releaseDate ? { releaseDate: v.releaseDate } : {}),
      projectId: Number(projectId),
    };
  }

  comment(issue: Issue, c: Comment): Record<string, unknown> {
    const author = this.userOrNull(c.authorId);
    return {
      self: this.api(`/issue/${issue.id}/comment/${c.id}`),
      id: c.id,
      author,
      body: c.body,
      updateAuthor: author,
      created: jiraTime(c.created),
      updated: jiraTime(c.updated),
      jsdPublic: true,
    };
  }

  transition(t: Transition, withFields: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {
      id: t.id,
      name: t.name,
      to: this.status(this.store.status(t.to)),
      hasScreen: Boolean(t.screen),
      isGlobal: t.from === undefined,
      isInitial: false,
      isAvailable: true,
      isConditional: false,
      isLooped: false,
    };
    if (withFields) {
      out.fields = Object.fromEntries(
        (t.screen?.fields ?? []).map((f) => [
          f,
          {
            required: t.screen!.required.includes(f),
            schema: { type: SCHEMA_TYPES[f] ?? 'string', system: f },
            name: FIELD_NAMES[f] ?? (f === 'resolution' ? 'Resolution' : f),
            key: f,
            operations: f === 'comment' ? ['add'] : ['set'],
            ...(f === 'resolution' ? { allowedValues: RESOLUTIONS.map((r) => this.resolution(r.id)) } : {}),
          },
        ]),
      );
    }
    return out;
  }

  resolution(id: string): Record<string, unknown> | null {
    const r = RESOLUTIONS.find((x) => x.id === id);
    return r ? { self: this.api(`/resolution/${r.id}`), id: r.id, description: r.description, name: r.name } : null;
  }

  /** The small issue summary used for `parent` and `subtasks`. */
  private issueRef(i: Issue): Record<string, unknown> {
    return {
      id: i.id,
      key: i.key,
      self: this.api(`/issue/${i.id}`),
      fields: {
        summary: i.summary,
        status: this.status(this.store.status(i.statusId)),
        priority: i.priorityId ? this.priority(this.store.priority(i.priorityId)!) : null,
        issuetype: this.issueType(this.store.issueType(i.issueTypeId)),
      },
    };
  }

  /** Every field of an issue; `parent` only exists when the issue has one. */
  allFields(i: Issue): Record<string, unknown> {
    const project = this.store.project(i.projectId);
    const parent = i.parentId ? this.store.issues.get(i.parentId) : undefined;
    const comments = i.comments.map((c) => this.comment(i, c));
    return {
      summary: i.summary,
      issuetype: this.issueType(this.store.issueType(i.issueTypeId)),
      project: this.projectRef(project),
      status: this.status(this.store.status(i.statusId)),
      priority: i.priorityId ? this.priority(PRIORITIES.find((p) => p.id === i.priorityId)!) : null,
      assignee: this.userOrNull(i.assigneeId),
      reporter: this.userOrNull(i.reporterId),
      creator: this.userOrNull(i.creatorId),
      description: i.description,
      environment: i.environment,
      labels: [...i.labels],
      components: project.components.filter((c) => i.componentIds.includes(c.id)).map((c) => this.component(c)),
      fixVersions: project.versions.filter((v) => i.fixVersionIds.includes(v.id)).map((v) => this.version(v, project.id)),
      ...(parent ? { parent: this.issueRef(parent) } : {}),
      subtasks: this.store.subtasks(i).map((s) => this.issueRef(s)),
      duedate: i.duedate,
      created: jiraTime(i.created),
      updated: jiraTime(i.updated),
      resolution: i.resolutionId ? this.resolution(i.resolutionId) : null,
      resolutiondate: i.resolutionDate === null ? null : jiraTime(i.resolutionDate),
      statuscategorychangedate: jiraTime(i.statusChanged),
      issuelinks: [],
      attachment: [],
      watches: { self: this.api(`/issue/${i.key}/watchers`), watchCount: 1, isWatching: false },
      votes: { self: this.api(`/issue/${i.key}/votes`), votes: 0, hasVoted: false },
      lastViewed: null,
      customfield_10020: null,
      comment: { comments, self: this.api(`/issue/${i.id}/comment`), maxResults: comments.length, total: comments.length, startAt: 0 },
    };
  }

  /** An issue as GET issue and search return it, with the chosen fields and expansions. */
  issue(i: Issue, fields: Set<string>, expand: Set<string>): Record<string, unknown> {
    const all = this.allFields(i);
    const out: Record<string, unknown> = {
      expand: ISSUE_EXPAND,
      id: i.id,
      self: this.api(`/issue/${i.id}`),
      key: i.key,
      fields: Object.fromEntries(Object.entries(all).filter(([k]) => fields.has(k))),
    };
    if (expand.has('renderedFields')) out.renderedFields = this.renderedFields(i);
    if (expand.has('names')) out.names = Object.fromEntries([...fields].map((f) => [f, FIELD_NAMES[f]]));
    if (expand.has('schema')) {
      out.schema = Object.fromEntries([...fields].map((f) => [f, { type: SCHEMA_TYPES[f], system: f }]));
    }
    if (expand.has('transitions')) out.transitions = availableTransitions(this.store, i).map((t) => this.transition(t, false));
    if (expand.has('operations')) out.operations = { linkGroups: [] };
    if (expand.has('editmeta')) {
      const project = this.store.project(i.projectId);
      const editable = ['summary', 'issuetype', ...project.screenFields];
      out.editmeta = { fields: Object.fromEntries(editable.map((f) => [f, { required: f === 'summary', name: FIELD_NAMES[f], key: f, operations: ['set'] }])) };
    }
    if (expand.has('changelog')) {
      const histories = i.history.map((h) => ({
        id: h.id,
        author: this.userOrNull(h.authorId),
        created: jiraTime(h.created),
        items: h.items.map((it) => ({ field: it.field, fieldtype: 'jira', from: null, fromString: it.fromString, to: null, toString: it.toString })),
      }));
      out.changelog = { startAt: 0, maxResults: histories.length, total: histories.length, histories };
    }
    return out;
  }

  private renderedFields(i: Issue): Record<string, unknown> {
    const html = (doc: unknown) => {
      const text = adfText(doc);
      if (!text) return null;
      const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
      return text
        .split('\n')
        .map((line) => `<p>${esc(line)}</p>`)
        .join('');
    };
    return {
      description: html(i.description),
      environment: html(i.environment),
      created: new Date(i.created).toUTCString(),
      updated: new Date(i.updated).toUTCString(),
      comment: { comments: i.comments.map((c) => ({ ...this.comment(i, c), body: html(c.body) })) },
    };
  }
}

/** Transitions offered from the issue's current status (never one that leads to the status it is in). */
export function availableTransitions(store: JiraStore, i: Issue): Transition[] {
  const workflow = store.project(i.projectId).workflow;
  return workflow.transitions.filter((t) => (t.from === undefined || t.from.includes(i.statusId)) && t.to !== i.statusId);
}
