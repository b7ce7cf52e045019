// Every index the service's queries rely on (each find of a page or a call has one), declared once and built
// at start: only what is missing (see Store.ensureIndexes); and those no query uses any more, dropped. What expires has a TTL index, which MongoDB uses
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
  // Aggregates past USAGE_RETENTION_DAYS, found once an hour (billing/rollup.ts).
  { collection: 'usage', fields: ['hour'] },
  // The call ledger's records. Lists of them are newest first on (at, _id), the cursor's order
  // (runtime/api/calls.ts): an index ending in (at, _id), walked backwards, gives a page without sorting, and a
  // cursor is a bound on it. MongoDB only: nedb uses a compound index only for an exact match of all its fields
  // (never ours), scans the records it keeps in memory (at most LEDGER_MAX_RECORDS) instead, and would pay for
  // each on every record written and deleted (measured: 45 -> 145 µs per record with four of them).
  //   An owner's records: the call log unfiltered, or filtered by server (an owner has few servers, each with a
  //   key at least: a server's calls are dense in the owner's log), its pages; the overview's latest calls; the
  //   records that usage and the ledger check read beyond the aggregates (a minute or two); retention by owner.
  { collection: 'calls', fields: ['owner_id', 'at', '_id'], embedded: false },
  //   The call log of one key, one tool, one outcome (failures are rare: without it a page of them would scan
  //   the owner's month); with $in on outcomes MongoDB merges the ranges in order (SORT_MERGE, no sort).
  { collection: 'calls', fields: ['owner_id', 'key_id', 'at', '_id'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'end_user_id', 'at', '_id'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'tool', 'at', '_id'], embedded: false },
  { collection: 'calls', fields: ['owner_id', 'outcome', 'at', '_id'], embedded: false },
  //   One record per range of an owner's credit line; settlement walks an owner's charged records in its order.
  { collection: 'calls', fields: ['charge_key'], unique: true, sparse: true },
  //   The roll-up's records in order of time, one partition's slots at a time, and retention's oldest ones
  //   (billing/rollup.ts). On the embedded store a scan of the records it holds serves them.
  { collection: 'calls', fields: ['slot', 'at'], embedded: false },
  //   The same on the embedded store: the records in order of time (a range of them walked in order, stopping at
  //   the batch's end, instead of a scan and a sort of every record it holds at each batch), also the call log's
  //   pages and retention's oldest. About 3 µs a record written (measured with npm run bench:profile). Dropped
  //   on MongoDB, where the roll-up of the version before slots had it.
  { collection: 'calls', fields: ['at'], mongodb: false },
  { collection: 'credits', fields: ['unsettled'] },
  { collection: 'oauth_grants', fields: ['owner_id', 'server_id'] },
  { collection: 'oauth_access_tokens', fields: ['grant_id'] },
  { collection: 'oauth_access_tokens', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'oauth_refresh_tokens', fields: ['grant_id'] },
  { collection: 'oauth_refresh_tokens', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'oauth_codes', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  // The audit trail, newest first on (at, _id) like the call log: an owner's events, by action (a family is an
  // $in of actions), and the operator's view of every owner's, by action or not; retention by time (a prefix of
  // the last). MongoDB only: on the embedded store these lists sort in memory, and a sweep scans.
  { collection: 'audit_events', fields: ['owner_id', 'at', '_id'], embedded: false },
  { collection: 'audit_events', fields: ['owner_id', 'action', 'at', '_id'], embedded: false },
  { collection: 'audit_events', fields: ['action', 'at', '_id'], embedded: false },
  { collection: 'audit_events', fields: ['at', '_id'], embedded: false },
  { collection: 'key_budgets', fields: ['resets_at'] },
  // E-mail: an owner's links (a new one replaces the older), the outbox's due messages and its week of history,
  // the networks a key was used from (any at all, and how many new today).
  { collection: 'email_links', fields: ['owner_id', 'purpose'] },
  { collection: 'email_links', fields: ['expires_at'], expireAfterSeconds: AT_EXPIRY },
  { collection: 'mail_outbox', fields: ['state', 'next_at'] },
  { collection: 'mail_outbox', fields: ['done_at'] },
  { collection: 'key_networks', fields: ['key_id', 'first_at'] },
];

/**
 * Indexes of earlier versions that no query uses any more: dropped where they exist, on both stores (each
 * index costs every write). The ledger's and the audit trail's without `_id` could not give a page in order.
 */
export const RETIRED_INDEXES: IndexSpec[] = [
  ...[
    ['owner_id', 'at'],
    ['owner_id', 'server_id', 'at'],
    ['owner_id', 'key_id', 'at'],
    ['owner_id', 'tool', 'at'],
    ['owner_id', 'outcome', 'at'],
  ].map((fields): IndexSpec => ({ collection: 'calls', fields, retired: true })),
  ...[['owner_id', 'at'], ['owner_id', 'action', 'at'], ['action', 'at'], ['at']].map((fields): IndexSpec => ({
    collection: 'audit_events',
    fields,
    retired: true,
  })),
];
