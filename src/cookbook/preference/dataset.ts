// DPO datasets from comparison JSONL (spec §4.2, reference DPODatasetBuilderFromComparisons): each
// row becomes [chosen, rejected] datums — prompt + completion rendered with LAST_ASSISTANT_MESSAGE,
// raw 0/1 weights (reduction "none") — and a batch of `batch_size` rows is up to 2·batch_size
// datums interleaved c0, r0, c1, r1, …. Rows are shuffled once with `shuffle_seed`, the first
// `test_size` rows are the test set (one batch), and `setEpoch(seed)` reshuffles the train rows as
// the chat datasets do.

import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Datum } from '../../backends/types.js';
import { DataValidationError } from '../errors.js';
import { TrainOnWhat, type Renderer } from '../renderers/types.js';
import { EpochBatches } from '../epoch-batches.js';
import { numpyPermutation } from '../shuffle.js';
import { datumFromModelInputWeights } from '../supervised/datum.js';
import type { Tokenizer } from '../tokenizer.js';
import { chosenAndRejected, loadComparisonsJsonl, type ComparisonRow, type LabeledComparison } from './comparisons.js';

export const BUILTIN_PREFERENCE_DATASETS = {
  example_preferences: 'data/example_preferences.jsonl',
} as const;
type BuiltinName = keyof typeof BUILTIN_PREFERENCE_DATASETS;

export const PreferenceDatasetConfigSchema = z
  .strictObject({
    /** JSONL of comparisons (see comparisons.ts); relative paths resolve against the config file. */
    file_path: z.string().min(1).optional(),
    builtin: z.enum(Object.keys(BUILTIN_PREFERENCE_DATASETS) as [BuiltinName, ...BuiltinName[]]).optional(),
    /** Rows (comparisons) per batch: up to twice as many datums. */
    batch_size: z.int().positive(),
    max_length: z.int().positive().nullable().default(null),
    test_size: z.int().nonnegative().default(0),
    shuffle_seed: z.int().nonnegative().default(0),
    renderer_name: z.string().min(1).optional(),
  })
  .superRefine((cfg, ctx) => {
    if ((cfg.file_path === undefined) === (cfg.builtin === undefined)) {
      ctx.addIssue({ code: 'custom', path: cfg.file_path === undefined ? ['file_path'] : ['builtin'], message: 'set exactly one of file_path and builtin' });
    }
  });
export type PreferenceDatasetConfig = z.output<typeof PreferenceDatasetConfigSchema>;
export type PreferenceDatasetConfigInput = z.input<typeof PreferenceDatasetConfigSchema>;

/** A row's datums: [chosen, rejected], or [] when the row is filtered out. */
export interface PreferencePair {
  /** The row's line in the source file: a stable id across shuffles (used to cache reference logprobs). */
  line: number;
  datums: [Datum, Datum] | [];
}

export interface PreferenceBatch {
  /** Interleaved c0, r0, c1, r1, … of the rows that were not filtered. */
  datums: Datum[];
  /** Source lines of the pairs in `datums`, in order. */
  lines: number[];
  /** Source lines of rows filtered out (with the reason), as the reference's warnings. */
  filtered: string[];
}

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

/**
 * [chosen, rejected] for one labeled comparison, or a reason it is filtered: a side whose
 * completion has no trainable token left after truncation to `maxLength` cannot be compared.
 */
export function comparisonToDatums(lc: LabeledComparison, renderer: Renderer, maxLength: number | null): { datums: [Datum, Datum] } | { filtered: string } {
  const { chosen, rejected } = chosenAndRejected(lc);
  const side = (completion: typeof chosen) => {
    const { modelInput, weights } = renderer.buildSupervisedExample([...lc.comparison.prompt_conversation, ...completion], TrainOnWhat.LAST_ASSISTANT_MESSAGE);
    return datumFromModelInputWeights(modelInput, weights, maxLength, 'none');
  };
  const datums: [Datum, Datum] = [side(chosen), side(rejected)];
  const empty = datums.findIndex((d) => !d.loss_fn_inputs.weights.data.some((w) => w > 0));
  if (empty >= 0) return { filtered: `the ${empty === 0 ? 'chosen' : 'rejected'} completion has no trainable tokens after truncation to max_length=${maxLength}` };
  return { datums };
}

export class PreferenceDataset {
  private readonly batches: EpochBatches<ComparisonRow, { datums: [Datum, Datum] } | { filtered: string }>;

  constructor(
    rows: ComparisonRow[],
    readonly batchSize: number,
    toDatums: (row: ComparisonRow) => { datums: [Datum, Datum] } | { filtered: string },
    private readonly displayPath: string,
  ) {
    this.batches = new EpochBatches(rows, batchSize, toDatums);
  }

  /** Full batches of rows (a last partial batch is dropped). */
  get length(): number {
    return this.batches.length;
  }

  setEpoch(seed: number): void {
    this.batches.setEpoch(seed);
  }

  getBatch(index: number): PreferenceBatch {
    const batch: PreferenceBatch = { datums: [], lines: [], filtered: [] };
    for (const { row, value } of this.batches.batch(index)) {
      if ('filtered' in value) batch.filtered.push(`${this.displayPath}:${row.line}: ${value.filtered}`);
      else {
        batch.datums.push(...value.datums);
        batch.lines.push(row.line);
      }
    }
    return batch;
  }
}

export interface PreferenceDatasets {
  train: PreferenceDataset;
  test?: PreferenceDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
}

export async function buildPreferenceDatasets(
  cfgInput: PreferenceDatasetConfigInput | PreferenceDatasetConfig,
  model: string | ModelChoice,
  opts: { baseDir?: string } = {},
): Promise<PreferenceDatasets> {
  const cfg = PreferenceDatasetConfigSchema.parse(cfgInput);
  const { absPath, displayPath } = resolvePreferenceFile(cfg, opts.baseDir);
  const [rows, { renderer, tokenizer }] = await Promise.all([
    loadComparisonsJsonl(absPath, displayPath),
    rendererForModel(model, cfg.renderer_name),
  ]);
  for (const row of rows) {
    for (const [key, completion] of [['completion_A', row.comparison.completion_A], ['completion_B', row.comparison.completion_B]] as const) {
      const last = completion[completion.length - 1];
      if (last.role !== 'assistant') {
        throw new DataValidationError(`${displayPath}:${row.line}: the last message of ${key} is ${last.role}, not assistant, so there is nothing to compare`);
      }
    }
  }

  const shuffled = numpyPermutation(cfg.shuffle_seed, rows.length).map((i) => rows[i]);
  let trainRows = shuffled;
  let testRows: ComparisonRow[] | undefined;
  if (cfg.test_size > 0 && shuffled.length > cfg.test_size) {
    testRows = shuffled.slice(0, cfg.test_size);
    trainRows = shuffled.slice(cfg.test_size);
  }
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(
      `${displayPath}: ${trainRows.length} training comparisons (after holding out ${testRows?.length ?? 0} for test) is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }
  const toDatums = (row: ComparisonRow) => {
    try {
      return comparisonToDatums(row, renderer, cfg.max_length);
    } catch (e) {
      const err = e as Error;
      err.message = `${displayPath}:${row.line}: ${err.message}`;
      throw err;
    }
  };
  return {
    train: new PreferenceDataset(trainRows, cfg.batch_size, toDatums, displayPath),
    test: testRows ? new PreferenceDataset(testRows, testRows.length, toDatums, displayPath) : undefined,
    renderer,
    tokenizer,
  };
}
