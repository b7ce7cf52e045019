// The 2025-09-03 endpoints: each handler validates like Notion and answers in its shapes.
import { copyBlocks, insertBlocks, parseChildren, requireChildrenAllowed } from './blocks.ts';
import { archivedEdit, fixOne, invalidField, NotionError, validation } from './errors.ts';
import type { DatabaseRecord, DataSourceRecord, PageRecord, ParentRef, Workspace } from './model.ts';
import { defaultValues, parsePatchedSchema, parseSchema, parseValues, propertyValue, referenceItems } from './properties.ts';
import { compileFilter, compileSorts, selectProperties } from './query.ts';
import { parseRichText, plainText, type RichTextItem } from './richtext.ts';
import { isObject, newId, normalizeId, rejectUnknownKeys, requireId, type Json } from './util.ts';

export interface Request {
  method: string;
  /** Path segments after /v1. */
  segments: string[];
  query: URLSearchParams;
  body: Json;
}

export interface ApiOptions {
  /** Public (OAuth) integrations may create pages and databases at the workspace level. */
  isPublicIntegration: boolean;
  /** Delay before a template's content shows up on a page created from it. */
  templateDelayMs: number;
}

type Scope = 'body' | 'query';

function pageSize(raw: unknown, scope: Scope, fallback = 100): number {
  if (raw === undefined || raw === null) return fallback;
  const n = scope === 'query' ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw invalidField(`${scope}.page_size`, 'a number', raw);
  if (n < 1) throw invalidField(`${scope}.page_size`, '≥ `1`', n);
  if (n > 100) throw invalidField(`${scope}.page_size`, '≤ `100`', n);
  return n;
}

/** Notion's cursors are the id of the first item of the next page. */
function paginate<T>(items: T[], idOf: (item: T) => string, cursor: unknown, size: number, scope: Scope) {
  let start = 0;
  if (cursor !== undefined && cursor !== null) {
    const id = requireId(cursor, `${scope}.start_cursor`);
    start = items.findIndex((item) => idOf(item) === id);
    if (start < 0) throw validation(`The start_cursor provided is invalid: ${String(cursor)}`);
  }
  const results = items.slice(start, start + size);
  const next = items[start + size];
  return { results, has_more: next !== undefined, next_cursor: next === undefined ? null : idOf(next) };
}

const list = (type: string, page: { results: unknown[]; has_more: boolean; next_cursor: string | null }) => ({
  object: 'list',
  results: page.results,
  next_cursor: page.next_cursor,
  has_more: page.has_more,
  type,
  [type]: {},
});

function optionalBoolean(body: Json, key: string): boolean | undefined {
  const v = body[key];
  if (v !== undefined && typeof v !== 'boolean') throw invalidField(`body.${key}`, 'a boolean', v);
  return v as boolean | undefined;
}

