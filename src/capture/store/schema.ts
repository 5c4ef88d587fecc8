// The store's SQLite tables, rendered from the column specs in ../rows.ts (the single source of truth,
// as the reference's schema.py), plus what only storage needs: the dedupe and lookup indexes and a small
// key/value table holding the shared cursor and the store's lifetime counters.
import { ANNOTATION_COLUMNS, WIRE_ROW_COLUMNS, type Column } from '../rows.js';

const SQLITE_TYPES: Record<Column['kind'], string> = {
  string: 'TEXT',
  int32: 'INTEGER',
  int64: 'INTEGER',
  float64: 'REAL',
  json: 'TEXT',
  'int32[]': 'TEXT',
  'float32[]': 'TEXT',
};

function createTable(table: string, columns: readonly Column[], unique: string[] = []): string {
  const lines = columns.map((c) => {
    const constraint = c.name === 'cursor' ? ' PRIMARY KEY' : c.nullable ? '' : ' NOT NULL';
    return `${c.name} ${SQLITE_TYPES[c.kind]}${constraint}${unique.includes(c.name) ? ' UNIQUE' : ''}`;
  });
  return `CREATE TABLE IF NOT EXISTS ${table} (\n  ${lines.join(',\n  ')}\n)`;
}

/** Counters kept in `store_meta` (they survive restarts): the last cursor given out, and what was removed. */
export const META_KEYS = ['cursor', 'removed_retention', 'removed_cap', 'redacted'] as const;
export type MetaKey = (typeof META_KEYS)[number];

// SQLite's unique indexes treat NULLs as distinct: exactly "dedupe only when fully keyed".
export const SCHEMA_SQL = `
${createTable('wire_rows', WIRE_ROW_COLUMNS)};
CREATE UNIQUE INDEX IF NOT EXISTS wire_rows_dedupe ON wire_rows (sampling_session_id, seq_id, sample_idx);
CREATE INDEX IF NOT EXISTS wire_rows_run ON wire_rows (run_id, cursor);
CREATE INDEX IF NOT EXISTS wire_rows_created ON wire_rows (created_at);
${createTable('annotations', ANNOTATION_COLUMNS, ['event_id'])};
CREATE INDEX IF NOT EXISTS annotations_run ON annotations (run_id, cursor);
CREATE INDEX IF NOT EXISTS annotations_created ON annotations (created_at);
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
${META_KEYS.map((k) => `INSERT OR IGNORE INTO store_meta (key, value) VALUES ('${k}', 0);`).join('\n')}
`;
