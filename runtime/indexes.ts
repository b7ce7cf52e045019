// Every index the service's queries rely on, declared once and built at start (idempotent).
import type { IndexSpec } from './store/port.ts';

export const STORE_INDEXES: IndexSpec[] = [
  { collection: 'owners', fields: ['email'], unique: true },
  { collection: 'owner_tokens', fields: ['hash'], unique: true },
  { collection: 'owner_tokens', fields: ['owner_id'] },
  { collection: 'owners', fields: ['invite_hash'], unique: true, sparse: true },
  { collection: 'sessions', fields: ['owner_id'] },
  { collection: 'sessions', fields: ['expires_at'] },
  { collection: 'servers', fields: ['owner_id'] },
  { collection: 'api_keys', fields: ['hash'], unique: true },
  { collection: 'api_keys', fields: ['owner_id'] },
  { collection: 'accounts', fields: ['owner_id'] },
  { collection: 'tools', fields: ['server_id', 'name'], unique: true },
  { collection: 'usage', fields: ['owner_id', 'hour'] },
  { collection: 'calls', fields: ['owner_id', 'at'] },
  { collection: 'calls', fields: ['at'] },
  { collection: 'oauth_grants', fields: ['owner_id', 'server_id'] },
  { collection: 'oauth_access_tokens', fields: ['grant_id'] },
  { collection: 'oauth_access_tokens', fields: ['expires_at'] },
  { collection: 'oauth_refresh_tokens', fields: ['grant_id'] },
  { collection: 'oauth_refresh_tokens', fields: ['expires_at'] },
  { collection: 'oauth_codes', fields: ['expires_at'] },
  // The audit trail: an owner's events and the operator's view, each by time and by action; retention by time.
  { collection: 'audit_events', fields: ['owner_id', 'at'] },
  { collection: 'audit_events', fields: ['owner_id', 'action', 'at'] },
  { collection: 'audit_events', fields: ['action', 'at'] },
  { collection: 'audit_events', fields: ['at'] },
  { collection: 'key_budgets', fields: ['resets_at'] },
];
