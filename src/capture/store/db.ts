// The capture store's SQLite file (WAL), as the reference's store/db.py: wire rows and annotations on
// one shared cursor, ingest in one transaction per batch (a bad record rolls the whole batch back, so a
// retry is safe), dedupe by the rows' keys. Beyond the reference: credentials are redacted before a row
// is written, and the store keeps to a size cap and a retention age (oldest rows removed first; both
// counted). Only the daemon opens it for writing; it answers an ingest only after the commit, with
// `synchronous=FULL`, so an acknowledged batch survives a killed daemon (and a power cut).
import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  ANNOTATION_COLUMNS,
  jsonEncodedColumns,
  nowSeconds,
  parseCaptureRecord,
  UNATTRIBUTED_RUN,
  WIRE_ROW_COLUMNS,
  type Annotation,
  type AnnotationInput,
  type CaptureRecord,
  type JsonValue,
  type StreamEvent,
  type WireRow,
  type WireRowInput,
} from '../rows.js';
import { MAX_PAGE, checkMetaPath, type AnnotationFilter, type Page, type RowFilter } from './query.js';
import { redact } from './redact.js';
import { META_KEYS, SCHEMA_SQL, type MetaKey } from './schema.js';

export interface StoreLimits {
  /** Bytes the store's rows may take; past it, the oldest rows are removed. */
  maxBytes?: number | null;
  /** Rows created longer ago than this are removed. */
  retentionDays?: number | null;
}

export interface IngestResult {
  inserted: number;
  deduped: number;
  /** Rows removed by this batch's retention and size-cap pass. */
  removed: number;
  /** The cursor of the last row this batch inserted (null when it inserted none). */
  last_cursor: number | null;
}

export interface StoreStats {
  path: string;
  wire_rows: number;
  annotations: number;
  runs: number;
  cursor: number;
  file_bytes: number;
  used_bytes: number;
  max_bytes: number | null;
  retention_days: number | null;
  removed: { retention: number; cap: number };
  redacted: number;
}

export interface RunSummary {
  run_id: string;
  latest_attempt: number | null;
  num_wire_rows: number;
  num_annotations: number;
}

/** The store file cannot be used as it is: corrupted, locked by another writer, or unreadable. One line. */
export class StoreFileError extends Error {
  override name = 'StoreFileError';
  constructor(
    message: string,
    readonly reason: 'corrupted' | 'locked' | 'unreadable',
  ) {
    super(message);
  }
}

/** A batch the store refused (bad record); nothing of it was stored. */
export class IngestError extends Error {
  override name = 'IngestError';
}

const WIRE_JSON = new Set(jsonEncodedColumns(WIRE_ROW_COLUMNS));
const WIRE_INSERT_COLUMNS = WIRE_ROW_COLUMNS.map((c) => c.name);
const ANNOTATION_JSON = new Set(jsonEncodedColumns(ANNOTATION_COLUMNS));
const SQLITE_HEADER = 'SQLite format 3\0';
const DAY_SECONDS = 86_400;
// Removing down to 90% of the cap, not just under it, so a store at its cap does not delete on every batch.
const CAP_HEADROOM = 0.9;

function describeOpenFailure(path: string, error: unknown): StoreFileError {
  const e = error as { code?: string; message?: string };
  const detail = e.message ?? String(error);
  if (e.code === 'SQLITE_BUSY' || e.code === 'SQLITE_LOCKED' || /database is locked/.test(detail)) {
    return new StoreFileError(`capture store ${path} is locked by another process (another writer holds it: ${detail}); stop that process or use another --data-dir`, 'locked');
  }
  if (e.code === 'SQLITE_CORRUPT' || e.code === 'SQLITE_NOTADB' || /malformed|not a database|corrupt/i.test(detail)) {
    return corrupted(path, detail);
  }
  return new StoreFileError(`capture store ${path} cannot be opened: ${detail}`, 'unreadable');
}

function corrupted(path: string, detail: string): StoreFileError {
  return new StoreFileError(
    `capture store ${path} is corrupted (${detail}); the store will not start on it and leaves it as it is: move it aside to start an empty store, or salvage its rows with \`sqlite3 ${path} .recover\``,
    'corrupted',
  );
}

/** A file that exists but does not start with SQLite's header is not a store: say so before SQLite touches it. */
function checkHeader(path: string): void {
  if (!existsSync(path) || statSync(path).size === 0) return;
  const fd = openSync(path, 'r');
  try {
    const header = Buffer.alloc(16);
    const read = readSync(fd, header, 0, 16, 0);
    if (read < 16 || header.toString('latin1') !== SQLITE_HEADER) throw corrupted(path, 'not an SQLite database: its header is wrong');
  } finally {
    closeSync(fd);
  }
}

