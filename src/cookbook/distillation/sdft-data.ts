// SDFT's datasets (the reference's recipes/sdft/datasets.py): questions for the student and golden
// answers for the teacher's demonstration. The rows are the Hugging Face dataset's own
// (SciKnowEval's, ToolAlpaca's or the SDFT paper's {prompt, golden_response}), from a local JSONL
// or, as the reference's `load_dataset`, an `hf` source (a local folder or the Hub cache, as
// src/cookbook/hf reads them); then filtered, shuffled with Python's Random(42) and split as the
// reference's loaders.
import { z } from 'zod';
import { DataFormatError } from '../errors.js';
import { HfSourceSchema } from '../hf/config.js';
import { readRows } from '../hf/readers.js';
import { splitFiles } from '../hf/source.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import { pyShuffled } from '../python-random.js';

const BuilderFields = {
  /** JSONL of the dataset's rows (relative to the config file); or `hf`. */
  file_path: z.string().min(1).optional(),
  /** The dataset as the reference loads it, e.g. {"path": "hicai-zju/SciKnowEval", "split": "test"}. */
  hf: HfSourceSchema.nullable().default(null),
  groups_per_batch: z.int().positive().default(32),
  group_size: z.int().positive().default(1),
  train_fraction: z.number().gt(0).max(1).default(0.9),
};

export const SciKnowEvalSDFTSchema = z.strictObject({
  kind: z.literal('sciknoweval'),
  ...BuilderFields,
  domain: z.string().min(1).default('Chemistry'),
});
export const ToolAlpacaSDFTSchema = z.strictObject({ kind: z.literal('toolalpaca'), ...BuilderFields });
export const SDFTDatasetSchema = z.discriminatedUnion('kind', [SciKnowEvalSDFTSchema, ToolAlpacaSDFTSchema]).superRefine((d, ctx) => {
  if ((d.file_path === undefined) === (d.hf === null)) ctx.addIssue({ code: 'custom', path: ['file_path'], message: 'set exactly one of file_path and hf' });
});
export type SDFTDatasetConfig = z.output<typeof SDFTDatasetSchema>;

export interface SDFTSplit {
  questions: string[];
  goldenAnswers: string[];
}
export interface SDFTData {
  train: SDFTSplit;
  test: SDFTSplit;
  /** The dataset's logging tag (the reference's dataset_name). */
  name: string;
}

const SEED = 42;

const obj = (data: unknown, at: string): Record<string, unknown> => {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new DataFormatError(`${at}: expected a JSON object`);
  return data as Record<string, unknown>;
};
const str = (row: Record<string, unknown>, key: string, at: string): string => {
  if (typeof row[key] !== 'string') throw new DataFormatError(`${at}: "${key}" must be a string`);
  return row[key] as string;
};

/** `_format_sciknoweval_choices`: "A: text" lines. */
function formatChoices(choices: unknown, at: string): string {
  const c = obj(choices, `${at}: "choices"`);
  const labels = (c.label ?? []) as unknown[];
  const texts = (c.text ?? []) as unknown[];
  if (!Array.isArray(labels) || !Array.isArray(texts)) throw new DataFormatError(`${at}: "choices" must have "label" and "text" lists`);
  const n = Math.min(labels.length, texts.length);
  return Array.from({ length: n }, (_, i) => `${String(labels[i])}: ${String(texts[i])}`).join('\n');
}

const splitAt = (n: number, fraction: number) => Math.trunc(n * fraction);

/** A dataset's rows with where each is (`file:line`, or `file row N` for Parquet/Arrow). */
export interface SourceRow {
  row: Record<string, unknown>;
  at: string;
}

export const jsonlRows = (text: string, displayPath: string): SourceRow[] =>
  parseJsonlRows(text, displayPath, (data, at) => ({ row: obj(data, at), at }), { emptyMessage: `${displayPath}: no rows` });

