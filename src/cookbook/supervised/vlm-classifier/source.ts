// The rows of an image-classification split, read as `datasets.load_dataset` reads them: a Hub id
// (downloaded, or found in the Hugging Face cache) or a local folder in the Hub's layouts (parquet,
// Arrow, JSON Lines; hf/layout.ts), or an image folder (`<split>/<class name>/<image>`, labels the
// sorted class folder names, as `datasets`' imagefolder). Labels are read up front (a parquet file:
// its label column only); images stay where they are until their batch is loaded (images.ts).
// ClassLabel names come from the dataset's features: the `huggingface` metadata of its parquet or
// Arrow files, a dataset_info.json, or the README's `dataset_info` card.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RecordBatchReader } from 'apache-arrow';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema, type AsyncBuffer, type FileMetaData } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DataFormatError } from '../../errors.js';
import type { HfSource } from '../../hf/config.js';
import type { HubOptions } from '../../hf/hub.js';
import { listFiles, matchesSplit } from '../../hf/layout.js';
import { plainValue, readRows, type DataFile } from '../../hf/readers.js';
import { isLocalPath, splitFiles } from '../../hf/source.js';
import type { Label } from './data.js';

/** Where a row's image is: read with the row, in a parquet file (read when its batch loads), or a file of its own. */
export type ImageRef =
  | { kind: 'cell'; value: unknown; dir: string }
  | { kind: 'parquet'; file: DataFile; row: number }
  | { kind: 'file'; absPath: string };

export interface ClassifierRow {
  label: Label;
  image: ImageRef;
  /** The row, for errors: "file row N", "file:line" or the image file's path. */
  at: string;
}

export interface ClassifierSplit {
  rows: ClassifierRow[];
  /** ClassLabel names (null when the labels are class-name strings). */
  classNames: string[] | null;
  /** The dataset and split, for messages. */
  where: string;
}

export interface ClassifierColumns {
  image: string;
  label: string;
  /** Config paths of the two column names, for messages. */
  imageKey: string;
  labelKey: string;
}

export interface SourceOptions {
  baseDir?: string;
  hub?: HubOptions;
}

const IMAGE_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.webp', '.gif', '.bmp', '.tif', '.tiff']);
const isImageFile = (rel: string) => IMAGE_EXTENSIONS.has(path.extname(rel).toLowerCase());
const KNOWN_SPLITS = ['train', 'validation', 'test'];

/** The local folder of a source, or undefined for a Hub id. */
function localRoot(src: HfSource, baseDir?: string): string | undefined {
  if (!isLocalPath(src.path, baseDir)) return undefined;
  const expanded = src.path.startsWith('~') ? path.join(os.homedir(), src.path.slice(1)) : src.path;
  return path.resolve(baseDir ?? process.cwd(), expanded);
}

/** Is `root` an image folder (images, and no parquet/Arrow/JSON data files)? */
function imageFolderFiles(root: string): string[] | undefined {
  if (!existsSync(root) || !statSync(root).isDirectory()) return undefined;
  const files = listFiles(root);
  if (files.some((f) => /\.(parquet|arrow|jsonl|ndjson)$/i.test(f) || (/\.json$/i.test(f) && !/(^|\/)(dataset_info|state|dataset_dict|dataset_infos)\.json$/i.test(f)))) return undefined;
  const images = files.filter(isImageFile);
  return images.length > 0 ? images : undefined;
}

/** The rows of `split` with their class names. */
export async function loadClassifierSplit(src: HfSource, split: string, columns: ClassifierColumns, opts: SourceOptions = {}): Promise<ClassifierSplit> {
  const root = localRoot(src, opts.baseDir);
  const images = root === undefined ? undefined : imageFolderFiles(root);
  if (root !== undefined && images) return imageFolderSplit(root, src.path, images, split);
  const files = await splitFiles(src, split, opts);
  const rows: ClassifierRow[] = [];
  let classNames: string[] | null = null;
  for (const file of files) {
    const read = file.kind === 'parquet' ? await parquetLabels(file, columns) : await inlineRows(file, columns);
    rows.push(...read.rows);
    classNames ??= read.classNames ?? featureNamesNear(file, root, columns.label);
  }
  const where = `${src.path} (split "${split}")`;
  checkLabels(rows, classNames, columns);
  return { rows, classNames, where };
}

