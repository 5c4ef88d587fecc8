// DPO datasets from comparison JSONL (spec §4.2, reference DPODatasetBuilderFromComparisons): each
// row becomes [chosen, rejected] datums — prompt + completion rendered with LAST_ASSISTANT_MESSAGE,
// raw 0/1 weights (reduction "none") — and a batch of `batch_size` rows is up to 2·batch_size
// datums interleaved c0, r0, c1, r1, …. A comparisons file keeps its order, as the reference's
// ComparisonBuilderFromJsonl does (`test_size` holds out a `shuffle_seed` sample, one batch);
// `setEpoch(seed)` shuffles the train rows as the chat datasets do. An `hf` source
// (docs/hf-datasets.md) reads a Hugging Face dataset instead, shuffled on load like the reference's
// Hub builders.

import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Datum } from '../../backends/types.js';
import { DataValidationError } from '../errors.js';
import { TrainOnWhat, type Renderer } from '../renderers/types.js';
import { HfSourceSchema } from '../hf/config.js';
import { numpyPermutation } from '../shuffle.js';
import { datumFromModelInputWeights } from '../supervised/datum.js';
import type { Tokenizer } from '../tokenizer.js';
import { loadComparisonsJsonl, splitFileComparisons } from './comparisons.js';
import { checkCompletionsEndWithAssistant, comparisonDatumsBuilder, PreferenceDataset } from './preference-dataset.js';
import { buildHfPreferenceDatasets } from './hf-comparisons.js';

export {
  checkCompletionsEndWithAssistant,
  comparisonDatumsBuilder,
  comparisonToDatums,
  PreferenceDataset,
  type PairOrFiltered,
  type PreferenceBatch,
  type PreferencePair,
  type PreferenceRow,
  type SkippedComparisonRow,
} from './preference-dataset.js';

export const BUILTIN_PREFERENCE_DATASETS = {
  example_preferences: 'data/example_preferences.jsonl',
} as const;
type BuiltinName = keyof typeof BUILTIN_PREFERENCE_DATASETS;

export const PreferenceDatasetConfigSchema = z
  .strictObject({
    /** JSONL of comparisons (see comparisons.ts); relative paths resolve against the config file. */
    file_path: z.string().min(1).optional(),
    builtin: z.enum(Object.keys(BUILTIN_PREFERENCE_DATASETS) as [BuiltinName, ...BuiltinName[]]).optional(),
    /** A Hugging Face dataset (Hub id or local folder/file); see docs/hf-datasets.md. */
    hf: HfSourceSchema.optional(),
    /** Rows (comparisons) per batch: up to twice as many datums. */
    batch_size: z.int().positive(),
    max_length: z.int().positive().nullable().default(null),
    test_size: z.int().nonnegative().default(0),
    shuffle_seed: z.int().nonnegative().default(0),
    renderer_name: z.string().min(1).optional(),
  })
  .superRefine((cfg, ctx) => {
    const set = (['file_path', 'builtin', 'hf'] as const).filter((k) => cfg[k] !== undefined);
    if (set.length !== 1) ctx.addIssue({ code: 'custom', path: [set[1] ?? 'file_path'], message: 'set exactly one of file_path, builtin and hf' });
  });
export type PreferenceDatasetConfig = z.output<typeof PreferenceDatasetConfigSchema>;
export type PreferenceDatasetConfigInput = z.input<typeof PreferenceDatasetConfigSchema>;

function builtinPath(rel: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, rel))) return path.join(dir, rel);
    dir = path.dirname(dir);
  }
  throw new Error(`cannot find ${rel} above ${fileURLToPath(import.meta.url)}`);
}

export function resolvePreferenceFile(cfg: PreferenceDatasetConfig, baseDir?: string): { absPath: string; displayPath: string } {
  if (cfg.builtin !== undefined) {
    const rel = BUILTIN_PREFERENCE_DATASETS[cfg.builtin];
    return { absPath: builtinPath(rel), displayPath: rel };
  }
  return { absPath: path.resolve(baseDir ?? process.cwd(), cfg.file_path as string), displayPath: cfg.file_path as string };
}

export interface PreferenceDatasets {
  train: PreferenceDataset;
  test?: PreferenceDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
  /** `hf` sources: "file row N: reason" for rows the format skipped while loading (ties, malformed pairs). */
  skipped?: string[];
}

export async function buildPreferenceDatasets(
  cfgInput: PreferenceDatasetConfigInput | PreferenceDatasetConfig,
  model: string | ModelChoice,
  opts: { baseDir?: string } = {},
): Promise<PreferenceDatasets> {
  const cfg = PreferenceDatasetConfigSchema.parse(cfgInput);
  if (cfg.hf !== undefined) {
    const { renderer, tokenizer } = await rendererForModel(model, cfg.renderer_name);
    return { ...(await buildHfPreferenceDatasets(cfg, cfg.hf, renderer, opts)), renderer, tokenizer };
  }
  const { absPath, displayPath } = resolvePreferenceFile(cfg, opts.baseDir);
  const [rows, { renderer, tokenizer }] = await Promise.all([
    loadComparisonsJsonl(absPath, displayPath),
    rendererForModel(model, cfg.renderer_name),
  ]);
  for (const row of rows) checkCompletionsEndWithAssistant(row, `${displayPath}:${row.line}`);

  const { train: trainRows, test: testRows } = splitFileComparisons(rows, cfg.test_size, (n) => numpyPermutation(cfg.shuffle_seed, n));
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(
      `${displayPath}: ${trainRows.length} training comparisons (after holding out ${testRows?.length ?? 0} for test) is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }
  const toDatums = comparisonDatumsBuilder(renderer, cfg.max_length, (row) => `${displayPath}:${row.line}`);
  return {
    train: new PreferenceDataset(trainRows, cfg.batch_size, toDatums, displayPath),
    test: testRows ? new PreferenceDataset(testRows, testRows.length, toDatums, displayPath) : undefined,
    renderer,
    tokenizer,
  };
}

