// RL dataset configs and builders (the reference's ArithmeticDatasetBuilder, Gsm8kDatasetBuilder,
// math_rl's Polaris and DeepMath builders and InterleavedRLDatasetBuilder): small serialisable
// configs that activities turn into datasets.

import { asModelChoice, rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { DataFormatError } from '../errors.js';
import { HfSourceSchema, type HfSource } from '../hf/config.js';
import { bindFormat } from '../hf/formats.js';
import { loadSplit } from '../hf/source.js';
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { ArithmeticDataset } from './envs/arithmetic.js';
import { Gsm8kDataset } from './envs/gsm8k.js';
import { HF_MATH_DATASETS, HfMathDataset, type HfMathDatasetName } from './envs/math-hf.js';
import { InterleavedRLDataset } from './interleaved.js';
import { loadGsm8kJsonl, standardFewshotPrefix, type Gsm8kProblem } from './envs/math.js';
import { PairwisePreferenceDatasetConfigSchema } from './preference-env.js';
import { buildPairwisePreferenceDataset } from './preference-rl-dataset.js';
import { registeredRLDataset, registeredRLDatasetNames, type CustomRLDatasetContext, type CustomRLDatasets } from './registry.js';
import type { RLDataset } from './types.js';

export const GSM8K_SAMPLE_PATH = 'data/gsm8k_sample.jsonl';

export const ArithmeticDatasetConfigSchema = z.strictObject({
  kind: z.literal('arithmetic'),
  /** Groups per batch. */
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  n_batches: z.int().positive().default(100),
  include_fewshot: z.boolean().default(true),
});

export const Gsm8kDatasetConfigSchema = z
  .strictObject({
    kind: z.literal('gsm8k'),
    /** GSM8K-format JSONL; defaults to the shipped sample. Relative paths resolve against the base dir. */
    file_path: z.string().min(1).optional(),
    test_file_path: z.string().min(1).optional(),
    /**
     * A Hugging Face dataset instead (docs/hf-datasets.md), e.g. openai/gsm8k with name "main", or
     * MATH-style rows with format "math"; `test_split` is the test set. Loaded whole (no streaming).
     */
    hf: HfSourceSchema.optional(),
    batch_size: z.int().positive(),
    group_size: z.int().positive(),
    seed: z.int().nonnegative().default(0),
    convo_prefix: z.literal('standard').nullable().default('standard'),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.hf === undefined) return;
    for (const key of ['file_path', 'test_file_path'] as const) {
      if (cfg[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `set ${key} or hf, not both (hf.test_split names the test set)` });
    }
    if (cfg.hf.streaming) ctx.addIssue({ code: 'custom', path: ['hf', 'streaming'], message: 'RL problem datasets load whole: streaming is not supported' });
  });

/** An environment registered in code (registry.ts), built from JSON arguments. */
export const CustomDatasetConfigSchema = z.strictObject({
  kind: z.literal('custom'),
  /** The name the environment was registered under. */
  name: z.string().min(1),
  /** An ES module that registers it when imported (relative to the config file); null: already registered. */
  module: z.string().min(1).nullable().default(null),
  args: z.record(z.string(), z.unknown()).default({}),
});

/** math_rl's PolarisDatasetBuilder / DeepMathDatasetBuilder: batch_size, group_size, seed; rows from `hf` (default: the reference's Hub dataset). */
const hfMathDatasetSchema = <K extends HfMathDatasetName>(kind: K) =>
  z
    .strictObject({
      kind: z.literal(kind),
      /** Groups (problems) per batch. */
      batch_size: z.int().positive(),
      group_size: z.int().positive(),
      seed: z.int().nonnegative().default(0),
      /** Where the rows come from: the Hub id (read from the HF cache or downloaded) or a local copy; the format defaults to the dataset's. */
      hf: HfSourceSchema.optional(),
    })
    .superRefine((cfg, ctx) => {
      if (cfg.hf?.test_split) ctx.addIssue({ code: 'custom', path: ['hf', 'test_split'], message: `the reference's ${kind} builder has no test set` });
      if (cfg.hf?.streaming) ctx.addIssue({ code: 'custom', path: ['hf', 'streaming'], message: 'RL problem datasets load whole: streaming is not supported' });
    });
