// Validation and application of issue fields for create, edit and transition screens, with Jira's messages.
import { adfProblem } from './adf-check.ts';
import { PRIORITIES, RESOLUTIONS, type Issue, type IssueType, type JiraStore, type Project } from './model.ts';

export const ADF_REQUIRED = 'Operation value must be an Atlassian Document (see the Atlassian Document Format)';
export const notOnScreen = (field: string) => `Field '${field}' cannot be set. It is not on the appropriate screen, or unknown.`;

export interface ErrorCollection {
  errorMessages: string[];
  errors: Record<string, string>;
}

type Ref = { id?: unknown; key?: unknown; name?: unknown; accountId?: unknown };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const ci = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Fields that are always on the screen of their kind. */
const ALWAYS_ON_CREATE = ['project', 'issuetype', 'summary'];
const ALWAYS_ON_EDIT = ['summary', 'issuetype', 'comment'];

/**
 * Collects validated changes for one issue. Errors accumulate like Jira's ErrorCollection;
 * nothing is written until `apply` is called on a request without errors.
 */
export class FieldEditor {
  readonly errors: Record<string, string> = {};
  readonly errorMessages: string[] = [];
  readonly changes: Partial<Issue> = {};
  readonly comments: unknown[] = [];
  resolutionId: string | undefined;
  private labels: string[];
  private componentIds: string[];
  private fixVersionIds: string[];

  constructor(
    private readonly store: JiraStore,
    private readonly project: Project,
    private issueType: IssueType,
    /** Fields the screen allows (create, edit or transition screen). */
    private readonly screen: Set<string>,
    private readonly current?: Issue,
  ) {
    this.labels = [...(current?.labels ?? [])];
    this.componentIds = [...(current?.componentIds ?? [])];
    this.fixVersionIds = [...(current?.fixVersionIds ?? [])];
  }

  static createScreen(project: Project): Set<string> {
    return new Set([...ALWAYS_ON_CREATE, ...project.screenFields]);
  }

  static editScreen(project: Project): Set<string> {
    return new Set([...ALWAYS_ON_EDIT, ...project.screenFields]);
  }

  get ok(): boolean {
    return this.errorMessages.length === 0 && Object.keys(this.errors).length === 0;
  }

  body(): ErrorCollection {
    return { errorMessages: this.errorMessages, errors: this.errors };
  }

  private fail(field: string, message: string): void {
    this.errors[field] ??= message;
  }

  /** Applies `fields` and `update` of a request body (a field may appear in only one of them). */
  read(fields: unknown, update: unknown, skip: string[] = []): void {
    const f = isObject(fields) ? fields : {};
    const u = isObject(update) ? update : {};
    for (const name of Object.keys(f)) {
      if (skip.includes(name)) continue;
      if (name in u) this.fail(name, `Field '${name}' cannot be set in both 'fields' and 'update'.`);
      else this.set(name, f[name]);
    }
    for (const [name, ops] of Object.entries(u)) {
      if (!Array.isArray(ops)) {
        this.fail(name, `Operation value for '${name}' must be an array of operations.`);
        continue;
      }
      for (const op of ops) this.operate(name, op);
    }
  }

  private operate(field: string, op: unknown): void {
    const [verb, value] = isObject(op) ? (Object.entries(op)[0] ?? []) : [];
    if (verb === 'set') return this.set(field, value);
    if (!this.screen.has(field)) return this.fail(field, notOnScreen(field));
    if (field === 'comment' && verb === 'add') {
      const body = isObject(value) ? value.body : undefined;
      if (!isObject(body) || body.type !== 'doc') return this.fail('comment', ADF_REQUIRED);
      if (adfProblem(body)) return this.invalidAdf();
      this.comments.push(body);
      return;
    }
    if ((verb === 'add' || verb === 'remove') && ['labels', 'components', 'fixVersions'].includes(field)) {
      if (field === 'labels') {
        if (typeof value !== 'string' || !this.validLabel(value)) return;
        this.labels = verb === 'add' ? [...new Set([...this.labels, value])] : this.labels.filter((l) => l !== value);
        this.changes.labels = this.labels;
        return;
      }
      const ids = field === 'components' ? this.componentRefs([value]) : this.versionRefs([value]);
      if (!ids) return;
      const list = field === 'components' ? this.componentIds : this.fixVersionIds;
      const next = verb === 'add' ? [...new Set([...list, ...ids])] : list.filter((id) => !ids.includes(id));
      if (field === 'components') this.changes.componentIds = this.componentIds = next;
      else this.changes.fixVersionIds = this.fixVersionIds = next;
      return;
    }
    this.fail(field, `Field '${field}' does not support the operation '${String(verb)}'.`);
  }

