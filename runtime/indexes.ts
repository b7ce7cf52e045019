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
  // Settlement walks an owner's charged records in the order of the credit line; one record per range.
  { collection: 'calls', fields: ['owner_id', 'from'] },
  { collection: 'calls', fields: ['charge_key'], unique: true, sparse: true },
  { collection: 'credits', fields: ['unsettled'] },
  { collection: 'calls', fields: ['at'] },
  { collection: 'oauth_grants', fields: ['owner_id', 'server_id'] },
  { collection: 'oauth_access_tokens', fields: ['grant_id'] },
  { collection: 'oauth_access_tokens', fields: ['expires_at'] },
  { collection: 'oauth_refresh_tokens', fields: ['grant_id'] },
  { collection: 'oauth_refresh_tokens', fields: ['expires_at'] },
  { collection: 'oauth_codes', fields: ['expires_at'] },
];
