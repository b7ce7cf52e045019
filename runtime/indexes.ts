// Every index the service's queries rely on (each find of a page or a call has one), declared once and built
// at start: only what is missing (see Store.ensureIndexes). What expires has a TTL index, which MongoDB uses
// to delete it; the hourly sweeps delete it too, and are all there is on the embedded store and FerretDB.
import type { IndexSpec } from './store/port.ts';

/** expires_at is the moment itself: deleted once it has passed. */
const AT_EXPIRY = 0;

export const STORE_INDEXES: IndexSpec[] = [
  { collection: 'owners', fields: ['email'], unique: true },
  { collection: 'owner_tokens', fields: ['hash'], unique: true },
  { collection: 'owner_tokens', fields: ['owner_id'] },
  { collection: 'owners', fields: ['invite_hash'], unique: true, sparse: true },
  { collection: 'sessions', fields: ['owner_id'] },
  { collection: 'sessions', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'servers', fields: ['owner_id'] },
  { collection: 'api_keys', fields: ['hash'], unique: true },
  { collection: 'api_keys', fields: ['owner_id'] },
  { collection: 'accounts', fields: ['owner_id'] },
  { collection: 'tools', fields: ['server_id', 'name'], unique: true },
  // The tools bound to an account (its deletion is refused while any is).
  { collection: 'tools', fields: ['account_id'] },
  // An owner's tools on all its servers (its quota counts them).
  { collection: 'tools', fields: ['owner_id'] },
  { collection: 'usage', fields: ['owner_id', 'hour'] },
  // An owner's records by time, and the call log (runtime/api/calls.ts): newest first, by server, key, tool or
  // outcome. Not on the embedded store: nedb uses a compound index only for an exact match of all its fields
  // (never ours, which ask for a time range), scans the records it keeps in memory (at most
  // LEDGER_MAX_RECORDS) instead, and would pay for each on every record written and deleted (measured: 45 ->
  // 145 µs per record with the four of the call log; the owner's one alone cost about 14 µs of a call's CPU).
  { collection: 'calls', fields: ['owner_id', 'at'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'server_id', 'at'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'key_id', 'at'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'tool', 'at'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'outcome', 'at'], embedded: false },
  // One record per range of an owner's credit line; settlement walks an owner's charged records in its order.
  { collection: 'calls', fields: ['charge_key'], unique: true, sparse: true },
  { collection: 'credits', fields: ['unsettled'] },
  { collection: 'calls', fields: ['at'] },
  { collection: 'oauth_grants', fields: ['owner_id', 'server_id'] },
  { collection: 'oauth_access_tokens', fields: ['grant_id'] },
  { collection: 'oauth_access_tokens', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'oauth_refresh_tokens', fields: ['grant_id'] },
  { collection: 'oauth_refresh_tokens', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'oauth_codes', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  // The audit trail: an owner's events and the operator's view, each by time and by action; retention by time.
  { collection: 'audit_events', fields: ['owner_id', 'at'] },
  { collection: 'audit_events', fields: ['owner_id', 'action', 'at'] },
  { collection: 'audit_events', fields: ['action', 'at'] },
  { collection: 'audit_events', fields: ['at'] },
  { collection: 'key_budgets', fields: ['resets_at'] },
  // E-mail: an owner's links (a new one replaces the older), the outbox's due messages and its week of history,
  // the networks a key was used from (any at all, and how many new today).
  { collection: 'email_links', fields: ['owner_id', 'purpose'] },
  { collection: 'email_links', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'mail_outbox', fields: ['state', 'next_at'] },
  { collection: 'mail_outbox', fields: ['done_at'] },
  { collection: 'key_networks', fields: ['key_id', 'first_at'] },
];
