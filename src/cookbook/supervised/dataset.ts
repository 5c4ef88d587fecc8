// Chat datasets for supervised learning: the reference's FromConversationFileBuilder +
// SupervisedDatasetFromHFDataset (spec §1.4). Rows are shuffled once with `shuffle_seed`, the
// first `test_size` become the test set (one batch), and each epoch's `setEpoch(seed)`
// reshuffles the train rows' original order with numpy's permutation, as HF `shuffle` does.
// An `hf` source (docs/hf-datasets.md) reads a Hugging Face dataset instead of this project's JSONL;
// `sources` mixes several (interleaved.ts).

import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Datum } from '../../backends/types.js';
import { DataValidationError } from '../errors.js';
import { TRAIN_ON_WHAT_VALUES, TrainOnWhat, type Message, type Renderer } from '../renderers/types.js';
import { HfSourceSchema } from '../hf/config.js';
import { buildHfChatDatasets, buildInterleavedChatDatasets } from './hf-chat.js';
import { InterleavedSourcesSchema, StoppingStrategySchema } from './interleaved.js';
import { numpyPermutation } from '../shuffle.js';
import type { Tokenizer } from '../tokenizer.js';
import { checkHasTrainableMessage, conversationDatumBuilder, ConversationDataset, type SupervisedDataset } from './conversation-dataset.js';
import { loadConversationsJsonl, type ConversationRow } from './jsonl.js';
import { buildRewardModelChatDatasets, checkComparisonsSource, ComparisonsSourceSchema } from './reward-model-source.js';
import type { RewardModelDataSettings } from '../preference/reward-model-dataset.js';
import { checkVlmClassifierSource, VlmClassifierSourceSchema } from './vlm-classifier/config.js';
import { buildVlmClassifierDatasets, type VlmClassifierDatasetSettings } from './vlm-classifier/dataset.js';

export { checkHasTrainableMessage, conversationDatumBuilder, ConversationDataset, type SupervisedDataset } from './conversation-dataset.js';

/** Built-in datasets shipped under `data/`. */
export const BUILTIN_DATASETS = {
  example_chat: 'data/example_chat.jsonl',
  example_chat_small: 'data/example_chat_small.jsonl',
} as const;
export type BuiltinDatasetName = keyof typeof BUILTIN_DATASETS;

export const ChatDatasetConfigSchema = z
  .strictObject({
    /** JSONL file of `{"messages": [...]}` rows; relative paths resolve against the base dir. */
    file_path: z.string().min(1).optional(),
    builtin: z.enum(Object.keys(BUILTIN_DATASETS) as [BuiltinDatasetName, ...BuiltinDatasetName[]]).optional(),
    /** A Hugging Face dataset (Hub id or local folder/file); see docs/hf-datasets.md. */
    hf: HfSourceSchema.optional(),
    test_size: z.int().nonnegative().default(0),
    shuffle_seed: z.int().nonnegative().default(0),
    batch_size: z.int().positive(),
    max_length: z.int().positive().nullable().default(null),
    renderer_name: z.string().min(1).optional(),
    train_on_what: z.enum(TRAIN_ON_WHAT_VALUES).optional(),
    /**
     * The rows are labeled comparisons (preference/comparisons.ts) rendered for a reward model, as
     * the reference's ChatDatasetBuilderFromComparisons: `swap` trains both orders of each.
     */
    comparisons: ComparisonsSourceSchema.optional(),
    /** Image classification (recipes/vlm_classifier): images and class labels from a named dataset or `hf`. */
    vlm_classifier: VlmClassifierSourceSchema.optional(),
    /**
     * A mixture of Hugging Face chat datasets (the reference's InterleavedChatDatasetBuilder: its
     * HFDatasetSource fields; test_size and shuffle_seed as there); see supervised/interleaved.ts.
     */
    sources: InterleavedSourcesSchema.optional(),
    /** With `sources`: when the mixture ends (HF interleave_datasets; default all_exhausted). */
    stopping_strategy: StoppingStrategySchema.optional(),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.vlm_classifier !== undefined) return checkVlmClassifierSource(cfg, ctx);
    if (cfg.comparisons !== undefined) checkComparisonsSource(cfg, ctx);
    const set = (['file_path', 'builtin', 'hf', 'sources'] as const).filter((k) => cfg[k] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({ code: 'custom', path: [set[1] ?? 'file_path'], message: 'set exactly one of file_path, builtin, hf and sources' });
    }
    if (cfg.stopping_strategy !== undefined && cfg.sources === undefined) {
      ctx.addIssue({ code: 'custom', path: ['stopping_strategy'], message: 'applies to a mixture: set it with sources' });
    }
  });
