// In-memory state of the Jira Cloud sandbox: users, projects with workflows, issues.

export type CategoryKey = 'new' | 'indeterminate' | 'done';

export interface StatusCategory {
  id: number;
  key: CategoryKey;
  name: string;
  colorName: string;
}

/** Jira's three fixed status categories. */
export const STATUS_CATEGORIES: Record<CategoryKey, StatusCategory> = {
  new: { id: 2, key: 'new', name: 'To Do', colorName: 'blue-gray' },
  indeterminate: { id: 4, key: 'indeterminate', name: 'In Progress', colorName: 'yellow' },
  done: { id: 3, key: 'done', name: 'Done', colorName: 'green' },
};

export interface Status {
  id: string;
  name: string;
  description: string;
  category: CategoryKey;
}

export interface Transition {
  id: string;
  /** Differs from the target status name, as in real workflows ("Start progress" -> In Progress). */
  name: string;
  to: string;
  /** Status ids it is available from; undefined = global transition (from any status). */
  from?: string[];
  /** Fields on the transition screen, and which of them are required. */
  screen?: { fields: string[]; required: string[] };
}

export interface Workflow {
  initialStatusId: string;
  statusIds: string[];
  transitions: Transition[];
}

export interface IssueType {
  id: string;
  name: string;
  description: string;
  subtask: boolean;
  /** -1 sub-task, 0 standard, 1 epic. */
  hierarchyLevel: number;
}

export interface Priority {
  id: string;
  name: string;
}

export interface User {
  accountId: string;
  displayName: string;
  email?: string;
  /** False when the user's privacy settings hide the e-mail: `emailAddress` is then omitted. */
  emailVisible: boolean;
  accountType: 'atlassian' | 'app' | 'customer';
  active: boolean;
  timeZone: string;
  locale: string;
  /** API token for Basic auth (only for users that can log in). */
  apiToken?: string;
  /** A token with scopes: accepted only through the API gateway (/ex/jira/<cloudId>), 401 at the site. */
  scopedApiToken?: string;
}

export interface Component {
  id: string;
  name: string;
  description: string;
}

export interface Version {
  id: string;
  name: string;
  released: boolean;
  archived: boolean;
  releaseDate?: string;
}

export interface Project {
  id: string;
  key: string;
  name: string;
  description: string;
  projectTypeKey: 'software' | 'service_desk' | 'business';
  simplified: boolean;
  leadAccountId: string;
  issueTypeIds: string[];
  workflow: Workflow;
  components: Component[];
  versions: Version[];
  /** Fields on the create/edit screen (besides project, issuetype, summary which are always there). */
  screenFields: string[];
  /** Fields this project requires on create, beyond summary/project/issuetype. */
  requiredFields: string[];
  /** Account ids that may browse it; undefined = every logged-in user. */
  visibleTo?: string[];
}

export interface Comment {
  id: string;
  authorId: string;
  body: unknown;
  created: number;
  updated: number;
}

export interface ChangeItem {
  field: string;
  fromString: string | null;
  toString: string | null;
}

export interface History {
  id: string;
  authorId: string;
  created: number;
  items: ChangeItem[];
}

export interface Issue {
  id: string;
  key: string;
  projectId: string;
  issueTypeId: string;
  summary: string;
  /** Raw ADF as stored (null = no description). */
  description: unknown;
  environment: unknown;
  statusId: string;
  priorityId: string | null;
  assigneeId: string | null;
  reporterId: string | null;
  creatorId: string;
  labels: string[];
  componentIds: string[];
  fixVersionIds: string[];
  parentId: string | null;
  /** yyyy-mm-dd */
  duedate: string | null;
  created: number;
  updated: number;
  statusChanged: number;
  /** Resolution id; set while the issue is in a done status. */
  resolutionId: string | null;
  resolutionDate: number | null;
  comments: Comment[];
  history: History[];
  /** Search sees the issue only from this moment (eventual consistency of /search/jql). */
  indexedAt: number;
}

export const PRIORITIES: Priority[] = [
  { id: '1', name: 'Highest' },
  { id: '2', name: 'High' },
  { id: '3', name: 'Medium' },
  { id: '4', name: 'Low' },
  { id: '5', name: 'Lowest' },
];

export interface Resolution {
  id: string;
  name: string;
  description: string;
}

/** The first one is what a done status gets when the transition does not choose. */
export const RESOLUTIONS: Resolution[] = [
  { id: '10000', name: 'Done', description: 'Work has been completed on this issue.' },
  { id: '10001', name: "Won't Do", description: "This issue won't be actioned." },
  { id: '10002', name: 'Duplicate', description: 'The problem is a duplicate of an existing issue.' },
  { id: '10003', name: 'Cannot Reproduce', description: 'This issue could not be reproduced.' },
];

/** Timestamps as Jira prints them: `2021-01-17T12:34:00.000+0000` (no colon in the offset). */
export function jiraTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+0000');
}