export const PolarisDatasetConfigSchema = hfMathDatasetSchema('polaris');
export const DeepMathDatasetConfigSchema = hfMathDatasetSchema('deepmath');

const SourceDatasetConfigSchema = z.discriminatedUnion('kind', [
  ArithmeticDatasetConfigSchema,
  Gsm8kDatasetConfigSchema,
  CustomDatasetConfigSchema,
  PairwisePreferenceDatasetConfigSchema,
  PolarisDatasetConfigSchema,
  DeepMathDatasetConfigSchema,
]);

/** The reference's InterleavedRLDatasetBuilder: sources blended by weight (interleaved.ts); their test sets are dropped. */
export const InterleavedRLDatasetConfigSchema = z
  .strictObject({
    kind: z.literal('interleaved'),
    sources: z.array(SourceDatasetConfigSchema).min(1),
    /** Relative weight per source (normalised), all positive. */
    weights: z.array(z.number().positive()).min(1),
    /** Groups (problems) per interleaved batch, whatever each source's own batch size. */
    groups_per_batch: z.int().positive(),
    /** Batches to train; null: until the smallest source would run out (no cycling). */
    total_batches: z.int().positive().nullable().default(null),
    seed: z.int().nonnegative().default(0),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.weights.length !== cfg.sources.length) {
      ctx.addIssue({ code: 'custom', path: ['weights'], message: `${cfg.weights.length} weights for ${cfg.sources.length} sources; give one weight per source` });
    }
  });

export const RLDatasetConfigSchema = z.discriminatedUnion('kind', [...SourceDatasetConfigSchema.options, InterleavedRLDatasetConfigSchema]);
export type RLDatasetConfig = z.output<typeof RLDatasetConfigSchema>;
export type RLDatasetConfigInput = z.input<typeof RLDatasetConfigSchema>;

/** The repository root: the nearest ancestor of this module holding the shipped sample. */
export function rlRepoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, GSM8K_SAMPLE_PATH))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`cannot find ${GSM8K_SAMPLE_PATH} above ${fileURLToPath(import.meta.url)}`);
}

export interface BuiltRLDatasets {
  train: RLDataset;
  test?: RLDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
}

export interface BuildRLDatasetsOptions {
  /** Base directory for relative file paths (default: the process's cwd). */
  baseDir?: string;
}