export class CaptureDb {
  private readonly db: Database.Database;
  private cursor: number;
  private readonly meta: Record<MetaKey, number>;
  private readonly statements;

  /** Opens (creating if absent) the store at `path`; throws a `StoreFileError` naming the file when it cannot. */
  constructor(
    readonly path: string,
    readonly limits: StoreLimits = {},
  ) {
    checkHeader(path);
    try {
      this.db = new Database(path, { timeout: 2000 });
    } catch (error) {
      throw describeOpenFailure(path, error);
    }
    try {
      // Checked before anything is written: switching to WAL rewrites the header of a file in rollback mode.
      const check = this.db.pragma('quick_check', { simple: true }) as string;
      if (check !== 'ok') throw corrupted(path, `integrity check: ${check}`);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.exec(`BEGIN IMMEDIATE; ${SCHEMA_SQL} COMMIT;`);
    } catch (error) {
      this.db.close();
      throw error instanceof StoreFileError ? error : describeOpenFailure(path, error);
    }
    const metaRows = this.db.prepare('SELECT key, value FROM store_meta').all() as Array<{ key: MetaKey; value: number }>;
    this.meta = Object.fromEntries(META_KEYS.map((k) => [k, metaRows.find((r) => r.key === k)?.value ?? 0])) as Record<MetaKey, number>;
    this.cursor = this.meta.cursor;
    this.statements = {
      insertWire: this.db.prepare(`INSERT OR IGNORE INTO wire_rows (${WIRE_INSERT_COLUMNS.join(', ')}) VALUES (${WIRE_INSERT_COLUMNS.map((c) => `@${c}`).join(', ')})`),
      insertAnnotation: this.db.prepare(
        `INSERT OR IGNORE INTO annotations (${ANNOTATION_COLUMNS.map((c) => c.name).join(', ')}) VALUES (${ANNOTATION_COLUMNS.map((c) => `@${c.name}`).join(', ')})`,
      ),
      setMeta: this.db.prepare('UPDATE store_meta SET value = ? WHERE key = ?'),
      expireWire: this.db.prepare('DELETE FROM wire_rows WHERE created_at < ?'),
      expireAnnotations: this.db.prepare('DELETE FROM annotations WHERE created_at < ?'),
    };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** The last cursor given out (0 for an empty store). */
  lastCursor(): number {
    return this.cursor;
  }

  /**
   * Stores a batch in one transaction, in order: each record is checked first (a bad one refuses the
   * whole batch with an `IngestError` naming it), redacted, then inserted unless its dedupe key is
   * already there. Returns once committed.
   */
  ingest(records: readonly CaptureRecord[]): IngestResult {
    const parsed = records.map((record, i) => {
      try {
        if (record === null || typeof record !== 'object' || (record.type !== 'wire_row' && record.type !== 'annotation')) {
          throw new Error('type must be "wire_row" or "annotation"');
        }
        return parseCaptureRecord(record, `record ${i}`);
      } catch (error) {
        throw new IngestError((error as Error).message.startsWith(`record ${i}`) ? (error as Error).message : `record ${i}: ${(error as Error).message}`);
      }
    });
    const before = { ...this.meta, cursor: this.cursor };
    const result: IngestResult = { inserted: 0, deduped: 0, removed: 0, last_cursor: null };
    try {
      this.db.transaction(() => {
        const now = nowSeconds();
        for (const record of parsed) {
          const inserted = record.type === 'wire_row' ? this.insertWire(record.row, now) : this.insertAnnotation(record.annotation, now);
          if (inserted) {
            result.inserted += 1;
            result.last_cursor = this.cursor;
          } else {
            result.deduped += 1;
          }
        }
        result.removed = this.enforceLimits(now);
        this.meta.cursor = this.cursor;
        for (const key of META_KEYS) if (this.meta[key] !== before[key]) this.statements.setMeta.run(this.meta[key], key);
      }).immediate();
    } catch (error) {
      // The transaction rolled back: so do the in-memory cursor and counters.
      this.cursor = before.cursor;
      for (const key of META_KEYS) this.meta[key] = before[key];
      throw error;
    }
    return result;
  }

  /** Applies retention and the size cap now (the daemon does at start and hourly; ingests do each batch). */
  sweep(): number {
    const before = { ...this.meta };
    try {
      return this.db.transaction(() => {
        const removed = this.enforceLimits(nowSeconds());
        for (const key of META_KEYS) if (this.meta[key] !== before[key]) this.statements.setMeta.run(this.meta[key], key);
        return removed;
      }).immediate();
    } catch (error) {
      for (const key of META_KEYS) this.meta[key] = before[key];
      throw error;
    }
  }

  private insertWire(row: WireRowInput, now: number): boolean {
    const values: Record<string, unknown> = {};
    for (const name of WIRE_INSERT_COLUMNS) values[name] = null;
    for (const [name, value] of Object.entries(row)) values[name] = value ?? null;
    if (row.metadata !== undefined && row.metadata !== null) {
      const { value, count } = redact(row.metadata);
      values.metadata = value;
      this.meta.redacted += count;
    }
    for (const name of WIRE_JSON) if (values[name] !== null) values[name] = JSON.stringify(values[name]);
    values.run_id = row.run_id || UNATTRIBUTED_RUN;
    values.created_at = row.created_at ?? now;
    values.cursor = this.cursor + 1;
    if (this.statements.insertWire.run(values).changes === 0) return false;
    this.cursor += 1;
    return true;
  }

  private insertAnnotation(annotation: AnnotationInput, now: number): boolean {
    let payload: JsonValue | null = annotation.payload ?? null;
    if (payload !== null) {
      const { value, count } = redact(payload);
      payload = value;
      this.meta.redacted += count;
    }
    const values: Record<string, unknown> = {
      cursor: this.cursor + 1,
      event_id: annotation.event_id,
      run_id: annotation.run_id || UNATTRIBUTED_RUN,
      kind: annotation.kind ?? null,
      payload: payload === null ? null : JSON.stringify(payload),
      created_at: annotation.created_at ?? now,
    };
    if (this.statements.insertAnnotation.run(values).changes === 0) return false;
    this.cursor += 1;
    return true;
  }

  /** Retention, then the size cap; returns the rows removed. Runs inside the ingest's transaction. */
  private enforceLimits(now: number): number {
    let removed = 0;
    const { retentionDays, maxBytes } = this.limits;
    if (retentionDays != null) {
      const horizon = now - retentionDays * DAY_SECONDS;
      const n = this.statements.expireWire.run(horizon).changes + this.statements.expireAnnotations.run(horizon).changes;
      this.meta.removed_retention += n;
      removed += n;
    }
    if (maxBytes != null) {
      for (let round = 0; round < 20 && this.usedBytes() > maxBytes; round++) {
        const rows = this.count();
        if (rows === 0) break;
        const perRow = this.usedBytes() / rows;
        const excess = this.usedBytes() - maxBytes * CAP_HEADROOM;
        const n = Math.min(rows, Math.max(1, Math.ceil(excess / perRow)));
        const threshold = this.db.prepare('SELECT cursor FROM (SELECT cursor FROM wire_rows UNION ALL SELECT cursor FROM annotations) ORDER BY cursor LIMIT 1 OFFSET ?').pluck().get(n - 1) as number;
        const gone = this.db.prepare('DELETE FROM wire_rows WHERE cursor <= ?').run(threshold).changes + this.db.prepare('DELETE FROM annotations WHERE cursor <= ?').run(threshold).changes;
        this.meta.removed_cap += gone;
        removed += gone;
      }
    }
    return removed;
  }

  /** Bytes the store's pages in use take (freed pages are reused, so the file stays near this). */
  usedBytes(): number {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * pageSize;
  }

  private count(): number {
    return (this.db.prepare('SELECT (SELECT COUNT(*) FROM wire_rows) + (SELECT COUNT(*) FROM annotations)').pluck().get() as number) ?? 0;
  }

  rows(filter: RowFilter = {}, page: Page = {}): WireRow[] {
    const clauses = ['cursor > @cursor'];
    const params: Record<string, unknown> = { cursor: page.cursor ?? 0, limit: Math.min(page.limit ?? MAX_PAGE, MAX_PAGE) };
    for (const key of ['run_id', 'split', 'purpose', 'policy_version', 'sampling_session_id', 'iteration', 'group_idx', 'traj_idx'] as const) {
      if (filter[key] !== undefined) {
        clauses.push(`${key} = @${key}`);
        params[key] = filter[key];
      }
    }
    if (filter.iteration_min !== undefined) clauses.push('iteration >= @iteration_min'), (params.iteration_min = filter.iteration_min);
    if (filter.iteration_max !== undefined) clauses.push('iteration <= @iteration_max'), (params.iteration_max = filter.iteration_max);
    if (filter.since !== undefined) clauses.push('created_at >= @since'), (params.since = filter.since);
    if (filter.until !== undefined) clauses.push('created_at <= @until'), (params.until = filter.until);
    Object.entries(filter.meta ?? {}).forEach(([path, value], i) => {
      // Compared as text: JSON true reads back as 1, so `true`/`false` are asked for as 1/0.
      clauses.push(`CAST(json_extract(metadata, @meta_path_${i}) AS TEXT) = @meta_value_${i}`);
      params[`meta_path_${i}`] = `$.${checkMetaPath(path)}`;
      params[`meta_value_${i}`] = value === 'true' ? '1' : value === 'false' ? '0' : value;
    });
    (filter.has ?? []).forEach((path, i) => {
      clauses.push(`json_extract(metadata, @has_path_${i}) IS NOT NULL`);
      params[`has_path_${i}`] = `$.${checkMetaPath(path)}`;
    });
    const found = this.db.prepare(`SELECT * FROM wire_rows WHERE ${clauses.join(' AND ')} ORDER BY cursor LIMIT @limit`).all(params) as Record<string, unknown>[];
    return found.map(decodeWire);
  }

  annotations(filter: AnnotationFilter = {}, page: Page = {}): Annotation[] {
    const clauses = ['cursor > @cursor'];
    const params: Record<string, unknown> = { cursor: page.cursor ?? 0, limit: Math.min(page.limit ?? MAX_PAGE, MAX_PAGE) };
    if (filter.run_id !== undefined) clauses.push('run_id = @run_id'), (params.run_id = filter.run_id);
    if (filter.kind !== undefined) clauses.push('kind = @kind'), (params.kind = filter.kind);
    if (filter.since !== undefined) clauses.push('created_at >= @since'), (params.since = filter.since);
    if (filter.until !== undefined) clauses.push('created_at <= @until'), (params.until = filter.until);
    const found = this.db.prepare(`SELECT * FROM annotations WHERE ${clauses.join(' AND ')} ORDER BY cursor LIMIT @limit`).all(params) as Record<string, unknown>[];
    return found.map(decodeAnnotation);
  }

  /** Both kinds after `cursor`, in cursor order (the order they were stored). */
  events(cursor: number, runId?: string, limit = MAX_PAGE): StreamEvent[] {
    const rows = this.rows(runId === undefined ? {} : { run_id: runId }, { cursor, limit });
    const annotations = this.annotations(runId === undefined ? {} : { run_id: runId }, { cursor, limit });
    const events: StreamEvent[] = [
      ...rows.map((row): StreamEvent => ({ type: 'wire_row', cursor: row.cursor, row })),
      ...annotations.map((annotation): StreamEvent => ({ type: 'annotation', cursor: annotation.cursor, annotation })),
    ];
    return events.sort((a, b) => a.cursor - b.cursor).slice(0, limit);
  }

  runs(): RunSummary[] {
    const summaries = new Map<string, RunSummary>();
    for (const r of this.db.prepare('SELECT run_id, MAX(run_attempt) AS latest, COUNT(*) AS n FROM wire_rows GROUP BY run_id').all() as Array<{ run_id: string; latest: number | null; n: number }>) {
      summaries.set(r.run_id, { run_id: r.run_id, latest_attempt: r.latest, num_wire_rows: r.n, num_annotations: 0 });
    }
    for (const r of this.db.prepare('SELECT run_id, COUNT(*) AS n FROM annotations GROUP BY run_id').all() as Array<{ run_id: string; n: number }>) {
      const summary = summaries.get(r.run_id) ?? { run_id: r.run_id, latest_attempt: null, num_wire_rows: 0, num_annotations: 0 };
      summary.num_annotations = r.n;
      summaries.set(r.run_id, summary);
    }
    return [...summaries.values()].sort((a, b) => a.run_id.localeCompare(b.run_id));
  }

  stats(): StoreStats {
    const fileBytes = [this.path, `${this.path}-wal`, `${this.path}-shm`].reduce((sum, p) => sum + (existsSync(p) ? statSync(p).size : 0), 0);
    const one = (sql: string) => this.db.prepare(sql).pluck().get() as number;
    return {
      path: this.path,
      wire_rows: one('SELECT COUNT(*) FROM wire_rows'),
      annotations: one('SELECT COUNT(*) FROM annotations'),
      runs: one('SELECT COUNT(*) FROM (SELECT run_id FROM wire_rows UNION SELECT run_id FROM annotations)'),
      cursor: this.cursor,
      file_bytes: fileBytes,
      used_bytes: this.usedBytes(),
      max_bytes: this.limits.maxBytes ?? null,
      retention_days: this.limits.retentionDays ?? null,
      removed: { retention: this.meta.removed_retention, cap: this.meta.removed_cap },
      redacted: this.meta.redacted,
    };
  }
}

function decodeWire(raw: Record<string, unknown>): WireRow {
  for (const name of WIRE_JSON) if (typeof raw[name] === 'string') raw[name] = JSON.parse(raw[name] as string);
  return raw as unknown as WireRow;
}

function decodeAnnotation(raw: Record<string, unknown>): Annotation {
  for (const name of ANNOTATION_JSON) if (typeof raw[name] === 'string') raw[name] = JSON.parse(raw[name] as string);
  return raw as unknown as Annotation;
}
