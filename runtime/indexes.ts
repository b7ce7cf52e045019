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
  // Connected accounts (their keep-alive), and each owner's accounts that need them (every page's banner).
  { collection: 'accounts', fields: ['auth'] },
  { collection: 'accounts', fields: ['owner_id', 'state'] },
  // A connect flow's callback finds it by its state; expired flows go (their waiting tokens with them).
  { collection: 'connect_flows', fields: ['state_hash'] },
  { collection: 'connect_flows', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  // End users: one per external id of an owner; their accounts and keys; their connect links and browser sessions.
  { collection: 'end_users', fields: ['owner_id', 'external_id'], unique: true },
  { collection: 'accounts', fields: ['owner_id', 'end_user_id', 'kind'] },
  { collection: 'api_keys', fields: ['owner_id', 'end_user_id'] },
  { collection: 'connect_sessions', fields: ['token_hash'], unique: true },
  { collection: 'connect_sessions', fields: ['owner_id', 'end_user_id'] },
  { collection: 'connect_sessions', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'end_user_sessions', fields: ['owner_id', 'end_user_id'] },
  { collection: 'end_user_sessions', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'spent_request_states', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'webhook_deliveries', fields: ['next_at'] },
  { collection: 'webhook_deliveries', fields: ['owner_id', 'created_at'] },
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
  { collection: 'calls', fields: ['owner_id', 'end_user_id', 'at'], embedded: false },
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
];