export async function buildRLDatasets(
  cfgInput: RLDatasetConfigInput | RLDatasetConfig,
  model: string | ModelChoice,
  opts: BuildRLDatasetsOptions = {},
): Promise<BuiltRLDatasets> {
  const cfg = RLDatasetConfigSchema.parse(cfgInput);
  const { renderer, tokenizer } = await rendererForModel(model);
  const modelName = asModelChoice(model).model_name;
  if (cfg.kind === 'arithmetic') {
    const train = new ArithmeticDataset(renderer, {
      batchSize: cfg.batch_size,
      groupSize: cfg.group_size,
      nBatches: cfg.n_batches,
      includeFewshot: cfg.include_fewshot,
    });
    return { train, renderer, tokenizer };
  }
  if (cfg.kind === 'interleaved') {
    const built = await Promise.all(cfg.sources.map((source) => buildRLDatasets(source, model, opts)));
    const train = new InterleavedRLDataset(
      built.map((b) => b.train),
      { weights: cfg.weights, groupsPerBatch: cfg.groups_per_batch, totalBatches: cfg.total_batches, seed: cfg.seed },
    );
    return { train, renderer, tokenizer };
  }
  if (cfg.kind === 'polaris' || cfg.kind === 'deepmath') {
    const known = HF_MATH_DATASETS[cfg.kind];
    const hf = HfSourceSchema.parse(cfg.hf ?? { path: known.path });
    const loaded = await loadSplit(hf, hf.split, bindFormat('problem', hf.format ?? known.format, hf.columns), { baseDir: opts.baseDir });
    const rows = loaded.rows.map((r) => ({ question: r.value.question, answer: r.value.answer }));
    const train = new HfMathDataset(cfg.kind, rows, renderer, { batchSize: cfg.batch_size, groupSize: cfg.group_size, seed: cfg.seed });
    return { train, renderer, tokenizer };
  }
  const resolve = (p: string) => path.resolve(opts.baseDir ?? process.cwd(), p);
  if (cfg.kind === 'pairwise_preference') {
    const train = await buildPairwisePreferenceDataset(cfg, { renderer, model }, resolve);
    return { train, renderer, tokenizer };
  }
  if (cfg.kind === 'custom') return { ...(await buildCustomDatasets(cfg, { renderer, tokenizer, modelName }, resolve)), renderer, tokenizer };
  const convoPrefix = cfg.convo_prefix === 'standard' ? standardFewshotPrefix() : null;
  const common = { batchSize: cfg.batch_size, groupSize: cfg.group_size, convoPrefix, seed: cfg.seed };
  if (cfg.hf !== undefined) {
    const { train: trainRows, test: testRows } = await loadHfProblems(cfg.hf, opts.baseDir);
    const train = new Gsm8kDataset(trainRows, renderer, { ...common, split: 'train' });
    const test = testRows ? new Gsm8kDataset(testRows, renderer, { ...common, split: 'test' }) : undefined;
    return { train, test, renderer, tokenizer };
  }
  const trainPath = cfg.file_path === undefined ? path.join(rlRepoRoot(), GSM8K_SAMPLE_PATH) : resolve(cfg.file_path);
  const trainRows = await loadGsm8kJsonl(trainPath, cfg.file_path ?? GSM8K_SAMPLE_PATH);
  const train = new Gsm8kDataset(trainRows, renderer, { ...common, split: 'train' });
  let test: RLDataset | undefined;
  if (cfg.test_file_path !== undefined) {
    const testRows = await loadGsm8kJsonl(resolve(cfg.test_file_path), cfg.test_file_path);
    test = new Gsm8kDataset(testRows, renderer, { ...common, split: 'test' });
  }
  return { train, test, renderer, tokenizer };
}

/** GSM8K / MATH problems of an `hf` source's split (and test split), in file order. */
async function loadHfProblems(hf: HfSource, baseDir?: string): Promise<{ train: Gsm8kProblem[]; test?: Gsm8kProblem[] }> {
  const format = bindFormat('problem', hf.format, hf.columns);
  const asProblems = (rows: Awaited<ReturnType<typeof loadSplit<Omit<Gsm8kProblem, 'line'>>>>['rows']): Gsm8kProblem[] =>
    rows.map((r) => ({ question: r.value.question, solution: r.value.solution, answer: r.value.answer, line: r.line }));
  const train = await loadSplit(hf, hf.split, format, { baseDir });
  const test = hf.test_split === null ? undefined : await loadSplit(hf, hf.test_split, format, { baseDir, firstLine: train.total + 1 });
  return { train: asProblems(train.rows), test: test && asProblems(test.rows) };
}

async function buildCustomDatasets(
  cfg: z.output<typeof CustomDatasetConfigSchema>,
  ctx: Omit<CustomRLDatasetContext, 'args'>,
  resolve: (p: string) => string,
): Promise<CustomRLDatasets> {
  if (cfg.module !== null) {
    try {
      await import(pathToFileURL(resolve(cfg.module)).href);
    } catch (err) {
      throw new DataFormatError(`dataset.module: cannot import ${cfg.module} (${(err as Error).message})`);
    }
  }
  const builder = registeredRLDataset(cfg.name);
  if (!builder) {
    const known = registeredRLDatasetNames();
    throw new DataFormatError(
      `dataset.name: no RL environment is registered as "${cfg.name}"${cfg.module ? ` after importing ${cfg.module}` : ''} ` +
        `(registered: ${known.length ? known.join(', ') : 'none'}); call registerRLDataset("${cfg.name}", …) in the module dataset.module names`,
    );
  }
  const built = await builder({ ...ctx, args: cfg.args });
  if (!built?.train || typeof built.train.getBatch !== 'function') throw new DataFormatError(`dataset: the builder registered as "${cfg.name}" returned no train dataset`);
  return built;
}