  /** Sets one field from its request value. */
  set(field: string, value: unknown): void {
    if (!this.screen.has(field) || field === 'comment') return this.fail(field, notOnScreen(field));
    switch (field) {
      case 'project':
        return; // resolved by the caller before the editor exists
      case 'issuetype': {
        if (!this.current) return; // resolved by the caller on create
        const ref = isObject(value) ? (value as Ref) : {};
        const type = this.project.issueTypeIds
          .map((id) => this.store.issueType(id))
          .find((t) => t.id === ref.id || (typeof ref.name === 'string' && ci(t.name, ref.name)));
        if (!type || type.subtask !== this.issueType.subtask) return this.fail('issuetype', 'Specify a valid issue type');
        this.changes.issueTypeId = type.id;
        this.issueType = type;
        return;
      }
      case 'summary':
        if (typeof value !== 'string' || !value.trim()) return this.fail('summary', 'You must specify a summary of the issue.');
        if (value.length > 255) return this.fail('summary', 'Summary must be less than 255 characters.');
        this.changes.summary = value;
        return;
      case 'description':
      case 'environment':
        if (value !== null && !(isObject(value) && value.type === 'doc')) return this.fail(field, ADF_REQUIRED);
        if (value !== null && adfProblem(value)) return this.invalidAdf();
        this.changes[field] = value;
        return;
      case 'assignee':
      case 'reporter':
        return this.setUser(field, value);
      case 'priority': {
        const ref = isObject(value) ? (value as Ref) : {};
        const p = PRIORITIES.find((x) => x.id === ref.id || (typeof ref.name === 'string' && ci(x.name, ref.name)));
        if (!p) return this.fail('priority', 'Specify a valid value for priority');
        this.changes.priorityId = p.id;
        return;
      }
      case 'labels':
        if (!Array.isArray(value)) return this.fail('labels', 'Operation value must be an array of strings.');
        if (value.every((l) => typeof l === 'string' && this.validLabel(l))) this.changes.labels = this.labels = [...new Set(value as string[])];
        return;
      case 'components':
      case 'fixVersions': {
        if (!Array.isArray(value)) return this.fail(field, 'Operation value must be an array.');
        const ids = field === 'components' ? this.componentRefs(value) : this.versionRefs(value);
        if (!ids) return;
        if (field === 'components') this.changes.componentIds = this.componentIds = ids;
        else this.changes.fixVersionIds = this.fixVersionIds = ids;
        return;
      }
      case 'parent':
        return this.setParent(value);
      case 'duedate':
        if (value === null) this.changes.duedate = null;
        else if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value))) this.changes.duedate = value;
        else this.fail('duedate', `Error parsing date string: ${String(value)}`);
        return;
      case 'resolution': {
        const ref = isObject(value) ? (value as Ref) : {};
        const r = RESOLUTIONS.find((x) => x.id === ref.id || (typeof ref.name === 'string' && ci(x.name, ref.name)));
        if (!r) return this.fail('resolution', 'Specify a valid value for resolution');
        this.resolutionId = r.id;
        return;
      }
      default:
        return this.fail(field, notOnScreen(field));
    }
  }

  /** Jira rejects structurally invalid ADF with a bare INVALID_INPUT (wording not confirmed from a primary source). */
  private invalidAdf(): void {
    if (!this.errorMessages.includes('INVALID_INPUT')) this.errorMessages.push('INVALID_INPUT');
  }

  private validLabel(label: string): boolean {
    if (/\s/.test(label) || label === '') {
      this.fail('labels', `The label '${label}' contains spaces which is invalid.`);
      return false;
    }
    if (label.length > 255) {
      this.fail('labels', 'The label must not exceed 255 characters.');
      return false;
    }
    return true;
  }

  /** Users are given only by accountId (or `id`); `name`, `key` and e-mails are GDPR-removed. */
  private setUser(field: 'assignee' | 'reporter', value: unknown): void {
    if (value === null) {
      if (field === 'assignee') this.changes.assigneeId = null;
      else this.fail('reporter', 'Reporter is required.');
      return;
    }
    const ref = isObject(value) ? (value as Ref) : {};
    const accountId = typeof ref.accountId === 'string' ? ref.accountId : typeof ref.id === 'string' ? ref.id : undefined;
    const user = this.store.user(accountId);
    if (!user) return this.fail(field, `Specify a valid value for ${field}`);
    if (field === 'assignee' && !user.active) return this.fail(field, `User '${user.accountId}' cannot be assigned issues.`);
    if (field === 'assignee') this.changes.assigneeId = user.accountId;
    else this.changes.reporterId = user.accountId;
  }

  private componentRefs(values: unknown[]): string[] | undefined {
    const ids: string[] = [];
    for (const v of values) {
      const ref = isObject(v) ? (v as Ref) : {};
      const byId = typeof ref.id === 'string' ? this.project.components.find((c) => c.id === ref.id) : undefined;
      const byName = typeof ref.name === 'string' ? this.project.components.find((c) => c.name === ref.name) : undefined;
      const found = byId ?? byName;
      if (!found) {
        this.fail(
          'components',
          ref.id !== undefined ? `Component with id '${String(ref.id)}' does not exist.` : `Component name '${String(ref.name)}' is not valid`,
        );
        return undefined;
      }
      ids.push(found.id);
    }
    return ids;
  }

  private versionRefs(values: unknown[]): string[] | undefined {
    const ids: string[] = [];
    for (const v of values) {
      const ref = isObject(v) ? (v as Ref) : {};
      const byId = typeof ref.id === 'string' ? this.project.versions.find((x) => x.id === ref.id) : undefined;
      const byName = typeof ref.name === 'string' ? this.project.versions.find((x) => x.name === ref.name) : undefined;
      const found = byId ?? byName;
      if (!found) {
        this.fail('fixVersions', ref.id !== undefined ? `Version id '${String(ref.id)}' is not valid` : `Version name '${String(ref.name)}' is not valid`);
        return undefined;
      }
      ids.push(found.id);
    }
    return ids;
  }

  /** Sub-tasks hang under a standard issue of the same project; standard issues under an epic. */
  private setParent(value: unknown): void {
    const ref = isObject(value) ? (value as Ref & { none?: unknown }) : {};
    if (ref.none === true || value === null) {
      if (this.issueType.subtask) return this.fail('parent', 'A sub-task must have a parent.');
      this.changes.parentId = null;
      return;
    }
    const key = typeof ref.key === 'string' ? ref.key : typeof ref.id === 'string' ? ref.id : undefined;
    const parent = key ? this.findAnyIssue(key) : undefined;
    if (!parent) return this.fail('parent', 'Could not find issue by id or key.');
    const level = this.store.issueType(parent.issueTypeId).hierarchyLevel;
    const wanted = this.issueType.hierarchyLevel + 1;
    if (level !== wanted || parent.projectId !== this.project.id || parent.id === this.current?.id) {
      return this.fail('parent', 'Given parent work item does not belong to appropriate hierarchy.');
    }
    this.changes.parentId = parent.id;
  }

  private findAnyIssue(ref: string): Issue | undefined {
    return this.store.issues.get(ref) ?? [...this.store.issues.values()].find((i) => ci(i.key, ref));
  }

  /** Checks what a new issue needs: parent for sub-tasks and the project's required fields. */
  checkCreate(fields: Record<string, unknown>): void {
    if (!('summary' in fields)) this.fail('summary', 'You must specify a summary of the issue.');
    if (this.issueType.subtask && this.changes.parentId == null && !this.errors.parent) {
      this.fail('parent', 'Issue type is a sub-task but parent issue key or id not specified.');
    }
    for (const f of this.project.requiredFields) {
      if (fields[f] === undefined || fields[f] === null) this.errorMessages.push(`Field '${f}' is required`);
    }
  }

  /** Writes the changes to an issue and records them in its changelog. */
  apply(issue: Issue, authorId: string): void {
    const now = this.store.now();
    const items = Object.entries(this.changes)
      .filter(([k, v]) => JSON.stringify(issue[k as keyof Issue]) !== JSON.stringify(v))
      .map(([k, v]) => ({ field: k, fromString: describe(issue[k as keyof Issue]), toString: describe(v) }));
    Object.assign(issue, this.changes);
    for (const body of this.comments) this.store.addComment(issue, authorId, body, now);
    if (items.length) issue.history.push({ id: this.store.newId(), authorId, created: now, items });
    issue.updated = now;
  }
}

function describe(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.join(' ');
  return JSON.stringify(v);
}
