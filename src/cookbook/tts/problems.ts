// The problems a TTS run scores, each a question and its known answer: the reference's
// _load_problems over a local JSONL file. `math` rows are MATH-500's (the answer is the last
// \boxed{} of "solution"), `gsm8k` rows GSM8K's (the answer after "####"); rows whose answer cannot
// be extracted are skipped as there, and the rest shuffled with random.Random(seed) before the first
// `limit` are taken. `problems` rows are {"question", "answer"} (run_small_experiment's list), in file order.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import { pyShuffled } from '../python-random.js';
import { extractGsm8kFinalAnswer } from '../rl/envs/math.js';
import { extractBoxed } from '../rl/grading.js';

export const TTS_DATASETS = ['problems', 'math', 'gsm8k'] as const;
export type TtsDataset = (typeof TTS_DATASETS)[number];

export interface TtsProblem {
  question: string;
  answer: string;
}

/** The shipped file of each dataset, relative to the repository root. */
const SHIPPED: Record<TtsDataset, string> = {
  problems: 'data/tts/problems.jsonl',
  math: 'data/eval/math500/test.jsonl',
  gsm8k: 'data/eval/gsm8k/main/test-00000-of-00001.jsonl',
};

/** The shipped file of a dataset (found above this module, as the eval samples are). */
export function shippedProblems(dataset: TtsDataset): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const file = path.join(dir, SHIPPED[dataset]);
    if (existsSync(file)) return file;
    dir = path.dirname(dir);
  }
  throw new Error(`cannot find ${SHIPPED[dataset]} above ${fileURLToPath(import.meta.url)}`);
}

function stringField(row: unknown, key: string, at: string): string {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new DataFormatError(`${at}: expected a JSON object`);
  const v = (row as Record<string, unknown>)[key];
  if (typeof v !== 'string') throw new DataFormatError(`${at}: "${key}" must be a string`);
  return v;
}

/** A row's problem, or null when the reference would skip it (no extractable answer). */
function parseRow(dataset: TtsDataset, row: unknown, at: string): TtsProblem | null {
  if (dataset === 'problems') return { question: stringField(row, 'question', at), answer: stringField(row, 'answer', at) };
  const [questionKey, solutionKey, extract] = dataset === 'math' ? ['problem', 'solution', extractBoxed] : ['question', 'answer', extractGsm8kFinalAnswer];
  const question = stringField(row, questionKey, at);
  const solution = stringField(row, solutionKey, at);
  try {
    return { question, answer: extract(solution) };
  } catch {
    return null;
  }
}

export async function loadTtsProblems(opts: { dataset: TtsDataset; data_path: string | null; limit: number | null; seed: number }): Promise<{ problems: TtsProblem[]; source: string }> {
  const file = opts.data_path ?? shippedProblems(opts.dataset);
  const rows = parseJsonlRows(await readTextFile(file, file), file, (row, at) => parseRow(opts.dataset, row, at), { emptyMessage: `${file}: no problems` });
  const kept = rows.filter((p): p is TtsProblem => p !== null);
  if (kept.length === 0) throw new DataFormatError(`${file}: no row has an answer the ${opts.dataset} format can extract`);
  const ordered = opts.dataset === 'problems' ? kept : pyShuffled(kept, opts.seed);
  return { problems: opts.limit === null ? ordered : ordered.slice(0, opts.limit), source: file };
}
