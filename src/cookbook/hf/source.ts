// Loading the rows of an `hf` dataset source: find the split's files (a local folder or file, or a
// Hub id downloaded into the cache), read them in order, and map each row through the format.
// Whole splits load into memory; with `streaming` the train split is read as it is consumed
// (streaming.ts) and only the row counts are taken up front.

import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataFormatError } from '../errors.js';
import { numpyPermutation } from '../shuffle.js';
import type { HfSource } from './config.js';
import { isSkipped, type BoundFormat, type Skipped } from './formats.js';
import { HUB_ID_RE, HubDataset, type HubOptions } from './hub.js';
import { localSplitFiles } from './layout.js';
import { countRows, readRows, type DataFile } from './readers.js';

/** One mapped row: `at` names it ("file row N" / "file:line"); `line` is its 1-based position in the source, a stable id. */
export interface HfRow<T> {
  value: T;
  at: string;
  line: number;
}

export interface HfLoadOptions {
  /** Folder that relative local paths resolve against (the config file's). */
  baseDir?: string;
  hub?: HubOptions;
}

/** Is `p` a local path rather than a Hub id? Anything path-like or present on disk is. */
export function isLocalPath(p: string, baseDir?: string): boolean {
  if (path.isAbsolute(p) || p.startsWith('.') || p.startsWith('~') || p.includes('\\')) return true;
  return existsSync(path.resolve(baseDir ?? process.cwd(), p)) || !HUB_ID_RE.test(p);
}

/** The data files of `split`, in order (downloaded first for a Hub id). */
export async function splitFiles(src: HfSource, split: string, opts: HfLoadOptions = {}): Promise<DataFile[]> {
  if (isLocalPath(src.path, opts.baseDir)) {
    const expanded = src.path.startsWith('~') ? path.join(os.homedir(), src.path.slice(1)) : src.path;
    return localSplitFiles(path.resolve(opts.baseDir ?? process.cwd(), expanded), src.path, src.name, split);
  }
  return new HubDataset(src.path, src.revision, opts.hub).splitFiles(src.name, split);
}

/** Rows of `files` in order, mapped through `format`, numbered from `firstLine`; skipped rows are listed. */
export async function* mappedRows<T>(files: DataFile[], format: BoundFormat<T>, firstLine = 1): AsyncGenerator<HfRow<T | Skipped>> {
  let line = firstLine;
  for (const file of files) {
    for await (const raw of readRows(file, format.columns, { someColumns: format.someColumns })) {
      yield { value: format.map(raw.data, raw.at), at: raw.at, line: line++ };
    }
  }
}

export interface LoadedSplit<T> {
  rows: HfRow<T>[];
  /** "at: reason" for each row the format skipped (as the reference's adapters return None). */
  skipped: string[];
  /** Rows read, skipped ones included. */
  total: number;
}

/** A whole split in memory. An empty split (after skips) is a DataFormatError naming it. */
export async function loadSplit<T>(src: HfSource, split: string, format: BoundFormat<T>, opts: HfLoadOptions & { firstLine?: number } = {}): Promise<LoadedSplit<T>> {
  const files = await splitFiles(src, split, opts);
  const out: LoadedSplit<T> = { rows: [], skipped: [], total: 0 };
  for await (const row of mappedRows(files, format, opts.firstLine)) {
    out.total++;
    if (isSkipped(row.value)) out.skipped.push(`${row.at}: ${row.value.skip}`);
    else out.rows.push(row as HfRow<T>);
  }
  if (out.rows.length === 0) {
    throw new DataFormatError(`${src.path}: split "${split}" has no usable rows (${out.total} read, ${out.skipped.length} skipped by format "${format.name}")`);
  }
  return out;
}

/** `rows` in HF `shuffle(seed)` order. */
export function shuffled<T>(rows: readonly T[], seed: number): T[] {
  return numpyPermutation(seed, rows.length).map((i) => rows[i]);
}

/** The row counts of a streaming split's files (parquet: from the footer only). */
export async function countSplit(files: DataFile[]): Promise<number[]> {
  const counts: number[] = [];
  for (const f of files) counts.push(await countRows(f));
  return counts;
}