/** Every label is a class-name string, or an integer that names a ClassLabel class. */
function checkLabels(rows: ClassifierRow[], classNames: string[] | null, columns: ClassifierColumns): void {
  for (const row of rows) {
    if (typeof row.label === 'string') continue;
    if (typeof row.label !== 'number' || !Number.isInteger(row.label)) {
      throw new DataFormatError(`${row.at}: column "${columns.label}" (${columns.labelKey}) must hold a class label (an integer or a string), got ${typeof row.label === 'bigint' ? `${row.label}n` : JSON.stringify(row.label) ?? String(row.label)}`);
    }
    if (classNames === null) {
      throw new DataFormatError(
        `${row.at}: column "${columns.label}" (${columns.labelKey}) holds integers, but the dataset declares no ClassLabel names for it ` +
          '(the "huggingface" metadata of its parquet/Arrow files, a dataset_info.json or the README card); store class-name strings instead',
      );
    }
    if (row.label < 0 || row.label >= classNames.length) {
      throw new DataFormatError(`${row.at}: label ${row.label} is not one of the ${classNames.length} classes of column "${columns.label}"`);
    }
  }
}

/** The class name of a row (before cleaning). */
export function rowClassName(row: ClassifierRow, classNames: string[] | null): string {
  return typeof row.label === 'string' ? row.label : classNames![row.label];
}

// ---------------------------------------------------------------------------------------------
// image folders

function imageFolderSplit(root: string, display: string, images: string[], split: string): ClassifierSplit {
  const splitDir = (rel: string) => {
    const first = rel.split('/')[0];
    return rel.includes('/') && KNOWN_SPLITS.some((s) => matchesSplit(`${first}/x`, s)) ? first : undefined;
  };
  const anySplit = images.some((rel) => splitDir(rel) !== undefined);
  const inSplit = anySplit ? images.filter((rel) => splitDir(rel) !== undefined && matchesSplit(`${splitDir(rel)}/x`, split)) : split === 'train' ? images : [];
  const where = `${display} (split "${split}")`;
  if (inSplit.length === 0) {
    const found = anySplit ? [...new Set(images.map(splitDir).filter((s) => s !== undefined))].sort() : ['train'];
    throw new DataFormatError(`${display}: no images for split "${split}" in this image folder; splits found: ${found.join(', ')}`);
  }
  const classOf = (rel: string) => {
    const parts = rel.split('/');
    const top = anySplit ? 1 : 0;
    if (parts.length - 1 <= top) throw new DataFormatError(`${display}/${rel}: an image folder's images sit in a folder named after their class (<split>/<class name>/<image>)`);
    return parts[parts.length - 2];
  };
  // As datasets' imagefolder: the labels of every split, sorted, so train and test share ids.
  const classNames = [...new Set(images.map(classOf))].sort();
  const index = new Map(classNames.map((c, i) => [c, i]));
  const rows = inSplit.map((rel) => ({ label: index.get(classOf(rel))!, image: { kind: 'file' as const, absPath: path.join(root, ...rel.split('/')) }, at: `${display.replace(/\/+$/, '')}/${rel}` }));
  return { rows, classNames, where };
}

// ---------------------------------------------------------------------------------------------
// parquet: labels now, images when their batch loads (read with utf8: false, so an Image cell's
// unannotated `bytes` stay bytes while string columns stay strings)

interface OpenParquet {
  buffer: AsyncBuffer;
  metadata: FileMetaData;
}
const openParquets = new Map<string, Promise<OpenParquet>>();

