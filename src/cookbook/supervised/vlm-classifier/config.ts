// Config of the VLM image-classifier recipe (reference recipes/vlm_classifier): the training
// dataset (`dataset.vlm_classifier`, the reference's ClassifierDatasetConfig and its named dataset
// builders) and the accuracy evaluator (an `evaluators` entry of kind `vlm_classifier`, the
// reference's ClassifierEvaluatorConfig). Field names and defaults are the reference's.

import { z } from 'zod';
import { HUB_ID_RE } from '../../hf/hub.js';

/**
 * The reference's named builders (data.py DATASETS, eval.py EVALUATORS) and their Hub ids, plus
 * `shapes`: the small image set shipped in `data/shapes` (scripts/gen-shapes-dataset.mjs). Each has
 * a `train` and a `test` split, an `image` column and a ClassLabel `label` column.
 */
export const NAMED_CLASSIFIER_DATASETS = {
  caltech101: 'dpdl-benchmark/caltech101',
  flowers102: 'dpdl-benchmark/oxford_flowers102',
  pets: 'dpdl-benchmark/oxford_iiit_pet',
  cars: 'tanganke/stanford_cars',
  shapes: 'data/shapes',
} as const;
export type NamedClassifierDataset = keyof typeof NAMED_CLASSIFIER_DATASETS;

/** Longer names some users know the datasets by. */
const ALIASES: Record<string, NamedClassifierDataset> = { oxford_pets: 'pets', stanford_cars: 'cars', oxford_flowers102: 'flowers102' };

export const isNamedClassifierDataset = (name: string): boolean => name in NAMED_CLASSIFIER_DATASETS || name in ALIASES;
export const canonicalDatasetName = (name: string): NamedClassifierDataset | undefined =>
  name in NAMED_CLASSIFIER_DATASETS ? (name as NamedClassifierDataset) : ALIASES[name];

/** A named dataset, or a Hub id (`owner/name`) read as the reference reads it (`datasets.load_dataset(id)`). */
const DatasetNameSchema = z
  .string()
  .min(1)
  .refine((s) => isNamedClassifierDataset(s) || (s.includes('/') && HUB_ID_RE.test(s)), {
    message: `a named dataset (${[...Object.keys(NAMED_CLASSIFIER_DATASETS), ...Object.keys(ALIASES)].join(', ')}) or a Hugging Face Hub id "owner/name"`,
  });

const ColumnNames = {
  image_column_name: z.string().min(1).default('image'),
  label_column_name: z.string().min(1).default('label'),
};

/**
 * `dataset.vlm_classifier`: the chat dataset config's `batch_size`, `max_length` (null: the
 * reference's 8192), `train_on_what` (default last_assistant_message), `renderer_name` and
 * `test_size` (caps the NLL test set; 0: the whole test split, as the reference) apply too.
 */
export const VlmClassifierSourceSchema = z.strictObject({
  /** A named dataset or a Hub id; null: the chat config's `hf` source (any local folder or Hub id, with its split names). */
  dataset: DatasetNameSchema.nullable().default(null),
  ...ColumnNames,
  /** How many passes over the (sampled) rows one epoch makes; a fraction cuts the last pass short. */
  num_repeats: z.number().positive().default(1),
  /** Few-shot: keep this many rows per class (seeded by `subset_seed`); null keeps every row. The test set is never sampled. */
  examples_per_class: z.int().positive().nullable().default(null),
  subset_seed: z.int().nonnegative().default(0),
  /** Images whose longest side is larger are resized to it (aspect kept, Lanczos). */
  max_image_size: z.int().positive().default(480),
  /** Training images are flipped left-right with this probability (the test set never is). */
  hflip_probability: z.number().min(0).max(1).default(0.5),
  /**
   * Seeds the flips. The reference draws them from Python's unseeded global `random`; here a flip is
   * a pure function of (augment_seed, epoch, position in the epoch), so a resumed or replayed run
   * flips exactly the images an uninterrupted one flips.
   */
  augment_seed: z.int().nonnegative().default(0),
  /** Also build the test split as a test set: `test/nll` at eval steps (the reference's run_nll_evaluator). */
  run_nll_evaluator: z.boolean().default(false),
});
export type VlmClassifierSource = z.output<typeof VlmClassifierSourceSchema>;

