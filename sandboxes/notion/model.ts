// The simulated workspace: records, sharing rules and their 2025-09-03 response shapes.
import { notFound } from './errors.ts';
import { propertyValue, type PropSchema, serializeSchema } from './properties.ts';
import { plainText, type RichTextItem } from './richtext.ts';
import { isObject, minuteNow, notionUrl, userRef, type Json } from './util.ts';

export interface User {
  id: string;
  name: string;
  type: 'person' | 'bot';
  email?: string;
  /** A public integration's bot: the person who installed it (owner=user); else the workspace owns it. */
  ownerUserId?: string;
}

/** Where an object lives. Blocks and child pages hang under a page or a block. */
export type ParentRef = { kind: 'page'; id: string } | { kind: 'block'; id: string } | { kind: 'data_source'; id: string } | { kind: 'workspace' };

interface Stamped {
  id: string;
  createdTime: string;
  lastEditedTime: string;
  createdBy: string;
  lastEditedBy: string;
  inTrash: boolean;
}

export interface PageRecord extends Stamped {
  parent: ParentRef;
  /** Values keyed by property id ("title" for the title). */
  properties: Record<string, unknown>;
  icon: Json | null;
  cover: Json | null;
  isLocked: boolean;
  /** The integrations (their bot ids) it was explicitly shared with; descendants inherit. */
  sharedWith: Set<string>;
  children: string[];
  template?: { name: string; isDefault: boolean };
}

export interface BlockRecord extends Stamped {
  type: string;
  data: Json;
  parent: ParentRef;
  children: string[];
}

export interface DatabaseRecord extends Stamped {
  parent: ParentRef;
  title: RichTextItem[];
  description: RichTextItem[];
  isInline: boolean;
  isLocked: boolean;
  icon: Json | null;
  cover: Json | null;
  /** The integrations (their bot ids) it was explicitly shared with; descendants inherit. */
  sharedWith: Set<string>;
  dataSourceIds: string[];
}

export interface DataSourceRecord extends Stamped {
  databaseId: string;
  title: RichTextItem[];
  description: RichTextItem[];
  icon: Json | null;
  /** Schema in display order. */
  schema: PropSchema[];
  nextUniqueId: number;
}

interface Records {
  pages: Map<string, PageRecord>;
  blocks: Map<string, BlockRecord>;
  databases: Map<string, DatabaseRecord>;
  dataSources: Map<string, DataSourceRecord>;
  users: Map<string, User>;
}

/** The simulated workspace's name, as bots and OAuth answers give it. */
export const WORKSPACE_NAME = 'Simulated Workspace';

/** The workspace as one integration (its bot) sees it: every integration's view shares the same records. */
export class Workspace {
  readonly pages: Map<string, PageRecord>;
  readonly blocks: Map<string, BlockRecord>;
  readonly databases: Map<string, DatabaseRecord>;
  readonly dataSources: Map<string, DataSourceRecord>;
  readonly users: Map<string, User>;

  constructor(
    readonly botId: string,
    records: Records = { pages: new Map(), blocks: new Map(), databases: new Map(), dataSources: new Map(), users: new Map() },
  ) {
    ({ pages: this.pages, blocks: this.blocks, databases: this.databases, dataSources: this.dataSources, users: this.users } = records);
  }

  /** The same workspace as another integration's bot sees it. */
  as(botId: string): Workspace {
    return new Workspace(botId, this);
  }

  stamp(by = this.botId, time = minuteNow()): Stamped & { id: '' } {
    return { id: '', createdTime: time, lastEditedTime: time, createdBy: by, lastEditedBy: by, inTrash: false };
  }

  touch(record: Stamped): void {
    record.lastEditedTime = minuteNow();
    record.lastEditedBy = this.botId;
  }

  // --- sharing: an object is visible when it or an ancestor was shared with this view's integration

