// Shapes of n8n's workflow objects (docs/provider-coverage.md) and the helpers that build them.
import { createHash } from 'node:crypto';

export interface N8nNode {
  id: string;
  name: string;
  type: string;
  typeVersion: number;
  position: [number, number];
  parameters: Record<string, unknown>;
  webhookId?: string;
  credentials?: Record<string, { id: string; name: string }>;
  disabled?: boolean;
  notes?: string;
  notesInFlow?: boolean;
  retryOnFail?: boolean;
  maxTries?: number;
}

export type N8nConnections = Record<string, { main: Array<Array<{ node: string; type: 'main'; index: number }>> }>;

export interface N8nTag {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface N8nProject {
  id: string;
  name: string;
  type: 'personal' | 'team';
}

export interface N8nShare {
  role: 'workflow:owner' | 'workflow:editor';
  workflowId: string;
  projectId: string;
  createdAt: string;
  updatedAt: string;
  project: N8nProject;
}

export interface N8nActiveVersion {
  versionId: string;
  workflowId: string;
  nodes: N8nNode[];
  connections: N8nConnections;
  authors: string;
  createdAt: string;
  updatedAt: string;
}

/** A workflow exactly as the public API returns it. */
export interface N8nWorkflow {
  id: string;
  name: string;
  description?: string;
  /** Read-only: true while a version is published (activeVersionId set). */
  active: boolean;
  isArchived: boolean;
  versionId: string;
  activeVersionId: string | null;
  triggerCount: number;
  createdAt: string;
  updatedAt: string;
  nodes: N8nNode[];
  connections: N8nConnections;
  settings: Record<string, unknown>;
  staticData: Record<string, unknown> | null;
  pinData?: Record<string, Array<{ json: Record<string, unknown> }>> | null;
  meta: Record<string, unknown> | null;
  tags: N8nTag[];
  shared: N8nShare[];
  activeVersion: N8nActiveVersion | null;
}

export const NODE_TYPES = {
  webhook: 'n8n-nodes-base.webhook',
  respond: 'n8n-nodes-base.respondToWebhook',
  wait: 'n8n-nodes-base.wait',
  stopAndError: 'n8n-nodes-base.stopAndError',
  set: 'n8n-nodes-base.set',
  schedule: 'n8n-nodes-base.scheduleTrigger',
  httpRequest: 'n8n-nodes-base.httpRequest',
} as const;

const TRIGGER_TYPES = new Set<string>([NODE_TYPES.webhook, NODE_TYPES.schedule]);

/** A stable UUID derived from a seed string, so seeded objects look the same on every run. */
export function uuidFrom(seed: string): string {
  const h = createHash('sha1').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A 16-character alphanumeric id like n8n's nanoids. */
export function nanoIdFrom(seed: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  const bytes = createHash('sha256').update(seed).digest();
  return Array.from(bytes.subarray(0, 16), (b) => alphabet[b % alphabet.length]).join('');
}

/** Connects the named nodes one after another on their first output. */
export function chain(...names: string[]): N8nConnections {
  const connections: N8nConnections = {};
  for (let i = 0; i < names.length - 1; i++) {
    connections[names[i]] = { main: [[{ node: names[i + 1], type: 'main', index: 0 }]] };
  }
  return connections;
}

export function countTriggers(nodes: N8nNode[]): number {
  return nodes.filter((n) => TRIGGER_TYPES.has(n.type) && !n.disabled).length;
}

/** Publishes the current version (n8n 2.x "activate") or unpublishes it; `active` follows activeVersionId. */
export function setPublished(workflow: N8nWorkflow, published: boolean, now: string): void {
  workflow.activeVersionId = published ? workflow.versionId : null;
  workflow.activeVersion = published
    ? {
        versionId: workflow.versionId,
        workflowId: workflow.id,
        nodes: structuredClone(workflow.nodes),
        connections: structuredClone(workflow.connections),
        authors: '1',
        createdAt: now,
        updatedAt: now,
      }
    : null;
  workflow.active = published;
  workflow.triggerCount = published ? countTriggers(workflow.nodes) : 0;
  workflow.updatedAt = now;
}

/** decodeURIComponent that keeps malformed escapes as they are. */
export function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