/** load_sciknoweval: the domain's L3 MCQ rows, shuffled with Random(42), the first train_fraction for training. */
export function loadSciKnowEval(rows: SourceRow[], displayPath: string, domain: string, trainFraction: number): SDFTData {
  const filtered = rows.filter(({ row }) => {
    const details = row.details as Record<string, unknown> | undefined;
    return row.domain === domain && details?.level === 'L3' && String(row.type ?? '').includes('mcq');
  });
  if (filtered.length === 0) {
    throw new DataFormatError(`${displayPath}: no SciKnowEval examples for domain=${domain}, level=L3, MCQ type (of ${rows.length} rows)`);
  }
  const shuffled = pyShuffled(filtered, SEED);
  const cut = splitAt(shuffled.length, trainFraction);
  const extract = (part: typeof shuffled): SDFTSplit => ({
    questions: part.map(
      ({ row, at }) =>
        `${str(row, 'question', at)}\n\n${formatChoices(row.choices, at)}\n` +
        'Please reason step by step, then give your answer as <answer>X</answer> where X is the letter of the correct option.',
    ),
    goldenAnswers: part.map(({ row, at }) => {
      if (row.answerKey === undefined || row.answerKey === null) throw new DataFormatError(`${at}: "answerKey" is missing`);
      return String(row.answerKey);
    }),
  });
  return { train: extract(shuffled.slice(0, cut)), test: extract(shuffled.slice(cut)), name: 'sciknoweval' };
}

/**
 * load_toolalpaca: Hugging Face rows {instruction, output} or the paper's {prompt, golden_response}
 * (a list joined by newlines), indices shuffled with Random(42).
 */
export function loadToolAlpaca(source: SourceRow[], trainFraction: number): SDFTData {
  const rows = source.map(({ row, at }) => {
    if ('prompt' in row) {
      const golden = row.golden_response;
      return { question: str(row, 'prompt', at), answer: Array.isArray(golden) ? golden.map(String).join('\n') : String(golden) };
    }
    return { question: str(row, 'instruction', at), answer: String(row.output) };
  });
  const indices = pyShuffled(
    rows.map((_, i) => i),
    SEED,
  );
  const cut = splitAt(indices.length, trainFraction);
  const pick = (ix: number[]): SDFTSplit => ({ questions: ix.map((i) => rows[i].question), goldenAnswers: ix.map((i) => rows[i].answer) });
  return { train: pick(indices.slice(0, cut)), test: pick(indices.slice(cut)), name: 'toolalpaca' };
}

async function sourceRows(cfg: SDFTDatasetConfig): Promise<{ rows: SourceRow[]; displayPath: string }> {
  if (cfg.file_path !== undefined) return { rows: jsonlRows(await readTextFile(cfg.file_path, cfg.file_path), cfg.file_path), displayPath: cfg.file_path };
  const hf = cfg.hf!;
  const rows: SourceRow[] = [];
  for (const file of await splitFiles(hf, hf.split)) for await (const raw of readRows(file)) rows.push({ row: raw.data, at: raw.at });
  if (rows.length === 0) throw new DataFormatError(`dataset.hf: ${hf.path} split "${hf.split}" has no rows`);
  return { rows, displayPath: `${hf.path} (${hf.split})` };
}

export async function loadSDFTData(cfg: SDFTDatasetConfig): Promise<SDFTData> {
  const { rows, displayPath } = await sourceRows(cfg);
  return cfg.kind === 'sciknoweval' ? loadSciKnowEval(rows, displayPath, cfg.domain, cfg.train_fraction) : loadToolAlpaca(rows, cfg.train_fraction);
}

/** SDFTDataset's batch `index`: positions [index·B, min((index+1)·B, n)). */
export function sdftBatchRange(n: number, groupsPerBatch: number, index: number): [number, number] {
  const start = index * groupsPerBatch;
  const end = Math.min(start + groupsPerBatch, n);
  if (start >= end) throw new RangeError(`Batch index ${index} out of range`);
  return [start, end];
}