function optionalFile(body: Json, key: 'icon' | 'cover'): Json | null | undefined {
  const v = body[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (!isObject(v)) throw invalidField(`body.${key}`, 'an object or `null`', v);
  if (typeof v.emoji === 'string') return { type: 'emoji', emoji: v.emoji };
  if (isObject(v.external) && typeof v.external.url === 'string') return { type: 'external', external: { url: v.external.url } };
  throw fixOne([`body.${key}.emoji should be defined, instead was \`undefined\`.`, `body.${key}.external should be defined, instead was \`undefined\`.`]);
}

/** `in_trash`, or its older alias `archived`. */
function trashFlag(body: Json): boolean | undefined {
  return optionalBoolean(body, 'in_trash') ?? optionalBoolean(body, 'archived');
}

export class NotionApi {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly ws: Workspace,
    private readonly options: ApiOptions,
  ) {}

  close(): void {
    for (const t of this.timers) clearTimeout(t);
  }

  handle(req: Request): unknown {
    const [resource, rawId, sub, ...rest] = req.segments;
    const route = `${req.method} ${resource ?? ''}${rawId === undefined ? '' : '/:id'}${sub === undefined ? '' : `/${sub}`}`;
    if (route === 'GET pages/:id/properties' && rest.length === 1)
      return this.pageProperty(requireId(rawId, 'path.page_id'), decodeURIComponent(rest[0]), req.query);
    if (rest.length) throw new NotionError(400, 'invalid_request_url', 'Invalid request URL.');
    const id = (param: string) => requireId(rawId, `path.${param}`);
    switch (route) {
      case 'POST search':
        return this.search(req.body);
      case 'POST pages':
        return this.createPage(req.body);
      case 'GET pages/:id':
        return this.retrievePage(id('page_id'), req.query);
      case 'PATCH pages/:id':
        return this.updatePage(id('page_id'), req.body);
      case 'GET blocks/:id':
        return this.ws.blockJson(this.ws.container(id('block_id')).id);
      case 'DELETE blocks/:id':
        return this.trashBlock(id('block_id'));
      case 'GET blocks/:id/children':
        return this.listChildren(id('block_id'), req.query);
      case 'PATCH blocks/:id/children':
        return this.appendChildren(id('block_id'), req.body);
      case 'POST databases':
        return this.createDatabase(req.body);
      case 'GET databases/:id':
        return this.ws.databaseJson(this.ws.database(id('database_id')));
      case 'PATCH databases/:id':
        return this.updateDatabase(id('database_id'), req.body);
      case 'POST data_sources':
        return this.createDataSource(req.body);
      case 'GET data_sources/:id':
        return this.ws.dataSourceJson(this.ws.dataSource(id('data_source_id')));
      case 'PATCH data_sources/:id':
        return this.updateDataSource(id('data_source_id'), req.body);
      case 'POST data_sources/:id/query':
        return this.query(id('data_source_id'), req.body, req.query);
      case 'GET data_sources/:id/templates':
        return this.listTemplates(id('data_source_id'), req.query);
      case 'GET users':
        return list(
          'user',
          paginate(
            [...this.ws.users.values()],
            (u) => u.id,
            req.query.get('start_cursor') ?? undefined,
            pageSize(req.query.get('page_size') ?? undefined, 'query'),
            'query',
          ),
        );
      case 'GET users/:id':
        return this.retrieveUser(rawId!);
      default:
        throw new NotionError(400, 'invalid_request_url', 'Invalid request URL.');
    }
  }

  // ------------------------------------------------------------------ search

  private search(body: Json): unknown {
    rejectUnknownKeys(body, ['query', 'filter', 'sort', 'start_cursor', 'page_size']);
    const query = body.query ?? '';
    if (typeof query !== 'string') throw invalidField('body.query', 'a string', query);
    let only: string | undefined;
    if (body.filter !== undefined) {
      const f = body.filter;
      if (!isObject(f)) throw invalidField('body.filter', 'an object', f);
      if (f.property !== 'object') throw invalidField('body.filter.property', '`"object"`', f.property);
      if (f.value !== 'page' && f.value !== 'data_source') throw invalidField('body.filter.value', '`"page"` or `"data_source"`', f.value);
      only = f.value;
    }
    let direction = 'descending';
    if (body.sort !== undefined) {
      const s = body.sort;
      if (!isObject(s)) throw invalidField('body.sort', 'an object', s);
      if (s.timestamp !== 'last_edited_time') throw invalidField('body.sort.timestamp', '`"last_edited_time"`', s.timestamp);
      if (s.direction !== 'ascending' && s.direction !== 'descending')
        throw invalidField('body.sort.direction', '`"ascending"` or `"descending"`', s.direction);
      direction = s.direction;
    }
    const size = pageSize(body.page_size, 'body');
    const needle = query.toLowerCase();
    const hits: Array<{ id: string; title: string; edited: string; json: () => Json }> = [];
    if (only !== 'data_source') {
      for (const page of this.ws.pages.values()) {
        if (page.template || !this.ws.isShared(page.id) || this.ws.inTrash(page.id)) continue;
        hits.push({ id: page.id, title: this.ws.pageTitle(page), edited: page.lastEditedTime, json: () => this.ws.pageJson(page) });
      }
    }
    if (only !== 'page') {
      for (const ds of this.ws.dataSources.values()) {
        if (!this.ws.isShared(ds.id) || this.ws.inTrash(ds.id)) continue;
        hits.push({ id: ds.id, title: plainText(ds.title), edited: ds.lastEditedTime, json: () => this.ws.dataSourceJson(ds) });
      }
    }
    const matching = hits.filter((h) => h.title.toLowerCase().includes(needle));
    const sign = direction === 'ascending' ? 1 : -1;
    matching.sort((a, b) => (a.edited === b.edited ? 0 : a.edited < b.edited ? -sign : sign));
    const page = paginate(matching, (h) => h.id, body.start_cursor, size, 'body');
    return list('page_or_data_source', { ...page, results: page.results.map((h) => h.json()) });
  }

  // ------------------------------------------------------------------ pages

  private retrievePage(id: string, query: URLSearchParams): unknown {
    const page = this.ws.page(id);
    return this.ws.pageJson(page, selectProperties(this.ws.rowSource(page), query.getAll('filter_properties')));
  }

  /**
   * GET /v1/pages/{id}/properties/{property_id}: the full list of a relation or people property, paginated
   * (page_size up to 100). The property id in the path is the id as shown in JSON, decoded once by the URL.
   */
  private pageProperty(pageId: string, propertyId: string, query: URLSearchParams): unknown {
    const page = this.ws.page(pageId);
    const source = this.ws.rowSource(page);
    const prop = source?.schema.find((p) => decodeURIComponent(p.id) === propertyId);
    if (!prop) throw validation(`Could not find property with name or id: ${propertyId}`);
    if (prop.type !== 'relation' && prop.type !== 'people') return propertyValue(prop, page, this.ws);
    const items = referenceItems(prop, page, this.ws);
    const size = pageSize(query.get('page_size') ?? undefined, 'query');
    const cursor = query.get('start_cursor');
    const at = cursor === null ? 0 : Number(cursor);
    if (!Number.isInteger(at) || at < 0 || at >= items.length) throw validation(`The start_cursor provided is invalid: ${cursor}`);
    const results = items.slice(at, at + size);
    const next = at + size < items.length ? String(at + size) : null;
    return {
      object: 'list',
      results,
      next_cursor: next,
      has_more: next !== null,
      type: 'property_item',
      property_item: {
        id: prop.id,
        next_url: next === null ? null : `/v1/pages/${page.id}/properties/${prop.id}?start_cursor=${next}`,
        type: prop.type,
        [prop.type]: {},
      },
    };
  }

  /** A page's parent in a create body; returns where it goes and the schema its properties follow. */
  private pageParent(raw: unknown): { parent: ParentRef; source?: DataSourceRecord } {
    if (raw === undefined) throw invalidField('body.parent', 'defined', raw);
    if (!isObject(raw)) throw invalidField('body.parent', 'an object', raw);
    if (raw.page_id !== undefined) {
      const id = requireId(raw.page_id, 'body.parent.page_id');
      this.ws.page(id);
      if (this.ws.inTrash(id)) throw archivedEdit();
      return { parent: { kind: 'page', id } };
    }
    if (raw.data_source_id !== undefined || raw.database_id !== undefined) {
      let source: DataSourceRecord;
      if (raw.data_source_id !== undefined) {
        source = this.ws.dataSource(requireId(raw.data_source_id, 'body.parent.data_source_id'));
      } else {
        const db = this.ws.database(requireId(raw.database_id, 'body.parent.database_id'));
        if (db.dataSourceIds.length !== 1) {
          throw validation(`Database ${db.id} has ${db.dataSourceIds.length} data sources. Use a data_source_id parent to choose one.`);
        }
        source = this.ws.dataSources.get(db.dataSourceIds[0])!;
      }
      if (this.ws.inTrash(source.id)) throw archivedEdit();
      return { parent: { kind: 'data_source', id: source.id }, source };
    }
    if (raw.workspace === true) {
      this.requireWorkspaceAccess('pages');
      return { parent: { kind: 'workspace' } };
    }
    throw fixOne(['page_id', 'data_source_id', 'database_id', 'workspace'].map((k) => `body.parent.${k} should be defined, instead was \`undefined\`.`));
  }

  private requireWorkspaceAccess(what: string): void {
    if (!this.options.isPublicIntegration) {
      throw validation(`Internal integrations cannot create ${what} at the workspace level. Provide a parent page.`);
    }
  }

  /** The template a create body asks for, if any. */
  private pageTemplate(raw: unknown, source: DataSourceRecord | undefined): PageRecord | undefined {
    if (raw === undefined) return undefined;
    if (!isObject(raw)) throw invalidField('body.template', 'an object', raw);
    if (raw.type === 'none') return undefined;
    if (raw.type !== 'default' && raw.type !== 'template_id') {
      throw invalidField('body.template.type', '`"none"`, `"default"`, or `"template_id"`', raw.type);
    }
    if (!source) throw validation('Templates can only be used when the parent is a data source.');
    const templates = this.templatesOf(source);
    if (raw.type === 'default') {
      const found = templates.find((t) => t.template!.isDefault);
      if (!found) throw validation(`Data source ${source.id} does not have a default template.`);
      return found;
    }
    if (raw.template_id === undefined) throw invalidField('body.template.template_id', 'defined', undefined);
    const id = requireId(raw.template_id, 'body.template.template_id');
    const found = templates.find((t) => t.id === id);
    if (!found) throw validation(`Template ${id} is not a template of data source ${source.id}.`);
    return found;
  }

  private createPage(body: Json): unknown {
    rejectUnknownKeys(body, ['parent', 'properties', 'children', 'icon', 'cover', 'template']);
    const { parent, source } = this.pageParent(body.parent);
    if (body.properties === undefined) throw invalidField('body.properties', 'defined', undefined);
    const parsed = parseValues(this.ws, source ? source.schema : null, body.properties, 'body.properties');
    const template = this.pageTemplate(body.template, source);
    if (template && body.children !== undefined) throw invalidField('body.children', 'not present', body.children);
    const drafts = body.children === undefined ? [] : parseChildren(this.ws, body.children, 'body.children');
    const icon = optionalFile(body, 'icon') ?? null;
    const cover = optionalFile(body, 'cover') ?? null;
    parsed.commit();

    const page: PageRecord = {
      ...this.ws.stamp(),
      id: newId(),
      parent,
      properties: { ...(source ? defaultValues(source.schema, () => source.nextUniqueId++) : {}), ...parsed.values },
      icon,
      cover,
      isLocked: false,
      sharedWith: new Set(parent.kind === 'workspace' ? [this.ws.botId] : []),
      children: [],
    };
    this.ws.pages.set(page.id, page);
    page.children = insertBlocks(this.ws, drafts, { kind: 'page', id: page.id });
    if (parent.kind === 'page') this.ws.pages.get(parent.id)!.children.push(page.id);
    if (template) this.applyTemplateLater(page, template, Object.keys(parsed.values));
    return this.ws.pageJson(page);
  }

  /** Notion applies templates asynchronously: the page answers blank, content arrives shortly after. */
  private applyTemplateLater(page: PageRecord, template: PageRecord, explicit: string[]): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      page.children.push(...copyBlocks(this.ws, template.children, { kind: 'page', id: page.id }));
      for (const [propId, value] of Object.entries(template.properties)) {
        if (!explicit.includes(propId)) page.properties[propId] = structuredClone(value);
      }
      this.ws.touch(page);
    }, this.options.templateDelayMs);
    this.timers.add(timer);
  }

  private updatePage(id: string, body: Json): unknown {
    rejectUnknownKeys(body, ['properties', 'in_trash', 'archived', 'icon', 'cover', 'is_locked']);
    const page = this.ws.page(id);
    const trash = trashFlag(body);
    const editsContent = body.properties !== undefined || body.icon !== undefined || body.cover !== undefined;
    if (editsContent && trash === undefined && this.ws.inTrash(id)) throw archivedEdit();
    const parsed =
      body.properties === undefined ? undefined : parseValues(this.ws, this.ws.rowSource(page)?.schema ?? null, body.properties, 'body.properties');
    const icon = optionalFile(body, 'icon');
    const cover = optionalFile(body, 'cover');
    const locked = optionalBoolean(body, 'is_locked');
    parsed?.commit();
    Object.assign(page.properties, parsed?.values);
    if (icon !== undefined) page.icon = icon;
    if (cover !== undefined) page.cover = cover;
    if (locked !== undefined) page.isLocked = locked;
    if (trash !== undefined) page.inTrash = trash;
    this.ws.touch(page);
    return this.ws.pageJson(page);
  }

  // ------------------------------------------------------------------ blocks

  private listChildren(id: string, query: URLSearchParams): unknown {
    const container = this.ws.container(id);
    const size = pageSize(query.get('page_size') ?? undefined, 'query');
    const page = paginate(this.ws.visibleChildren(container.children), (c) => c, query.get('start_cursor') ?? undefined, size, 'query');
    return list('block', { ...page, results: page.results.map((c) => this.ws.blockJson(c)) });
  }

  private appendChildren(id: string, body: Json): unknown {
    rejectUnknownKeys(body, ['children', 'after']);
    const container = this.ws.container(id);
    if (this.ws.inTrash(id)) throw archivedEdit();
    const block = this.ws.blocks.get(id);
    if (block) requireChildrenAllowed(block.type, block.data);
    if (body.children === undefined) throw invalidField('body.children', 'defined', undefined);
    const drafts = parseChildren(this.ws, body.children, 'body.children');
    let at = container.children.length;
    if (body.after !== undefined) {
      const after = requireId(body.after, 'body.after');
      at = container.children.indexOf(after) + 1;
      if (at === 0) throw validation(`Block ${after} is not a child of ${id}.`);
    }
    const ids = insertBlocks(this.ws, drafts, block ? { kind: 'block', id } : { kind: 'page', id });
    container.children.splice(at, 0, ...ids);
    this.ws.touch(container);
    return list('block', { results: ids.map((c) => this.ws.blockJson(c)), has_more: false, next_cursor: null });
  }

  private trashBlock(id: string): unknown {
    const record = this.ws.container(id);
    if (record.inTrash) throw archivedEdit();
    record.inTrash = true;
    this.ws.touch(record);
    return this.ws.blockJson(id);
  }

  // ------------------------------------------------------------------ databases

  private richTextField(body: Json, key: string): RichTextItem[] | undefined {
    return body[key] === undefined ? undefined : parseRichText(body[key], `body.${key}`, this.ws.resolveMention);
  }

  /** Where a database goes: a page (which must accept edits) or the workspace. */
  private databaseParent(raw: unknown): ParentRef {
    if (raw === undefined) throw invalidField('body.parent', 'defined', raw);
    if (!isObject(raw)) throw invalidField('body.parent', 'an object', raw);
    if (raw.page_id !== undefined) {
      const id = requireId(raw.page_id, 'body.parent.page_id');
      this.ws.page(id);
      if (this.ws.inTrash(id)) throw archivedEdit();
      return { kind: 'page', id };
    }
    if (raw.workspace === true) {
      this.requireWorkspaceAccess('databases');
      return { kind: 'workspace' };
    }
    throw fixOne(['page_id', 'workspace'].map((k) => `body.parent.${k} should be defined, instead was \`undefined\`.`));
  }

  private moveDatabase(db: DatabaseRecord, parent: ParentRef): void {
    if (db.parent.kind === 'page') {
      const old = this.ws.pages.get(db.parent.id)!;
      old.children = old.children.filter((c) => c !== db.id);
    }
    if (parent.kind === 'page') this.ws.pages.get(parent.id)!.children.push(db.id);
    db.parent = parent;
  }

  private createDatabase(body: Json): unknown {
    rejectUnknownKeys(body, ['parent', 'title', 'description', 'is_inline', 'icon', 'cover', 'initial_data_source']);
    const parent = this.databaseParent(body.parent);
    const title = this.richTextField(body, 'title') ?? [];
    const description = this.richTextField(body, 'description') ?? [];
    const isInline = optionalBoolean(body, 'is_inline') ?? false;
    const icon = optionalFile(body, 'icon') ?? null;
    const cover = optionalFile(body, 'cover') ?? null;
    const initial = body.initial_data_source ?? {};
    if (!isObject(initial)) throw invalidField('body.initial_data_source', 'an object', initial);
    rejectUnknownKeys(initial, ['properties'], 'body.initial_data_source');
    // Without a schema Notion starts the data source with a single title property, "Name".
    const schema = parseSchema(this.ws, initial.properties ?? { Name: { title: {} } }, 'body.initial_data_source.properties');

    const db: DatabaseRecord = {
      ...this.ws.stamp(),
      id: newId(),
      parent: { kind: 'workspace' },
      title,
      description,
      isInline,
      isLocked: false,
      icon,
      cover,
      sharedWith: new Set(parent.kind === 'workspace' ? [this.ws.botId] : []),
      dataSourceIds: [],
    };
    this.ws.databases.set(db.id, db);
    this.moveDatabase(db, parent);
    this.addDataSource(db, schema, structuredClone(title), icon);
    return this.ws.databaseJson(db);
  }

  private addDataSource(db: DatabaseRecord, schema: DataSourceRecord['schema'], title: RichTextItem[], icon: Json | null): DataSourceRecord {
    const ds: DataSourceRecord = { ...this.ws.stamp(), id: newId(), databaseId: db.id, title, description: [], icon, schema, nextUniqueId: 1 };
    this.ws.dataSources.set(ds.id, ds);
    db.dataSourceIds.push(ds.id);
    return ds;
  }

  private updateDatabase(id: string, body: Json): unknown {
    rejectUnknownKeys(body, ['title', 'description', 'is_inline', 'icon', 'cover', 'in_trash', 'archived', 'is_locked', 'parent']);
    const db = this.ws.database(id);
    const trash = trashFlag(body);
    if (db.inTrash && trash !== false) throw archivedEdit();
    const title = this.richTextField(body, 'title');
    const description = this.richTextField(body, 'description');
    const isInline = optionalBoolean(body, 'is_inline');
    const isLocked = optionalBoolean(body, 'is_locked');
    const icon = optionalFile(body, 'icon');
    const cover = optionalFile(body, 'cover');
    const parent = body.parent === undefined ? undefined : this.databaseParent(body.parent);
    if (title) db.title = title;
    if (description) db.description = description;
    if (isInline !== undefined) db.isInline = isInline;
    if (isLocked !== undefined) db.isLocked = isLocked;
    if (icon !== undefined) db.icon = icon;
    if (cover !== undefined) db.cover = cover;
    if (trash !== undefined) db.inTrash = trash;
    if (parent) this.moveDatabase(db, parent);
    this.ws.touch(db);
    return this.ws.databaseJson(db);
  }

  // ------------------------------------------------------------------ data sources

  private dataSourceParent(raw: unknown): DatabaseRecord {
    if (raw === undefined) throw invalidField('body.parent', 'defined', raw);
    if (!isObject(raw)) throw invalidField('body.parent', 'an object', raw);
    if (raw.type !== undefined && raw.type !== 'database_id') throw invalidField('body.parent.type', '`"database_id"`', raw.type);
    const db = this.ws.database(requireId(raw.database_id, 'body.parent.database_id'));
    if (this.ws.inTrash(db.id)) throw archivedEdit();
    return db;
  }

  private createDataSource(body: Json): unknown {
    rejectUnknownKeys(body, ['parent', 'properties', 'title', 'icon']);
    const db = this.dataSourceParent(body.parent);
    if (body.properties === undefined) throw invalidField('body.properties', 'defined', undefined);
    const schema = parseSchema(this.ws, body.properties, 'body.properties');
    const title = this.richTextField(body, 'title') ?? [];
    const icon = optionalFile(body, 'icon') ?? null;
    const ds = this.addDataSource(db, schema, title, icon);
    this.ws.touch(db);
    return this.ws.dataSourceJson(ds);
  }

  private updateDataSource(id: string, body: Json): unknown {
    rejectUnknownKeys(body, ['title', 'description', 'icon', 'properties', 'in_trash', 'archived', 'parent']);
    const ds = this.ws.dataSource(id);
    const trash = trashFlag(body);
    if (ds.inTrash && trash !== false) throw archivedEdit();
    const title = this.richTextField(body, 'title');
    const description = this.richTextField(body, 'description');
    const icon = optionalFile(body, 'icon');
    const schema = body.properties === undefined ? undefined : parsePatchedSchema(this.ws, ds.schema, body.properties, 'body.properties');
    const target = body.parent === undefined ? undefined : this.dataSourceParent(body.parent);
    if (title) ds.title = title;
    if (description) ds.description = description;
    if (icon !== undefined) ds.icon = icon;
    if (schema) this.replaceSchema(ds, schema);
    if (trash !== undefined) ds.inTrash = trash;
    if (target && target.id !== ds.databaseId) {
      const old = this.ws.databases.get(ds.databaseId)!;
      old.dataSourceIds = old.dataSourceIds.filter((d) => d !== ds.id);
      target.dataSourceIds.push(ds.id);
      ds.databaseId = target.id;
    }
    this.ws.touch(ds);
    return this.ws.dataSourceJson(ds);
  }

  /** Values of a property whose type changed no longer apply: rows start empty for it. */
  private replaceSchema(ds: DataSourceRecord, schema: DataSourceRecord['schema']): void {
    const retyped = schema.filter((p) => ds.schema.some((old) => old.id === p.id && old.type !== p.type));
    for (const row of this.rowsOf(ds).concat(this.templatesOf(ds))) for (const p of retyped) delete row.properties[p.id];
    ds.schema = schema;
  }

  private rowsOf(ds: DataSourceRecord): PageRecord[] {
    return [...this.ws.pages.values()].filter((p) => p.parent.kind === 'data_source' && p.parent.id === ds.id && !p.template);
  }

  private templatesOf(ds: DataSourceRecord): PageRecord[] {
    return [...this.ws.pages.values()].filter((p) => p.parent.kind === 'data_source' && p.parent.id === ds.id && p.template && !p.inTrash);
  }

  private query(id: string, body: Json, query: URLSearchParams): unknown {
    rejectUnknownKeys(body, ['filter', 'sorts', 'start_cursor', 'page_size', 'in_trash', 'result_type']);
    const ds = this.ws.dataSource(id);
    const only = selectProperties(ds, query.getAll('filter_properties'));
    const matches = body.filter === undefined ? () => true : compileFilter(this.ws, ds, body.filter);
    const order = compileSorts(this.ws, ds, body.sorts);
    const includeTrash = optionalBoolean(body, 'in_trash') ?? false;
    if (body.result_type !== undefined && body.result_type !== 'page' && body.result_type !== 'data_source') {
      throw invalidField('body.result_type', '`"page"` or `"data_source"`', body.result_type);
    }
    const size = pageSize(body.page_size, 'body');
    const rows = this.rowsOf(ds)
      .filter((p) => (includeTrash || !p.inTrash) && matches(p))
      .sort(order);
    const page = paginate(rows, (p) => p.id, body.start_cursor, size, 'body');
    return list('page_or_data_source', { ...page, results: page.results.map((p) => this.ws.pageJson(p, only)) });
  }

  private listTemplates(id: string, query: URLSearchParams): unknown {
    const ds = this.ws.dataSource(id);
    const name = (query.get('name') ?? '').toLowerCase();
    const templates = this.templatesOf(ds).filter((t) => t.template!.name.toLowerCase().includes(name));
    const size = pageSize(query.get('page_size') ?? undefined, 'query');
    const page = paginate(templates, (t) => t.id, query.get('start_cursor') ?? undefined, size, 'query');
    return {
      templates: page.results.map((t) => ({ id: t.id, name: t.template!.name, is_default: t.template!.isDefault })),
      has_more: page.has_more,
      next_cursor: page.next_cursor,
    };
  }

  // ------------------------------------------------------------------ users

  private retrieveUser(raw: string): unknown {
    if (raw === 'me') return this.ws.user(this.ws.botId);
    const id = normalizeId(raw);
    if (!id) throw invalidField('path.user_id', 'a valid uuid', raw);
    if (!this.ws.users.has(id)) throw new NotionError(404, 'object_not_found', `Could not find user with ID: ${id}.`);
    return this.ws.user(id);
  }
}