interface SourceFields {
  file_path?: unknown;
  builtin?: unknown;
  comparisons?: unknown;
  hf?: { format?: string; columns?: Record<string, string>; streaming?: boolean; test_split?: string | null };
  vlm_classifier?: VlmClassifierSource;
}

/** What a `vlm_classifier` dataset cannot be combined with (zod superRefine of the chat dataset config). */
export function checkVlmClassifierSource(cfg: SourceFields, ctx: z.RefinementCtx): void {
  const vc = cfg.vlm_classifier!;
  for (const key of ['file_path', 'builtin', 'comparisons'] as const) {
    if (cfg[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `a vlm_classifier dataset reads images from vlm_classifier.dataset or hf, not ${key}` });
  }
  if (vc.dataset === null && cfg.hf === undefined) {
    ctx.addIssue({ code: 'custom', path: ['vlm_classifier', 'dataset'], message: 'set vlm_classifier.dataset (a named dataset or a Hub id) or hf (a local folder or Hub id)' });
  }
  if (vc.dataset !== null && cfg.hf !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['hf'], message: 'set either vlm_classifier.dataset or hf, not both' });
  }
  if (cfg.hf === undefined) return;
  if (cfg.hf.format !== undefined) ctx.addIssue({ code: 'custom', path: ['hf', 'format'], message: 'a vlm_classifier dataset has its own row format: remove hf.format' });
  if (cfg.hf.columns && Object.keys(cfg.hf.columns).length > 0) {
    ctx.addIssue({ code: 'custom', path: ['hf', 'columns'], message: 'name the columns with vlm_classifier.image_column_name and label_column_name instead' });
  }
  if (cfg.hf.streaming) ctx.addIssue({ code: 'custom', path: ['hf', 'streaming'], message: 'a vlm_classifier dataset reads its labels whole and its images batch by batch: streaming is not supported' });
  if (vc.run_nll_evaluator && !cfg.hf.test_split) {
    ctx.addIssue({ code: 'custom', path: ['hf', 'test_split'], message: 'run_nll_evaluator needs a test split: set hf.test_split (e.g. "test")' });
  }
}

/** An `evaluators` entry: the reference's ClassifierEvaluator (accuracy of the class named by a greedy reply). */
export const VlmClassifierEvaluatorSchema = z
  .strictObject({
    kind: z.literal('vlm_classifier'),
    /** A named dataset or a Hub id; or `data_path`. */
    dataset: DatasetNameSchema.nullable().default(null),
    /** A local dataset folder or file (parquet, Arrow, JSONL, or an image folder), relative to the config file. */
    data_path: z.string().min(1).nullable().default(null),
    split: z.string().min(1).default('test'),
    ...ColumnNames,
    temperature: z.number().nonnegative().default(0.0),
    max_tokens: z.int().positive().default(128),
    top_p: z.number().gt(0).max(1).default(1.0),
    top_k: z.int().min(-1).default(-1),
    /** The first n_eval examples of the split shuffled with seed 0 (HF `shuffle(seed=0)`); null: all. */
    n_eval: z.int().positive().nullable().default(null),
    max_parallel_tasks: z.int().positive().default(128),
    max_image_size: z.int().positive().default(480),
    /** Metrics are `<name>/accuracy`; without a name, `accuracy` as in the reference. */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "." and "-"')
      .nullable()
      .default(null),
  })
  .superRefine((e, ctx) => {
    if ((e.dataset === null) === (e.data_path === null)) {
      ctx.addIssue({ code: 'custom', path: ['dataset'], message: 'set exactly one of dataset (a named dataset or a Hub id) and data_path (a local folder or file)' });
    }
  });
export type VlmClassifierEvaluatorConfig = z.output<typeof VlmClassifierEvaluatorSchema>;

/** The reference's defaults where the chat dataset config's differ. */
export const DEFAULT_MAX_LENGTH = 8192;
