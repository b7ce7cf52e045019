// Issue endpoints: create, get, edit, delete, transitions, comments.
import { adfProblem } from './adf-check.ts';
import { ADF_REQUIRED, FieldEditor } from './fields.ts';
import {
  ISSUE_NOT_FOUND,
  INVALID_PAYLOAD,
  NOT_AUTHENTICATED,
  errors,
  jsonObject,
  listParam,
  type Handler,
  type JiraRequest,
  type Reply,
  type Services,
} from './http.ts';
import type { Issue } from './model.ts';
import { availableTransitions, selectFields } from './render.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const badPayload: Reply = { status: 400, json: errors([INVALID_PAYLOAD]) };

function visibleIssue(req: JiraRequest, s: Services, ref: string): Issue | undefined {
  return s.store.findIssue(req.callerId, decodeURIComponent(ref));
}

function renderIssue(req: JiraRequest, s: Services, issue: Issue): Reply {
  const { fields } = selectFields(req.query.getAll('fields'), true);
  return { status: 200, json: s.render.issue(issue, fields, new Set(listParam(req.query, 'expand'))) };
}

export const createIssue: Handler = (req, _params, s) => {
  // Anonymous callers have no Create permission anywhere.
  if (!req.callerId) return { status: 401, json: NOT_AUTHENTICATED };
  const body = jsonObject(req.body);
  if (!body) return badPayload;
  const fields = isObject(body.fields) ? body.fields : {};
  const projectRef = isObject(fields.project) ? fields.project : {};
  const projectKey = typeof projectRef.key === 'string' ? projectRef.key : typeof projectRef.id === 'string' ? projectRef.id : '';
  const project = projectKey ? s.store.findProject(req.callerId, projectKey) : undefined;
  if (!project) return { status: 400, json: errors([], { project: 'Specify a valid project ID or key' }) };
  if (fields.issuetype === undefined) return { status: 400, json: errors([], { issuetype: 'Specify an issue type' }) };
  const typeRef = isObject(fields.issuetype) ? fields.issuetype : {};
  const issueType = project.issueTypeIds
    .map((id) => s.store.issueType(id))
    .find((t) => t.id === typeRef.id || (typeof typeRef.name === 'string' && t.name.toLowerCase() === typeRef.name.toLowerCase()));
  if (!issueType) return { status: 400, json: errors([], { issuetype: 'Specify a valid issue type' }) };

  const editor = new FieldEditor(s.store, project, issueType, FieldEditor.createScreen(project));
  editor.read(fields, body.update, ['project', 'issuetype']);
  editor.checkCreate(fields);
  if (!editor.ok) return { status: 400, json: editor.body() };
  const issue = s.store.addIssue(project, {
    summary: editor.changes.summary!,
    issueTypeId: issueType.id,
    creatorId: req.callerId,
    ...editor.changes,
    reporterId: editor.changes.reporterId ?? req.callerId,
  });
  for (const comment of editor.comments) s.store.addComment(issue, req.callerId, comment, issue.created);
  return { status: 201, json: { id: issue.id, key: issue.key, self: s.render.api(`/issue/${issue.id}`) } };
};

export const getIssue: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  return issue ? renderIssue(req, s, issue) : ISSUE_NOT_FOUND;
};

export const editIssue: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  const body = jsonObject(req.body);
  if (!body) return badPayload;
  const project = s.store.project(issue.projectId);
  const editor = new FieldEditor(s.store, project, s.store.issueType(issue.issueTypeId), FieldEditor.editScreen(project), issue);
  // A `transition` in the body is ignored here: status changes only go through /transitions.
  editor.read(body.fields, body.update);
  if (!editor.ok) return { status: 400, json: editor.body() };
  editor.apply(issue, req.callerId!);
  return req.query.get('returnIssue') === 'true' ? renderIssue(req, s, issue) : { status: 204 };
};

export const deleteIssue: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  if (s.store.subtasks(issue).length > 0 && req.query.get('deleteSubtasks') !== 'true') {
    return {
      status: 400,
      json: errors([`The issue '${issue.key}' has subtasks.  You must specify the 'deleteSubtasks' parameter to delete this issue and all its subtasks.`]),
    };
  }
  s.store.deleteIssue(issue);
  return { status: 204 };
};

export const getTransitions: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  const withFields = listParam(req.query, 'expand').includes('transitions.fields');
  const only = req.query.get('transitionId');
  const transitions = availableTransitions(s.store, issue).filter((t) => !only || t.id === only);
  return { status: 200, json: { expand: 'transitions', transitions: transitions.map((t) => s.render.transition(t, withFields)) } };
};

export const doTransition: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  const body = jsonObject(req.body);
  if (!body) return badPayload;
  const id = isObject(body.transition) ? body.transition.id : undefined;
  if (id === undefined || id === null) return { status: 400, json: errors(["Missing 'transition' identifier"]) };
  if (!/^\d+$/.test(String(id))) return { status: 400, json: errors(["'transition' identifier must be an integer"]) };
  const transition = availableTransitions(s.store, issue).find((t) => t.id === String(id));
  if (!transition) return { status: 400, json: errors([`Transition id '${String(id)}' is not valid for this issue.`]) };

  const project = s.store.project(issue.projectId);
  const screen = new Set(transition.screen?.fields ?? []);
  const editor = new FieldEditor(s.store, project, s.store.issueType(issue.issueTypeId), screen, issue);
  editor.read(body.fields, body.update);
  const given = isObject(body.fields) ? body.fields : {};
  for (const f of transition.screen?.required ?? []) {
    if (given[f] === undefined && !editor.errors[f]) editor.errors[f] = `${f[0].toUpperCase()}${f.slice(1)} is required.`;
  }
  if (!editor.ok) return { status: 400, json: editor.body() };
  editor.apply(issue, req.callerId!);
  s.store.setStatus(issue, transition.to, req.callerId!, editor.resolutionId);
  return { status: 204 };
};

export const addComment: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  const body = jsonObject(req.body);
  if (!body) return badPayload;
  if (body.body === undefined || body.body === null || body.body === '') {
    return { status: 400, json: errors([], { comment: 'Comment body can not be empty!' }) };
  }
  if (!isObject(body.body) || body.body.type !== 'doc') return { status: 400, json: errors([], { comment: ADF_REQUIRED }) };
  if (adfProblem(body.body)) return { status: 400, json: errors(['INVALID_INPUT']) };
  const comment = s.store.addComment(issue, req.callerId!, body.body);
  const json = s.render.comment(issue, comment);
  if (isObject(body.visibility)) json.visibility = body.visibility;
  return { status: 201, json };
};

export const listComments: Handler = (req, [ref], s) => {
  const issue = visibleIssue(req, s, ref);
  if (!issue) return ISSUE_NOT_FOUND;
  const comments = issue.comments.map((c) => s.render.comment(issue, c));
  return { status: 200, json: { startAt: 0, maxResults: comments.length, total: comments.length, comments } };
};
