// Small Hugging Face datasets written at test time in the Hub's layouts: parquet shards
// (hyparquet-writer, with the list<struct> `messages` column HF's Arrow writer produces), Arrow IPC
// stream and file formats (apache-arrow, as HF's cache and `save_to_disk` write them), and JSONL.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { Field, Int64, List, Struct, Table, tableToIPC, Utf8, vectorFromArray, type DataType, type Vector } from 'apache-arrow';
import { parquetWriteBuffer } from 'hyparquet-writer';

type Msg = { role: string; content: string };
export const u = (content: string): Msg => ({ role: 'user', content });
export const a = (content: string): Msg => ({ role: 'assistant', content });

function write(file: string, data: ArrayBuffer | Uint8Array | string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, typeof data === 'string' ? data : new Uint8Array(data as ArrayBuffer));
  return file;
}

const utf8 = (name: string) => ({ name, type: 'BYTE_ARRAY' as const, converted_type: 'UTF8' as const, repetition_type: 'OPTIONAL' as const });

/** A parquet file of string columns plus, when `messagesColumn` is set, a list<struct<content, role>> column. */
export function writeParquet(
  file: string,
  rows: Array<Record<string, unknown>>,
  opts: { messagesColumn?: string; codec?: 'SNAPPY' | 'GZIP' | 'BROTLI' | 'UNCOMPRESSED'; rowGroupSize?: number; intColumns?: string[] } = {},
): string {
  const names = Object.keys(rows[0]);
  const schema: Array<Record<string, unknown>> = [{ name: 'root', num_children: names.length }];
  for (const name of names) {
    if (name === opts.messagesColumn) {
      schema.push(
        { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', repetition_type: 'OPTIONAL', num_children: 2 },
        utf8('content'),
        utf8('role'),
      );
    } else if (opts.intColumns?.includes(name)) {
      schema.push({ name, type: 'INT64', repetition_type: 'OPTIONAL' });
    } else {
      schema.push(utf8(name));
    }
  }
  const codec = opts.codec ?? 'SNAPPY';
  const compressors = { GZIP: (b: Uint8Array) => new Uint8Array(zlib.gzipSync(b)), BROTLI: (b: Uint8Array) => new Uint8Array(zlib.brotliCompressSync(b)) };
  const buf = parquetWriteBuffer({
    columnData: names.map((name) => ({ name, data: rows.map((r) => (opts.intColumns?.includes(name) ? BigInt(r[name] as number) : r[name])) as never })),
    schema: schema as never,
    codec,
    compressors,
    rowGroupSize: opts.rowGroupSize ?? 1000,
  });
  return write(file, buf);
}

const messagesType = () => new List(new Field('item', new Struct([new Field('content', new Utf8(), true), new Field('role', new Utf8(), true)]), true));

/** An Arrow IPC file (format "stream" as HF's cache and save_to_disk write, or "file"). */
export function writeArrow(file: string, rows: Array<Record<string, unknown>>, format: 'stream' | 'file', types: Record<string, 'string' | 'messages' | 'int'> = {}): string {
  const columns: Record<string, Vector> = {};
  for (const name of Object.keys(rows[0])) {
    const kind = types[name] ?? 'string';
    const type: DataType = kind === 'messages' ? messagesType() : kind === 'int' ? new Int64() : new Utf8();
    columns[name] = vectorFromArray(rows.map((r) => (kind === 'int' ? BigInt(r[name] as number) : r[name])) as never, type as never) as Vector;
  }
  return write(file, tableToIPC(new Table(columns), format));
}

export function writeJsonl(file: string, rows: unknown[]): string {
  return write(file, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
}

export const chatRow = (i: number) => ({ prompt_id: `p${i}`, messages: [u(`question ${i}`), a(`answer number ${i}`)] });

/** HuggingFaceH4/no_robots's layout: two train shards (the first with GZIP, row groups of 2) and a test shard. */
export function noRobotsFolder(root: string): string {
  writeParquet(path.join(root, 'data/train-00000-of-00002.parquet'), [0, 1, 2, 3, 4].map(chatRow), { messagesColumn: 'messages', codec: 'GZIP', rowGroupSize: 2 });
  writeParquet(path.join(root, 'data/train-00001-of-00002.parquet'), [5, 6, 7, 8, 9].map(chatRow), { messagesColumn: 'messages', codec: 'BROTLI' });
  writeParquet(path.join(root, 'data/test-00000-of-00001.parquet'), [100, 101].map(chatRow), { messagesColumn: 'messages' });
  writeFileSync(path.join(root, 'README.md'), '---\nlicense: cc-by-nc-4.0\n---\n');
  return root;
}

export const gsm8kRow = (i: number) => ({ question: `What is ${i} + ${i}?`, answer: `${i} plus ${i} is ${2 * i}.\n#### ${2 * i}` });

/** openai/gsm8k's layout: configs `main` and `socratic`, each with train and test shards. */
export function gsm8kFolder(root: string): string {
  for (const config of ['main', 'socratic']) {
    writeParquet(path.join(root, `${config}/train-00000-of-00001.parquet`), [1, 2, 3, 4].map(gsm8kRow));
    writeParquet(path.join(root, `${config}/test-00000-of-00001.parquet`), [7, 8].map(gsm8kRow));
  }
  return root;
}

/** A DatasetDict.save_to_disk folder with train and test splits as Arrow stream files. */
export function savedDatasetDict(root: string, rows: { train: Array<Record<string, unknown>>; test: Array<Record<string, unknown>> }, types: Record<string, 'string' | 'messages' | 'int'>): string {
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, 'dataset_dict.json'), JSON.stringify({ splits: ['train', 'test'] }));
  for (const split of ['train', 'test'] as const) {
    const dir = path.join(root, split);
    const half = Math.ceil(rows[split].length / 2);
    const shards = split === 'train' ? [rows[split].slice(0, half), rows[split].slice(half)] : [rows[split]];
    const names = shards.map((_, i) => `data-${String(i).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.arrow`);
    shards.forEach((s, i) => writeArrow(path.join(dir, names[i]), s, 'stream', types));
    writeFileSync(path.join(dir, 'state.json'), JSON.stringify({ _data_files: names.map((filename) => ({ filename })), _split: split, _fingerprint: 'x' }));
    writeFileSync(path.join(dir, 'dataset_info.json'), JSON.stringify({ features: {} }));
  }
  return root;
}