function openParquet(file: DataFile): Promise<OpenParquet> {
  let open = openParquets.get(file.absPath);
  if (!open) {
    open = (async () => {
      const buffer = await asyncBufferFromFile(file.absPath);
      return { buffer, metadata: await parquetMetadataAsync(buffer) };
    })();
    openParquets.set(file.absPath, open);
    open.catch(() => openParquets.delete(file.absPath));
  }
  return open;
}

function readError(file: DataFile, e: unknown): DataFormatError {
  if (e instanceof DataFormatError) return e;
  const err = e as NodeJS.ErrnoException;
  return new DataFormatError(err.code === 'ENOENT' ? `${file.displayPath}: no such file` : `${file.displayPath}: cannot read ${file.kind} file (${err.message})`);
}

function missingColumn(where: string, column: string, key: string, present: string[]): DataFormatError {
  return new DataFormatError(`${where}: no column "${column}" (${key}); its columns: ${present.join(', ') || 'none'}`);
}

async function parquetLabels(file: DataFile, columns: ClassifierColumns): Promise<{ rows: ClassifierRow[]; classNames: string[] | null }> {
  try {
    const { buffer, metadata } = await openParquet(file);
    const present = parquetSchema(metadata).children.map((c) => c.element.name);
    if (!present.includes(columns.label)) throw missingColumn(file.displayPath, columns.label, columns.labelKey, present);
    if (!present.includes(columns.image)) throw missingColumn(file.displayPath, columns.image, columns.imageKey, present);
    const read = await parquetReadObjects({ file: buffer, metadata, columns: [columns.label], compressors, utf8: false });
    const rows = read.map((r, i) => ({ label: plainValue(r[columns.label]) as Label, image: { kind: 'parquet' as const, file, row: i }, at: `${file.displayPath} row ${i + 1}` }));
    const hf = metadata.key_value_metadata?.find((kv) => kv.key === 'huggingface')?.value;
    return { rows, classNames: hf ? classLabelNames(hf, columns.label) : null };
  } catch (e) {
    throw readError(file, e);
  }
}

