// Custom tools: a base tool of the catalog, exposed on one server under a name, bound to a stored
// account, with default parameters (optional for the caller, shown with their default) and locked
// parameters (hidden from the schema, impossible to override).
import type { ToolListing } from '../mcp/backend.ts';
import type { BaseTool } from '../toolspec/catalog.ts';
import type { CatalogSource } from '../toolspec/live.ts';
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import { TtlCache } from '../ttl-cache.ts';

export interface CustomToolDoc extends Doc {
  owner_id: string;
  server_id: string;
  name: string;
  base_tool: string;
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

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

export function publicTool(doc: CustomToolDoc): Record<string, unknown> {
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
  private readonly cache: TtlCache<string, CustomTool[]>;

  constructor(
    store: Store,
    private readonly catalog: CatalogSource,
    cacheMs: number,
  ) {
    this.tools = store.collection<CustomToolDoc>('tools');
    this.cache = new TtlCache(cacheMs);
    // Bound tools point at compiled specs: a reloaded catalog makes every cached list stale.
    catalog.onChange(() => this.cache.clear());
  }

  async create(
    doc: Pick<CustomToolDoc, 'owner_id' | 'server_id' | 'name' | 'base_tool' | 'account_id' | 'defaults' | 'locked' | 'description'>,
  ): Promise<CustomToolDoc> {
    const full: CustomToolDoc = { ...doc, _id: randomId('tool_'), created_at: new Date() };
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
    const doc = await this.tools.findOneAndUpdate({ _id: id, owner_id: ownerId, server_id: serverId }, { $set: changes });
    this.cache.delete(serverId);
    return doc;
  }

  async delete(ownerId: string, serverId: string, id: string): Promise<boolean> {
    const n = await this.tools.deleteOne({ _id: id, owner_id: ownerId, server_id: serverId });
    this.cache.delete(serverId);
    return n > 0;
  }

  async deleteForServer(ownerId: string, serverId: string): Promise<void> {
    await this.tools.deleteMany({ owner_id: ownerId, server_id: serverId });
    this.cache.delete(serverId);
  }

  /** The server's tools as MCP exposes them, sorted by name (cached). */
  async forServer(serverId: string): Promise<CustomTool[]> {
    const cached = this.cache.get(serverId);
    if (cached) return cached;
    const docs = await this.tools.find({ server_id: serverId }, { sort: { name: 1 } });
    const tools: CustomTool[] = [];
    for (const doc of docs) {
      const base = this.catalog.current.tools.get(doc.base_tool);
      if (!base) continue; // its spec was removed: the tool disappears rather than failing every call
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
    this.cache.set(serverId, tools);
    return tools;
  }
}
