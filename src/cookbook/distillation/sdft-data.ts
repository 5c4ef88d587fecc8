// SDFT's datasets (the reference's recipes/sdft/datasets.py): questions for the student and golden
// answers for the teacher's demonstration. Nothing is downloaded at run time: each reads a local
// JSONL of the Hugging Face dataset's own rows (SciKnowEval's, ToolAlpaca's or the SDFT paper's
// {prompt, golden_response}), then filters, shuffles with Python's Random(42) and splits as the
// reference's loaders.
import { z } from 'zod';
import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import { pyShuffled } from '../python-random.js';

const BuilderFields = {
  /** JSONL of the dataset's rows (relative to the config file). */
  file_path: z.string().min(1),
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
export const SDFTDatasetSchema = z.discriminatedUnion('kind', [SciKnowEvalSDFTSchema, ToolAlpacaSDFTSchema]);
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

/** load_sciknoweval: the domain's L3 MCQ rows, shuffled with Random(42), the first train_fraction for training. */
export function loadSciKnowEval(text: string, displayPath: string, domain: string, trainFraction: number): SDFTData {
  const rows = parseJsonlRows(text, displayPath, (data, at) => ({ row: obj(data, at), at }), { emptyMessage: `${displayPath}: no rows` });
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
export function loadToolAlpaca(text: string, displayPath: string, trainFraction: number): SDFTData {
  const rows = parseJsonlRows(
    text,
    displayPath,
    (data, at) => {
      const row = obj(data, at);
      if ('prompt' in row) {
        const golden = row.golden_response;
        return { question: str(row, 'prompt', at), answer: Array.isArray(golden) ? golden.map(String).join('\n') : String(golden) };
      }
      return { question: str(row, 'instruction', at), answer: String(row.output) };
    },
    { emptyMessage: `${displayPath}: no rows` },
  );
  const indices = pyShuffled(
    rows.map((_, i) => i),
    SEED,
  );
  const cut = splitAt(indices.length, trainFraction);
  const pick = (ix: number[]): SDFTSplit => ({ questions: ix.map((i) => rows[i].question), goldenAnswers: ix.map((i) => rows[i].answer) });
  return { train: pick(indices.slice(0, cut)), test: pick(indices.slice(cut)), name: 'toolalpaca' };
}

export async function loadSDFTData(cfg: SDFTDatasetConfig, displayPath = cfg.file_path): Promise<SDFTData> {
  const text = await readTextFile(cfg.file_path, displayPath);
  return cfg.kind === 'sciknoweval' ? loadSciKnowEval(text, displayPath, cfg.domain, cfg.train_fraction) : loadToolAlpaca(text, displayPath, cfg.train_fraction);
}

/** SDFTDataset's batch `index`: positions [index·B, min((index+1)·B, n)). */
export function sdftBatchRange(n: number, groupsPerBatch: number, index: number): [number, number] {
  const start = index * groupsPerBatch;
  const end = Math.min(start + groupsPerBatch, n);
  if (start >= end) throw new RangeError(`Batch index ${index} out of range`);
  return [start, end];
}
