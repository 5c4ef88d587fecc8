// A suite's examples from files in the public dataset's layout (the hf loader's layouts:
// parquet/jsonl/json/arrow shards, config folders, split names): the shipped sample under
// data/eval/<suite>/ by default, the full set from a user's folder or file, or from a Hub id (read
// from the Hugging Face cache when it is there, else downloaded: hf/hub.ts), as the reference's
// load_dataset(path) takes either. A multi-config suite (MMLU-Redux, C-Eval) reads each subject's
// config in turn. `limit` picks examples as the suite's reference does (suite.limitPick): the
// first rows in file order by default, as limit_dataset without a shuffle seed. A row this port
// cannot check (the suite's UnsupportedRowError) counts toward `limit` as the reference's row
// would, then is left out of the examples and listed in `skipped` with why; with
// skip_unsupported false it is refused instead.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataFormatError } from '../errors.js';
import { HfSourceSchema } from '../hf/config.js';
import { readRows } from '../hf/readers.js';
import { isLocalPath, shuffled, splitFiles } from '../hf/source.js';
import { pyShuffled } from '../python-random.js';
import { SUITES, type EvalItem, type Suite } from './suites/index.js';
import { UnsupportedRowError, type LimitPick, type SkippedRow } from './suites/types.js';

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
  /** Skip (and report) rows this port cannot check; false: refuse them. Absent (configs from before the field): true. */
  skip_unsupported?: boolean;
}

export interface BenchmarkData {
  suite: Suite;
  /** The examples to sample and score, skipped rows left out (an example's index is its place here). */
  items: EvalItem[];
  /** The rows picked but left out as unsupported, in the order they were read. */
  skipped: SkippedRow[];
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

/** An `owner/name` Hub id that names nothing on disk. */
export const isBenchmarkHubId = (p: string, cwd: string = process.cwd()) => p.includes('/') && !isLocalPath(p, cwd);

/**
 * `--data` / data_path as the loader will read it: an existing local path made absolute, or an
 * `owner/name` Hub id kept as it is (read from the Hugging Face cache, else the Hub); anything
 * else is an error (a bare name is taken for a missing folder, not a Hub id).
 */
export function benchmarkDataPath(p: string, cwd: string = process.cwd()): string {
  if (isBenchmarkHubId(p, cwd)) return p;
  const abs = path.resolve(cwd, p);
  if (existsSync(abs)) return abs;
  throw new DataFormatError(
    `${p} does not exist (a local folder or file in the dataset's layout, or a Hub id such as cais/mmlu; fetch one with \`huggingface-cli download <id> --repo-type dataset\`)`,
  );
}

/** The configs to read: the one asked for, the suite's one, or each of its subjects. */
function configsToRead(suite: Suite, dataName: string | null): Array<string | null> {
  if (dataName !== null) return [dataName];
  return suite.dataset.configs ? [...suite.dataset.configs] : [suite.dataset.name];
}

/** The first `limit` of `items` as the suite's reference picks them. */
export function pickLimit<T>(items: readonly T[], limit: number | null, pick: LimitPick | undefined): T[] {
  if (limit === null) return [...items];
  if (pick?.kind === 'hf_shuffle') return shuffled(items, pick.seed).slice(0, limit);
  if (pick?.kind === 'python_shuffle' && limit < items.length) return pyShuffled(items, pick.seed).slice(0, limit);
  return items.slice(0, limit);
}

export async function loadBenchmark(opts: BenchmarkDataOptions): Promise<BenchmarkData> {
  const suite = suiteNamed(opts.suite);
  const dataPath = opts.data_path ?? path.join(samplesDir(), suite.sample);
  const split = opts.data_split ?? suite.dataset.split;
  const configs = configsToRead(suite, opts.data_name);
  // Without a shuffle, reading stops at `limit`; a shuffle needs every row first.
  const stopAt = suite.limitPick ? null : opts.limit;
  // As the reference's runner: no system prompt set (null) takes the suite's recommended one.
  const systemPrompt = opts.system_prompt ?? suite.recommendedSystemPrompt ?? null;
  const skip = opts.skip_unsupported !== false;
  const rows: Array<EvalItem | SkippedRow> = [];
  const missing: string[] = [];
  outer: for (const config of configs) {
    const source = HfSourceSchema.parse({ path: dataPath, name: config, split });
    let files;
    try {
      files = await splitFiles(source, split);
    } catch (err) {
      // As the reference: a subject the data lacks is left out (at least one must be there).
      if (configs.length > 1 && err instanceof DataFormatError) {
        missing.push(`${config}: ${err.message}`);
        continue;
      }
      throw err;
    }
    for (const file of files) {
      for await (const row of readRows(file)) {
        if (stopAt !== null && rows.length >= stopAt) break outer;
        if (suite.include && !suite.include(row.data)) continue;
        rows.push(parseOrSkip(suite, row.data, row.at, systemPrompt, config, skip));
      }
    }
  }
  if (rows.length === 0) {
    const why = missing.length === configs.length ? `; none of its ${configs.length} configs is there (${missing[0]})` : '';
    throw new DataFormatError(`${dataPath}: no ${suite.name} examples in split "${split}"${why}`);
  }
  const picked = pickLimit(rows, opts.limit, suite.limitPick);
  const items = picked.filter((r): r is EvalItem => !isSkipped(r));
  const skipped = picked.filter(isSkipped);
  if (items.length === 0) {
    throw new DataFormatError(`${dataPath}: every one of the ${skipped.length} ${suite.name} rows picked is one this port cannot check, nothing to score (${skipped[0]!.at}: ${skipped[0]!.reason})`);
  }
  return { suite, items, skipped, source: dataPath };
}

const isSkipped = (r: EvalItem | SkippedRow): r is SkippedRow => 'reason' in r;

/** The row's example, or its skip record when the suite cannot check it here (refused when `skip` is false). */
function parseOrSkip(suite: Suite, data: Record<string, unknown>, at: string, systemPrompt: string | null, config: string | null, skip: boolean): EvalItem | SkippedRow {
  try {
    return suite.parseRow(data, at, systemPrompt, config);
  } catch (err) {
    if (!(err instanceof UnsupportedRowError)) throw err;
    if (!skip) throw new DataFormatError(`${at}: ${err.reason} (skip_unsupported is false; leave it at its default, true, to score the other rows and list this one as skipped)`);
    return { id: err.id, at, reason: err.reason };
  }
}