export type ChatDatasetConfig = z.output<typeof ChatDatasetConfigSchema>;
export type ChatDatasetConfigInput = z.input<typeof ChatDatasetConfigSchema>;

/** The repository root: the nearest ancestor of this module that holds the built-in data. */
function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, BUILTIN_DATASETS.example_chat))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`cannot find ${BUILTIN_DATASETS.example_chat} above ${fileURLToPath(import.meta.url)}`);
}

/** Absolute path of the dataset file and the path to show in error messages (file_path / builtin configs). */
export function resolveDatasetFile(cfg: ChatDatasetConfig, baseDir?: string): { absPath: string; displayPath: string } {
  if (cfg.builtin !== undefined) {
    const rel = BUILTIN_DATASETS[cfg.builtin];
    return { absPath: path.join(repoRoot(), rel), displayPath: rel };
  }
  const p = cfg.file_path as string;
  return { absPath: path.resolve(baseDir ?? process.cwd(), p), displayPath: p };
}

export interface ChatDatasets {
  train: SupervisedDataset;
  test?: SupervisedDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
}

export async function buildChatDatasets(
  cfgInput: ChatDatasetConfigInput | ChatDatasetConfig,
  model: string | ModelChoice,
  opts: { baseDir?: string } = {},
): Promise<ChatDatasets> {
  const cfg = ChatDatasetConfigSchema.parse(cfgInput);
  if (cfg.vlm_classifier !== undefined) return buildVlmClassifierDatasets(cfg as VlmClassifierDatasetSettings, model, opts);
  if (cfg.comparisons !== undefined) return buildRewardModelChatDatasets(cfg as ChatDatasetConfig & RewardModelDataSettings, model, opts);
  if (cfg.hf !== undefined) {
    const { renderer, tokenizer } = await rendererForModel(model, cfg.renderer_name);
    return { ...(await buildHfChatDatasets(cfg, cfg.hf, renderer, opts)), renderer, tokenizer };
  }
  if (cfg.sources !== undefined) {
    const { renderer, tokenizer } = await rendererForModel(model, cfg.renderer_name);
    return { ...(await buildInterleavedChatDatasets({ ...cfg, sources: cfg.sources }, renderer, opts)), renderer, tokenizer };
  }
  const { absPath, displayPath } = resolveDatasetFile(cfg, opts.baseDir);
  const [rows, { renderer, tokenizer }] = await Promise.all([
    loadConversationsJsonl(absPath, displayPath),
    rendererForModel(model, cfg.renderer_name),
  ]);
  const trainOnWhat = cfg.train_on_what ?? TrainOnWhat.ALL_ASSISTANT_MESSAGES;
  // A row with its own tokens and weights says what is trained on; train_on_what applies to the rest.
  for (const r of rows) if (!r.record) checkHasTrainableMessage(r.messages, trainOnWhat, `${displayPath}:${r.line}`);

  const shuffled = numpyPermutation(cfg.shuffle_seed, rows.length).map((i) => rows[i]);
  let trainRows = shuffled;
  let testRows: ConversationRow[] | undefined;
  if (cfg.test_size > 0 && shuffled.length > cfg.test_size) {
    testRows = shuffled.slice(0, cfg.test_size);
    trainRows = shuffled.slice(cfg.test_size);
  }
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(
      `${displayPath}: ${trainRows.length} training conversations (after holding out ${testRows?.length ?? 0} for test) ` +
        `is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }

  const at = (row: ConversationRow) => `${displayPath}:${row.line}`;
  const toDatum = conversationDatumBuilder(renderer, cfg.max_length, trainOnWhat, at);
  return {
    train: ConversationDataset.fromRows(trainRows, cfg.batch_size, toDatum, at),
    test: testRows ? ConversationDataset.fromRows(testRows, testRows.length, toDatum, at) : undefined,
    renderer,
    tokenizer,
  };
}