  /** The id of whatever holds this object (a data source is held by its database). */
  private holderOf(id: string): string | undefined {
    const ds = this.dataSources.get(id);
    if (ds) return ds.databaseId;
    const parent = (this.pages.get(id) ?? this.blocks.get(id) ?? this.databases.get(id))?.parent;
    return parent && parent.kind !== 'workspace' ? parent.id : undefined;
  }

  /** The object and its holders up to the workspace. */
  private *lineage(id: string): Generator<string> {
    for (let current: string | undefined = id, hops = 0; current && hops < 100; hops++, current = this.holderOf(current)) {
      yield current;
    }
  }

  isShared(id: string): boolean {
    for (const current of this.lineage(id)) {
      if ((this.pages.get(current) ?? this.databases.get(current))?.sharedWith.has(this.botId)) return true;
    }
    return false;
  }

  page(id: string): PageRecord {
    const page = this.pages.get(id);
    if (!page || !this.isShared(id)) throw notFound('page', id);
    return page;
  }

  database(id: string): DatabaseRecord {
    const db = this.databases.get(id);
    if (!db || !this.isShared(id)) throw notFound('database', id);
    return db;
  }

  dataSource(id: string): DataSourceRecord {
    const ds = this.dataSources.get(id);
    if (!ds || !this.isShared(id)) throw notFound('data_source', id);
    return ds;
  }

  /** A block id, or a page id used as a block id (both live in the block endpoints). */
  container(id: string): PageRecord | BlockRecord {
    const found = this.pages.get(id) ?? this.blocks.get(id);
    if (!found || !this.isShared(id)) throw notFound('block', id);
    return found;
  }

  /** True when the object or one of its ancestors is in the trash. */
  inTrash(id: string): boolean {
    for (const current of this.lineage(id)) {
      const rec = this.pages.get(current) ?? this.blocks.get(current) ?? this.databases.get(current) ?? this.dataSources.get(current);
      if (rec?.inTrash) return true;
    }
    return false;
  }

  pageTitle(page: PageRecord): string {
    const title = page.properties.title;
    return Array.isArray(title) ? plainText(title as RichTextItem[]) : '';
  }

  /** The data source a row or template belongs to, if any. */
  rowSource(page: PageRecord): DataSourceRecord | undefined {
    return page.parent.kind === 'data_source' ? this.dataSources.get(page.parent.id) : undefined;
  }

  // --- response shapes

  user(id: string): Json {
    const u = this.users.get(id);
    if (!u) return userRef(id);
    const base = { object: 'user', id: u.id, name: u.name, avatar_url: null, type: u.type };
    if (u.type === 'person') return { ...base, person: { email: u.email } };
    const owner = u.ownerUserId ? { type: 'user', user: { object: 'user', id: u.ownerUserId } } : { type: 'workspace', workspace: true };
    return { ...base, bot: { owner, workspace_name: WORKSPACE_NAME } };
  }

  private parentJson(parent: ParentRef): Json {
    switch (parent.kind) {
      case 'page':
        return { type: 'page_id', page_id: parent.id };
      case 'block':
        return { type: 'block_id', block_id: parent.id };
      case 'data_source':
        return { type: 'data_source_id', data_source_id: parent.id, database_id: this.dataSources.get(parent.id)?.databaseId };
      case 'workspace':
        return { type: 'workspace', workspace: true };
    }
  }

  private stampJson(r: Stamped): Json {
    return {
      created_time: r.createdTime,
      last_edited_time: r.lastEditedTime,
      created_by: userRef(r.createdBy),
      last_edited_by: userRef(r.lastEditedBy),
    };
  }

