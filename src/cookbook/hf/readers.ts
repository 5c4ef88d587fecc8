// Lazy row readers for the files a Hugging Face dataset is stored in: parquet (hyparquet, one row
// group at a time), Arrow IPC stream or file format (apache-arrow, one record batch at a time —
// HF's cache and `save_to_disk` write these), JSON Lines (one line at a time) and JSON arrays.
// Rows come out as plain JSON-like objects: int64 becomes a number when it is a safe integer,
// Arrow lists and structs become arrays and objects.

import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { RecordBatchReader } from 'apache-arrow';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type FileMetaData } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DataFormatError } from '../errors.js';
import { parseJsonLine } from '../jsonl.js';

export type DataFileKind = 'parquet' | 'arrow' | 'jsonl' | 'json';

export interface DataFile {
  absPath: string;
  /** The file as the user knows it (relative to the dataset folder), for error messages. */
  displayPath: string;
  kind: DataFileKind;
}

export interface RawRow {
  data: Record<string, unknown>;
  /** "file:line" for JSON Lines, "file row N" (1-based) otherwise. */
  at: string;
}

/** The kind of a data file from its name, or undefined for files that hold no rows. */
export function dataFileKind(name: string): DataFileKind | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith('.parquet')) return 'parquet';
  if (lower.endsWith('.arrow')) return 'arrow';
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  // HF's own metadata files are JSON too, but hold no rows.
  if (lower.endsWith('.json') && !/(^|\/)(dataset_info|state|dataset_dict|dataset_infos)\.json$/.test(lower)) return 'json';
  return undefined;
}

/** Plain JSON-like values from parquet/Arrow values (Arrow rows and vectors have toJSON). */
export function plainValue(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (v === null || typeof v !== 'object' || v instanceof Date || ArrayBuffer.isView(v)) return v;
  if (Array.isArray(v)) return v.map(plainValue);
  const toJSON = (v as { toJSON?: () => unknown }).toJSON;
  if (typeof toJSON === 'function') return plainValue(toJSON.call(v));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainValue(x)]));
}

function asRow(data: unknown, at: string): Record<string, unknown> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new DataFormatError(`${at}: expected an object (one row), got ${Array.isArray(data) ? 'a list' : JSON.stringify(data)}`);
  }
  return data as Record<string, unknown>;
}

function readError(file: DataFile, e: unknown): Error {
  if (e instanceof DataFormatError) return e;
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'ENOENT') return new DataFormatError(`${file.displayPath}: no such file`);
  return new DataFormatError(`${file.displayPath}: cannot read ${file.kind} file (${err.message})`);
}

// ---------------------------------------------------------------------------------------------
// parquet

async function parquetOpen(file: DataFile): Promise<{ buffer: AsyncBuffer; metadata: FileMetaData }> {
  const buffer = await asyncBufferFromFile(file.absPath);
  return { buffer, metadata: await parquetMetadataAsync(buffer) };
}

async function* parquetRows(file: DataFile, columns: string[] | undefined, someColumns: boolean, bytes: boolean): AsyncGenerator<RawRow> {
  const { buffer, metadata } = await parquetOpen(file);
  const present = new Set(metadata.schema.slice(1).map((s) => s.name));
  // Read only the columns the format needs, unless one is missing: then the row-level error names it.
  // With `someColumns`, those of them the file has (a format whose columns are alternatives); all
  // when it has none of them, for the row-level error to list what it has.
  const some = columns && someColumns ? columns.filter((c) => present.has(c)) : [];
  const cols = some.length ? some : columns && !someColumns && columns.every((c) => present.has(c)) ? columns : undefined;
  let start = 0;
  for (const group of metadata.row_groups) {
    const end = start + Number(group.num_rows);
    // hyparquet decodes every byte array as UTF-8 unless told not to; a string column (annotated so) still is.
    const rows = await parquetReadObjects({ file: buffer, metadata, rowStart: start, rowEnd: end, columns: cols, compressors, utf8: !bytes });
    for (let i = 0; i < rows.length; i++) yield { data: plainValue(rows[i]) as Record<string, unknown>, at: `${file.displayPath} row ${start + i + 1}` };
    start = end;
  }
}

// ---------------------------------------------------------------------------------------------
// Arrow IPC (stream and file formats; RecordBatchReader tells them apart by their magic bytes)

async function* arrowRows(file: DataFile): AsyncGenerator<RawRow> {
  const handle = await open(file.absPath, 'r');
  try {
    const reader = await RecordBatchReader.from(handle);
    await reader.open();
    let n = 0;
    for await (const batch of reader) {
      for (let i = 0; i < batch.numRows; i++) {
        n++;
        yield { data: plainValue(batch.get(i)) as Record<string, unknown>, at: `${file.displayPath} row ${n}` };
      }
    }
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------------------------------
// JSON Lines and JSON

async function* jsonlRows(file: DataFile): AsyncGenerator<RawRow> {
  const lines = createInterface({ input: createReadStream(file.absPath, 'utf8'), crlfDelay: Infinity });
  let lineNo = 0;
  try {
    for await (const line of lines) {
      lineNo++;
      const trimmed = line.trim();
      if (trimmed === '') continue;
      const at = `${file.displayPath}:${lineNo}`;
      yield { data: asRow(parseJsonLine(trimmed, at), at), at };
    }
  } finally {
    lines.close();
  }
}

/** HF's json loader takes a JSON array of rows, or JSON Lines in a .json file. */
async function* jsonRows(file: DataFile): AsyncGenerator<RawRow> {
  const text = await readFile(file.absPath, 'utf8');
  if (!text.trimStart().startsWith('[')) {
    yield* jsonlRows(file);
    return;
  }
  const all = parseJsonLine(text, file.displayPath) as unknown[];
  for (let i = 0; i < all.length; i++) {
    const at = `${file.displayPath} row ${i + 1}`;
    yield { data: asRow(all[i], at), at };
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * The rows of one data file, in file order, read lazily. `columns` (parquet only) limits the
 * columns read: all of them, or with `someColumns` those of them the file has. With `bytes`, a
 * parquet binary column (one not annotated as a string) comes out as a Uint8Array, as HF's bytes
 * (default: decoded as UTF-8). Read errors become
 * DataFormatErrors naming the file.
 */
export async function* readRows(file: DataFile, columns?: string[], opts: { someColumns?: boolean; bytes?: boolean } = {}): AsyncGenerator<RawRow> {
  const inner = file.kind === 'parquet' ? parquetRows(file, columns, opts.someColumns ?? false, opts.bytes ?? false) : file.kind === 'arrow' ? arrowRows(file) : file.kind === 'jsonl' ? jsonlRows(file) : jsonRows(file);
  try {
    yield* inner;
  } catch (e) {
    throw readError(file, e);
  }
}

/** Row count of a file: parquet from its footer; the other kinds by reading through it. */
export async function countRows(file: DataFile): Promise<number> {
  try {
    await stat(file.absPath);
    if (file.kind === 'parquet') return Number((await parquetOpen(file)).metadata.num_rows);
  } catch (e) {
    throw readError(file, e);
  }
  let n = 0;
  for await (const _ of readRows(file)) n++;
  return n;
}
