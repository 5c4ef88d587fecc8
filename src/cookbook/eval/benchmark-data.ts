// A suite's examples from local files in the public dataset's layout (the hf loader's layouts:
// parquet/jsonl/json/arrow shards, config folders, split names): the shipped sample under
// data/eval/<suite>/ by default, the full set from a user's path. `limit` keeps the first rows in
// file order, as the reference's limit_dataset does without a shuffle seed.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataFormatError } from '../errors.js';
import { HfSourceSchema } from '../hf/config.js';
import { readRows } from '../hf/readers.js';
import { splitFiles } from '../hf/source.js';
import { SUITES, type EvalItem, type Suite } from './suites/index.js';

export interface BenchmarkDataOptions {
  suite: string;
  /** A local folder or file in the public layout; null: the shipped sample. */
  data_path: string | null;
  /** The dataset config (e.g. "main", "all", an MMLU subject); null: the suite's. */
  data_name: string | null;
  /** null: the suite's split. */
  data_split: string | null;
  limit: number | null;
  system_prompt: string | null;
}

export interface BenchmarkData {
  suite: Suite;
  items: EvalItem[];
  /** Where the rows came from, for results and errors. */
  source: string;
}

const SAMPLES_DIR = path.join('data', 'eval');

/** The folder of the shipped samples (the nearest ancestor of this module that holds data/eval). */
export function samplesDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, SAMPLES_DIR))) return path.join(dir, SAMPLES_DIR);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`cannot find ${SAMPLES_DIR} above ${fileURLToPath(import.meta.url)}`);
}

export function suiteNamed(name: string): Suite {
  const suite = SUITES[name];
  if (!suite) throw new DataFormatError(`unknown suite "${name}" (available: ${Object.keys(SUITES).join(', ')})`);
  return suite;
}

export async function loadBenchmark(opts: BenchmarkDataOptions): Promise<BenchmarkData> {
  const suite = suiteNamed(opts.suite);
  const dataPath = opts.data_path ?? path.join(samplesDir(), suite.sample);
  const source = HfSourceSchema.parse({ path: dataPath, name: opts.data_name ?? suite.dataset.name, split: opts.data_split ?? suite.dataset.split });
  const files = await splitFiles(source, source.split);
  const items: EvalItem[] = [];
  outer: for (const file of files) {
    for await (const row of readRows(file)) {
      if (opts.limit !== null && items.length >= opts.limit) break outer;
      items.push(suite.parseRow(row.data, row.at, opts.system_prompt));
    }
  }
  if (items.length === 0) throw new DataFormatError(`${dataPath}: no ${suite.name} examples in split "${source.split}"`);
  return { suite, items, source: dataPath };
}