/** The image cells of parquet rows, read one row group range at a time. */
export async function readParquetImages(refs: Array<{ file: DataFile; row: number }>, column: string): Promise<unknown[]> {
  const out: unknown[] = new Array(refs.length);
  const byFile = new Map<string, number[]>();
  refs.forEach((r, i) => {
    const list = byFile.get(r.file.absPath);
    if (list) list.push(i);
    else byFile.set(r.file.absPath, [i]);
  });
  for (const indices of byFile.values()) {
    const file = refs[indices[0]].file;
    try {
      const { buffer, metadata } = await openParquet(file);
      // Row groups' first rows, to read each group's needed range once.
      const starts: number[] = [];
      let start = 0;
      for (const g of metadata.row_groups) {
        starts.push(start);
        start += Number(g.num_rows);
      }
      const groupOf = (row: number) => {
        let g = 0;
        while (g + 1 < starts.length && starts[g + 1] <= row) g++;
        return g;
      };
      const byGroup = new Map<number, number[]>();
      for (const i of indices) {
        const g = groupOf(refs[i].row);
        const list = byGroup.get(g);
        if (list) list.push(i);
        else byGroup.set(g, [i]);
      }
      for (const members of byGroup.values()) {
        const rows = members.map((i) => refs[i].row);
        const lo = Math.min(...rows);
        const hi = Math.max(...rows) + 1;
        const read = await parquetReadObjects({ file: buffer, metadata, rowStart: lo, rowEnd: hi, columns: [column], compressors, utf8: false });
        for (const i of members) out[i] = plainValue(read[refs[i].row - lo][column]);
      }
    } catch (e) {
      throw readError(file, e);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Arrow, JSON Lines, JSON: rows read whole (the image cells with them)

async function inlineRows(file: DataFile, columns: ClassifierColumns): Promise<{ rows: ClassifierRow[]; classNames: string[] | null }> {
  const rows: ClassifierRow[] = [];
  const dir = path.dirname(file.absPath);
  for await (const raw of readRows(file)) {
    const present = Object.keys(raw.data);
    if (!(columns.label in raw.data)) throw missingColumn(raw.at, columns.label, columns.labelKey, present);
    if (!(columns.image in raw.data)) throw missingColumn(raw.at, columns.image, columns.imageKey, present);
    rows.push({ label: raw.data[columns.label] as Label, image: { kind: 'cell', value: raw.data[columns.image], dir }, at: raw.at });
  }
  const classNames = file.kind === 'arrow' ? await arrowClassNames(file, columns.label) : null;
  return { rows, classNames };
}

async function arrowClassNames(file: DataFile, label: string): Promise<string[] | null> {
  const handle = await open(file.absPath, 'r');
  try {
    const reader = await RecordBatchReader.from(handle);
    await reader.open();
    const hf = reader.schema?.metadata.get('huggingface');
    return hf ? classLabelNames(hf, label) : null;
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------------------------------
// ClassLabel names from the dataset's features

/** The names of ClassLabel `column` in a features JSON (`{"info": {"features": …}}` or `{"features": …}`). */
export function classLabelNames(json: string, column: string): string[] | null {
  try {
    const data = JSON.parse(json) as { info?: { features?: Record<string, unknown> }; features?: Record<string, unknown> };
    const feature = (data.info?.features ?? data.features)?.[column] as { _type?: string; names?: unknown } | undefined;
    if (feature?._type === 'ClassLabel' && Array.isArray(feature.names)) return feature.names.map(String);
  } catch {
    // not JSON: no names from here
  }
  return null;
}

/** Names from a dataset_info.json beside the file or at the dataset root, or the root's README card. */
function featureNamesNear(file: DataFile, root: string | undefined, column: string): string[] | null {
  const dirs = [path.dirname(file.absPath)];
  if (root !== undefined) dirs.push(root);
  for (const dir of dirs) {
    const info = path.join(dir, 'dataset_info.json');
    if (existsSync(info)) {
      const names = classLabelNames(readFileSync(info, 'utf8'), column);
      if (names) return names;
    }
  }
  if (root !== undefined && existsSync(path.join(root, 'README.md'))) return readmeClassNames(readFileSync(path.join(root, 'README.md'), 'utf8'), column);
  return null;
}

const unquote = (s: string) => {
  const t = s.trim();
  if ((t.startsWith("'") && t.endsWith("'")) || (t.startsWith('"') && t.endsWith('"'))) return t.slice(1, -1).replace(/''/g, "'");
  return t;
};

/**
 * The class names of `column` in a dataset card's YAML header, as the Hub writes it:
 * `- name: label` … `class_label:` `names:` `'0': first` `'1': second` …
 */
export function readmeClassNames(readme: string, column: string): string[] | null {
  const header = /^---\r?\n([\s\S]*?)\r?\n---/.exec(readme)?.[1];
  if (!header) return null;
  const lines = header.split(/\r?\n/);
  const indent = (l: string) => l.length - l.trimStart().length;
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)- name:\s*(.+)$/.exec(lines[i]);
    if (!m || unquote(m[2]) !== column) continue;
    const base = m[1].length;
    let j = i + 1;
    while (j < lines.length && (lines[j].trim() === '' || indent(lines[j]) > base) && !/^\s*names:\s*$/.test(lines[j])) j++;
    if (j >= lines.length || indent(lines[j]) <= base) return null;
    const namesIndent = indent(lines[j]);
    const names: string[] = [];
    for (let k = j + 1; k < lines.length && indent(lines[k]) > namesIndent; k++) {
      const entry = /^\s*['"]?(\d+)['"]?:\s*(.*)$/.exec(lines[k]);
      if (!entry) return null;
      names[Number(entry[1])] = unquote(entry[2]);
    }
    return names.length > 0 && names.every((n) => n !== undefined) ? names : null;
  }
  return null;
}