  /** `only`: property ids to keep (filter_properties). */
  pageJson(page: PageRecord, only?: Set<string>): Json {
    const source = this.rowSource(page);
    const properties: Json = {};
    if (source) {
      for (const prop of source.schema) {
        if (only && !only.has(prop.id)) continue;
        properties[prop.name] = propertyValue(prop, page, this);
      }
    } else if (!only || only.has('title')) {
      properties.title = { id: 'title', type: 'title', title: page.properties.title ?? [] };
    }
    return {
      object: 'page',
      id: page.id,
      ...this.stampJson(page),
      cover: page.cover,
      icon: page.icon,
      parent: this.parentJson(page.parent),
      archived: page.inTrash,
      in_trash: page.inTrash,
      is_locked: page.isLocked,
      properties,
      url: notionUrl(this.pageTitle(page), page.id),
      public_url: null,
    };
  }

  blockJson(id: string): Json {
    const page = this.pages.get(id);
    const db = this.databases.get(id);
    const block = this.blocks.get(id);
    const record = (page ?? db ?? block)!;
    let type: string;
    let data: Json;
    let children: string[] = [];
    let parent: ParentRef;
    if (page) {
      [type, data, children, parent] = ['child_page', { title: this.pageTitle(page) }, page.children, page.parent];
    } else if (db) {
      [type, data, parent] = ['child_database', { title: plainText(db.title) }, db.parent];
    } else {
      [type, data, children, parent] = [block!.type, block!.data, block!.children, block!.parent];
    }
    return {
      object: 'block',
      id,
      parent: this.parentJson(parent),
      ...this.stampJson(record),
      has_children: this.visibleChildren(children).length > 0,
      archived: record.inTrash,
      in_trash: record.inTrash,
      type,
      [type]: data,
    };
  }

  /** Children still shown in a page or block (trashed ones disappear). */
  visibleChildren(ids: readonly string[]): string[] {
    return ids.filter((id) => {
      const rec = this.pages.get(id) ?? this.blocks.get(id) ?? this.databases.get(id);
      return rec !== undefined && !rec.inTrash;
    });
  }

  databaseJson(db: DatabaseRecord): Json {
    return {
      object: 'database',
      id: db.id,
      title: db.title,
      description: db.description,
      parent: this.parentJson(db.parent),
      is_inline: db.isInline,
      in_trash: db.inTrash,
      archived: db.inTrash,
      is_locked: db.isLocked,
      ...this.stampJson(db),
      data_sources: db.dataSourceIds.map((id) => ({ id, name: plainText(this.dataSources.get(id)!.title) })),
      icon: db.icon,
      cover: db.cover,
      url: notionUrl('', db.id),
      public_url: null,
    };
  }

  dataSourceJson(ds: DataSourceRecord): Json {
    const db = this.databases.get(ds.databaseId)!;
    return {
      object: 'data_source',
      id: ds.id,
      title: ds.title,
      description: ds.description,
      parent: { type: 'database_id', database_id: ds.databaseId },
      database_parent: this.parentJson(db.parent),
      is_inline: db.isInline,
      in_trash: ds.inTrash,
      archived: ds.inTrash,
      ...this.stampJson(ds),
      properties: Object.fromEntries(ds.schema.map((p) => [p.name, serializeSchema(p)])),
      icon: ds.icon,
      cover: null,
      url: notionUrl('', ds.databaseId),
      public_url: null,
    };
  }

  /** Plain text and link of a mention inside rich text. */
  resolveMention = (mention: Json): { plain: string; href: string | null } => {
    if (isObject(mention.page) && typeof mention.page.id === 'string') {
      const page = this.pages.get(mention.page.id);
      return { plain: page ? this.pageTitle(page) || 'Untitled' : 'Untitled', href: notionUrl('', mention.page.id) };
    }
    if (isObject(mention.user) && typeof mention.user.id === 'string') {
      return { plain: `@${this.users.get(mention.user.id)?.name ?? 'Anonymous'}`, href: null };
    }
    if (isObject(mention.date) && typeof mention.date.start === 'string') {
      return { plain: String(mention.date.start), href: null };
    }
    return { plain: '', href: null };
  };
}
