// Custom tools: a base tool of the catalog, exposed on one server under a name, bound to a stored
// account, with default parameters (optional for the caller, shown with their default) and locked
// parameters (hidden from the schema, impossible to override). A custom tool whose base tool is gone from the
// catalog (its spec deleted or renamed) is orphaned: kept, said so, left out of tools/list, refused when called;
// it works again when the spec comes back.
import type { ToolListing } from '../mcp/backend.ts';
import type { BaseTool, Catalog } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { TtlCache } from '../ttl-cache.ts';

export interface CustomToolDoc extends Doc {
  owner_id: string;
  server_id: string;
  name: string;
  base_tool: string;
  /** An account of the owner, CALLER_ACCOUNT (the calling end user's own), or null (a tool without one). */
  account_id: string | null;
  defaults: Record<string, unknown>;
  locked: string[];
  description: string | null;
  created_at: Date;
}

/** A custom tool ready for the hot path: the base spec plus what the server exposes. */
export interface CustomTool {
  doc: CustomToolDoc;
  base: BaseTool;
  listing: ToolListing;
}

/** The server's tools that can be called, and those whose base tool is gone. */
export interface ServerTools {
  tools: CustomTool[];
  orphans: CustomToolDoc[];
}

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** The `account_id` of a tool bound to the caller's own account of its provider (an end user's, found per call). */
export const CALLER_ACCOUNT = 'end_user';

/** Why an orphaned tool cannot be called, as the owner reads it (the API's `reason`, the server page). */
export function orphanReason(doc: Pick<CustomToolDoc, 'base_tool'>): string {
  return `Its tool spec “${doc.base_tool}” is gone from this service (deleted or renamed): restore it, or remove this tool.`;
}

/** A custom tool as the API shows it; `status` is `orphaned` (with the `reason`) when its base tool is gone. */
export function publicTool(doc: CustomToolDoc, catalog: Catalog): Record<string, unknown> {
  const orphaned = !catalog.tools.has(doc.base_tool);
  return {
    id: doc._id,
    server_id: doc.server_id,
    name: doc.name,
    base_tool: doc.base_tool,
    account_id: doc.account_id,
    defaults: doc.defaults,
    locked: doc.locked,
    description: doc.description,
    created_at: doc.created_at,
    status: orphaned ? 'orphaned' : 'ok',
    reason: orphaned ? orphanReason(doc) : null,
  };
}

/** The input schema a caller sees: defaults shown and optional, locked parameters gone. */
export function exposedInputSchema(base: BaseTool, defaults: Record<string, unknown>, locked: string[]): Record<string, unknown> {
  const schema = structuredClone(base.spec.input) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const properties = schema.properties ?? {};
  for (const [name, value] of Object.entries(defaults)) if (properties[name]) properties[name].default = value;
  for (const name of locked) delete properties[name];
  const gone = new Set([...Object.keys(defaults), ...locked]);
  if (schema.required) {
    schema.required = schema.required.filter((r) => !gone.has(r));
    if (schema.required.length === 0) delete schema.required;
  }
  return schema as Record<string, unknown>;
}

export class CustomTools {
  private readonly tools: Collection<CustomToolDoc>;
  private readonly cache: TtlCache<string, ServerTools>;

  constructor(
    store: Store,
    private readonly catalog: CatalogSource,
    cacheMs: number,
    /** The feed that tells every instance of a change (store/changes.ts), so lookups may live longer. */
    changes?: ChangeFeed,
  ) {
    this.tools = store.collection<CustomToolDoc>('tools');
    this.cache = new TtlCache(cacheMs, undefined, changes && { feed: changes, name: 'tools' });
    // Bound tools point at compiled specs: a reloaded catalog makes every cached list stale.
    catalog.onReload(() => this.cache.clear());
  }

  async create(
    doc: Pick<CustomToolDoc, 'owner_id' | 'server_id' | 'name' | 'base_tool' | 'account_id' | 'defaults' | 'locked' | 'description'>,
  ): Promise<CustomToolDoc> {
    const full: CustomToolDoc = Object.assign({}, doc, { _id: randomId('tool_'), created_at: new Date() });
    await this.cache.announce(doc.server_id);
    await this.tools.insertOne(full);
    this.cache.delete(doc.server_id);
    return full;
  }

  /** How many tools the owner has on all its servers (its quota counts them). */
  countForOwner(ownerId: string): Promise<number> {
    return this.tools.countDocuments({ owner_id: ownerId });
  }

  list(ownerId: string, serverId: string): Promise<CustomToolDoc[]> {
    return this.tools.find({ owner_id: ownerId, server_id: serverId }, { sort: { name: 1 } });
  }

  get(ownerId: string, serverId: string, id: string): Promise<CustomToolDoc | null> {
    return this.tools.findOne({ _id: id, owner_id: ownerId, server_id: serverId });
  }

  usingAccount(ownerId: string, accountId: string): Promise<CustomToolDoc[]> {
    return this.tools.find({ owner_id: ownerId, account_id: accountId });
  }

  async update(
    ownerId: string,
    serverId: string,
    id: string,
    changes: Partial<Pick<CustomToolDoc, 'name' | 'account_id' | 'defaults' | 'locked' | 'description'>>,
  ): Promise<CustomToolDoc | null> {
    await this.cache.announce(serverId);
    const doc = await this.tools.findOneAndUpdate({ _id: id, owner_id: ownerId, server_id: serverId }, { $set: changes });
    this.cache.delete(serverId);
    return doc;
  }

  async delete(ownerId: string, serverId: string, id: string): Promise<boolean> {
    await this.cache.announce(serverId);
    const n = await this.tools.deleteOne({ _id: id, owner_id: ownerId, server_id: serverId });
    this.cache.delete(serverId);
    return n > 0;
  }

  async deleteForServer(ownerId: string, serverId: string): Promise<void> {
    await this.cache.announce(serverId);
    await this.tools.deleteMany({ owner_id: ownerId, server_id: serverId });
    this.cache.delete(serverId);
  }

  /** Every owner's orphaned tools (the warning after each reload names them). */
  orphans(): Promise<CustomToolDoc[]> {
    return this.tools.find({ base_tool: { $nin: [...this.catalog.current.tools.keys()] } }, { sort: { server_id: 1, name: 1 } });
  }

  /** The server's tools as MCP exposes them, sorted by name, and its orphans (cached). */
  forServer(serverId: string): Promise<ServerTools> {
    return this.cache.fetch(serverId, () => this.read(serverId));
  }

  private async read(serverId: string): Promise<ServerTools> {
    const docs = await this.tools.find({ server_id: serverId }, { sort: { name: 1 } });
    const tools: CustomTool[] = [];
    const orphans: CustomToolDoc[] = [];
    for (const doc of docs) {
      const base = this.catalog.current.tools.get(doc.base_tool);
      if (!base) {
        orphans.push(doc);
        continue;
      }
      tools.push({
        doc,
        base,
        listing: {
          name: doc.name,
          title: base.spec.title,
          description: doc.description ?? base.spec.description,
          inputSchema: exposedInputSchema(base, doc.defaults, doc.locked),
          outputSchema: base.spec.output,
          annotations: base.spec.annotations,
          credits: base.spec.credits,
        },
      });
    }
    tools.sort((a, b) => (a.doc.name < b.doc.name ? -1 : a.doc.name > b.doc.name ? 1 : 0));
    return { tools, orphans };
  }
}
