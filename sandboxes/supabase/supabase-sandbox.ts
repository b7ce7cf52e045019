// Supabase's OAuth apps for the Management API (/work/shared/connections.md §3), on one host (api.supabase.com):
// GET /v1/oauth/authorize (PKCE S256, organization_slug optional, redirect_uri + state at most 4 kB) renders
// the consent page where the user picks an organization; POST /v1/oauth/token takes a form body and HTTP Basic
// (PKCE verified, 201 answers, rotation on refresh); GET /v1/projects and /v1/projects/{ref}/api-keys with the
// bearer. Every project has a real Data API (a PostgREST sandbox) that accepts the keys api-keys lists, at
// `${dataApiUrl}/${ref}` (one listener for all projects, routed by ref: the stand-in for https://<ref>.supabase.co).
import type { ListenOptions, RecordedRequest, SocketAddress } from '../harness.ts';
import type { SandboxClock } from '../oauth/clock.ts';
import type { OAuthClient, OAuthControls } from '../oauth/oauth.ts';
import type { ProjectKeys } from '../postgrest/auth.ts';
import type { SharedDatabase } from '../postgrest/postgrest-sandbox.ts';

export interface SupabaseProjectOptions {
  name: string;
  /** 20 lowercase letters (random by default). */
  ref?: string;
  region?: string;
}

export interface SupabaseOrganizationOptions {
  name: string;
  /** 20 lowercase letters (random by default). */
  slug?: string;
  projects: SupabaseProjectOptions[];
}

export interface SupabaseSandboxOptions extends ListenOptions {
  /** The OAuth apps registered at Supabase. */
  clients: OAuthClient[];
  /** The signed-in user's organizations and their projects; default `DEFAULT_ORGANIZATIONS`. */
  organizations?: SupabaseOrganizationOptions[];
  clock?: SandboxClock;
  /** Keep the projects' tables in this shared database (else one of the sandbox's own). */
  database?: SharedDatabase;
  /** Where the projects' Data API listens (unix socket); a loopback port by default. */
  dataSocket?: SocketAddress;
  /** How long an access token works (unverified at Supabase; default in sandboxes/oauth/unverified.ts). */
  accessTokenTtlMs?: number;
}

export interface SupabaseProject {
  ref: string;
  name: string;
  organizationSlug: string;
  /** The Data API base URL (`${dataApiUrl}/${ref}`): what a pasted account's `url` holds. */
  url: string;
  keys: ProjectKeys;
  /** Runs SQL as the database owner (bypasses RLS). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
}

export interface SupabaseSandbox extends OAuthControls {
  /** Stands for https://api.supabase.com. */
  url: string;
  /** Where every project's Data API is, under /<ref>. */
  dataApiUrl: string;
  organizations: Array<{ slug: string; name: string }>;
  projects: SupabaseProject[];
  /** Requests to the Management API host (the Data API's are not recorded here). */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** An organization with one project, and one with none (picking it at consent is "a Supabase account with no project"). */
export const DEFAULT_ORGANIZATIONS: readonly SupabaseOrganizationOptions[] = [
  { name: 'Acme', projects: [{ name: 'todo-app', region: 'eu-central-1' }] },
  { name: 'Side projects', projects: [] },
];

export async function startSupabaseSandbox(options: SupabaseSandboxOptions): Promise<SupabaseSandbox> {
  void options;
  throw new Error('startSupabaseSandbox: being built on branch oauth-sandboxes');
}
