// The schema cache: tables/views of the sandbox's schema (`public`) with their columns, read from pg_catalog like PostgREST does
// (every relation, whatever the request role may access).
import type { PGlite } from '@electric-sql/pglite';

export interface ColumnInfo {
  name: string;
  type: string;
  primaryKey: boolean;
}

export type SchemaCache = Map<string, ColumnInfo[]>;

export async function loadSchemaCache(db: PGlite, schema: string): Promise<SchemaCache> {
  const { rows } = await db.query<{ table_name: string; column_name: string | null; type: string | null; pk: boolean | null }>(
    `
    SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type,
           a.attnum = ANY (i.indkey) AS pk
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
    WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
    ORDER BY c.relname, a.attnum`,
    [schema],
  );
  const cache: SchemaCache = new Map();
  for (const row of rows) {
    const columns = cache.get(row.table_name) ?? [];
    if (row.column_name && row.type) columns.push({ name: row.column_name, type: row.type, primaryKey: row.pk === true });
    cache.set(row.table_name, columns);
  }
  return cache;
}