const ci = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export class JiraStore {
  readonly statuses: Status[] = [];
  readonly issueTypes: IssueType[] = [];
  readonly users: User[] = [];
  readonly projects: Project[] = [];
  readonly issues = new Map<string, Issue>();
  private nextIssueId = 10000;
  private nextOtherId = 10000;
  private readonly issueCounters = new Map<string, number>();

  constructor(
    readonly now: () => number,
    /** Delay before a new issue shows up in search (eventual consistency); 0 = immediately. */
    public searchLagMs = 0,
  ) {}

  newId(): string {
    return String(this.nextOtherId++);
  }

  status(id: string): Status {
    const s = this.statuses.find((x) => x.id === id);
    if (!s) throw new Error(`unknown status ${id}`);
    return s;
  }

  issueType(id: string): IssueType {
    const t = this.issueTypes.find((x) => x.id === id);
    if (!t) throw new Error(`unknown issue type ${id}`);
    return t;
  }

  priority(id: string): Priority | undefined {
    return PRIORITIES.find((p) => p.id === id);
  }

  user(accountId: string | null | undefined): User | undefined {
    return accountId ? this.users.find((u) => u.accountId === accountId) : undefined;
  }

  project(id: string): Project {
    const p = this.projects.find((x) => x.id === id);
    if (!p) throw new Error(`unknown project ${id}`);
    return p;
  }

  /** Projects a caller may browse (anonymous callers see none). */
  visibleProjects(callerId: string | null): Project[] {
    if (!callerId) return [];
    return this.projects.filter((p) => !p.visibleTo || p.visibleTo.includes(callerId));
  }

  /** Finds a visible project by key (any case), id or, when allowed, name. */
  findProject(callerId: string | null, ref: string, byName = false): Project | undefined {
    return this.visibleProjects(callerId).find((p) => ci(p.key, ref) || p.id === ref || (byName && ci(p.name, ref)));
  }

  /** Finds an issue by id or key (key match ignores case), if the caller may see its project. */
  findIssue(callerId: string | null, ref: string): Issue | undefined {
    const visible = new Set(this.visibleProjects(callerId).map((p) => p.id));
    const issue = this.issues.get(ref) ?? [...this.issues.values()].find((i) => ci(i.key, ref));
    return issue && visible.has(issue.projectId) ? issue : undefined;
  }

  subtasks(issue: Issue): Issue[] {
    return [...this.issues.values()].filter((i) => i.parentId === issue.id && this.issueType(i.issueTypeId).subtask);
  }

  children(issue: Issue): Issue[] {
    return [...this.issues.values()].filter((i) => i.parentId === issue.id);
  }

  /** Adds an issue with the project's next key; missing values get workflow/type defaults. */
  addIssue(project: Project, fields: Partial<Issue> & { summary: string; issueTypeId: string; creatorId: string }): Issue {
    const number = (this.issueCounters.get(project.id) ?? 0) + 1;
    this.issueCounters.set(project.id, number);
    const now = this.now();
    const created = fields.created ?? now;
    const issue: Issue = {
      id: String(this.nextIssueId++),
      key: `${project.key}-${number}`,
      projectId: project.id,
      description: null,
      environment: null,
      statusId: project.workflow.initialStatusId,
      priorityId: '3',
      assigneeId: null,
      reporterId: fields.creatorId,
      labels: [],
      componentIds: [],
      fixVersionIds: [],
      parentId: null,
      duedate: null,
      updated: created,
      statusChanged: created,
      resolutionId: null,
      resolutionDate: null,
      comments: [],
      history: [],
      ...fields,
      created,
      indexedAt: now + this.searchLagMs,
    };
    if (this.status(issue.statusId).category === 'done') {
      issue.resolutionId ??= RESOLUTIONS[0].id;
      issue.resolutionDate ??= issue.updated;
    }
    this.issues.set(issue.id, issue);
    return issue;
  }

  addComment(issue: Issue, authorId: string, body: unknown, at = this.now()): Comment {
    const comment: Comment = { id: this.newId(), authorId, body, created: at, updated: at };
    issue.comments.push(comment);
    issue.updated = at;
    return comment;
  }

  /** Moves an issue to a status, keeping resolution and history consistent. */
  setStatus(issue: Issue, statusId: string, authorId: string, resolutionId?: string): void {
    const from = this.status(issue.statusId);
    const to = this.status(statusId);
    const now = this.now();
    issue.statusId = statusId;
    issue.statusChanged = now;
    issue.updated = now;
    const done = to.category === 'done';
    issue.resolutionId = done ? (resolutionId ?? RESOLUTIONS[0].id) : null;
    issue.resolutionDate = done ? now : null;
    issue.history.push({ id: this.newId(), authorId, created: now, items: [{ field: 'status', fromString: from.name, toString: to.name }] });
  }

  deleteIssue(issue: Issue): void {
    for (const child of this.subtasks(issue)) this.issues.delete(child.id);
    for (const child of this.children(issue)) child.parentId = null;
    this.issues.delete(issue.id);
  }
}
