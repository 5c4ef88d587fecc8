// Chat datasets for supervised learning: the reference's FromConversationFileBuilder +
// SupervisedDatasetFromHFDataset (spec §1.4). Rows are shuffled once with `shuffle_seed`, the
// first `test_size` become the test set (one batch), and each epoch's `setEpoch(seed)`
// reshuffles the train rows' original order with numpy's permutation, as HF `shuffle` does.

import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Datum } from '../../backends/types.js';
import { DataValidationError } from '../errors.js';
import { TRAIN_ON_WHAT_VALUES, TrainOnWhat, type Message, type Renderer } from '../renderers/types.js';
import { EpochBatches } from '../epoch-batches.js';
import { numpyPermutation } from '../shuffle.js';
import type { Tokenizer } from '../tokenizer.js';
import { conversationToDatum } from './datum.js';
import { loadConversationsJsonl, type ConversationRow } from './jsonl.js';

export interface SupervisedDataset {
  /** Number of full batches (a last partial batch is dropped). */
  readonly length: number;
  /** Reshuffle the original row order with numpy `default_rng(seed).permutation`. */
  setEpoch(seed: number): void;
  getBatch(index: number): Datum[];
}

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
    test_size: z.int().nonnegative().default(0),
    shuffle_seed: z.int().nonnegative().default(0),
    batch_size: z.int().positive(),
    max_length: z.int().positive().nullable().default(null),
    renderer_name: z.string().min(1).optional(),
    train_on_what: z.enum(TRAIN_ON_WHAT_VALUES).optional(),
  })
  .superRefine((cfg, ctx) => {
    if ((cfg.file_path === undefined) === (cfg.builtin === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: cfg.file_path === undefined ? ['file_path'] : ['builtin'],
        message: 'set exactly one of file_path and builtin',
      });
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

/** Absolute path of the dataset file and the path to show in error messages. */
export function resolveDatasetFile(cfg: ChatDatasetConfig, baseDir?: string): { absPath: string; displayPath: string } {
  if (cfg.builtin !== undefined) {
    const rel = BUILTIN_DATASETS[cfg.builtin];
    return { absPath: path.join(repoRoot(), rel), displayPath: rel };
  }
  const p = cfg.file_path as string;
  return { absPath: path.resolve(baseDir ?? process.cwd(), p), displayPath: p };
}

/** Rows in a fixed order with lazily built, cached datums; `setEpoch` permutes the order. */
class ConversationDataset implements SupervisedDataset {
  private readonly batches: EpochBatches<ConversationRow, Datum>;

  constructor(rows: ConversationRow[], batchSize: number, toDatum: (row: ConversationRow) => Datum) {
    this.batches = new EpochBatches(rows, batchSize, toDatum);
  }

  get length(): number {
    return this.batches.length;
  }

  setEpoch(seed: number): void {
    this.batches.setEpoch(seed);
  }

  getBatch(index: number): Datum[] {
    return this.batches.batch(index).map((b) => b.value);
  }
}

/** Modes that train only assistant output need an assistant message in the right place. */
function checkHasTrainableMessage(messages: Message[], trainOnWhat: TrainOnWhat, at: string): void {
  const hasAssistant = messages.some((m) => m.role === 'assistant');
  const last = messages[messages.length - 1];
  switch (trainOnWhat) {
    case TrainOnWhat.ALL_ASSISTANT_MESSAGES:
    case TrainOnWhat.LAST_ASSISTANT_TURN:
      if (!hasAssistant) throw new DataValidationError(`${at}: conversation has no assistant message, so nothing to train on (train_on_what=${trainOnWhat})`);
      return;
    case TrainOnWhat.LAST_ASSISTANT_MESSAGE:
      if (last.role !== 'assistant') {
        throw new DataValidationError(`${at}: the last message is ${last.role}, not assistant, so nothing to train on (train_on_what=${trainOnWhat})`);
      }
      return;
    case TrainOnWhat.CUSTOMIZED:
      if (!messages.some((m) => m.trainable === true)) throw new DataValidationError(`${at}: no message has "trainable": true (train_on_what=${trainOnWhat})`);
      return;
    default:
      return;
  }
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
  const { absPath, displayPath } = resolveDatasetFile(cfg, opts.baseDir);
  const [rows, { renderer, tokenizer }] = await Promise.all([
    loadConversationsJsonl(absPath, displayPath),
    rendererForModel(model, cfg.renderer_name),
  ]);
  const trainOnWhat = cfg.train_on_what ?? TrainOnWhat.ALL_ASSISTANT_MESSAGES;
  for (const r of rows) checkHasTrainableMessage(r.messages, trainOnWhat, `${displayPath}:${r.line}`);

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

  const toDatum = (row: ConversationRow): Datum => {
    const at = `${displayPath}:${row.line}`;
    let datum: Datum;
    try {
      datum = conversationToDatum(row.messages, renderer, cfg.max_length, trainOnWhat);
    } catch (e) {
      const err = e as Error;
      err.message = `${at}: ${err.message}`;
      throw err;
    }
    if (!datum.loss_fn_inputs.weights.data.some((w) => w > 0)) {
      const cut = cfg.max_length === null ? '' : ` after truncation to max_length=${cfg.max_length}`;
      throw new DataValidationError(`${at}: conversation has no trainable tokens${cut} (train_on_what=${trainOnWhat})`);
    }
    return datum;
  };

  return {
    train: new ConversationDataset(trainRows, cfg.batch_size, toDatum),
    test: testRows ? new ConversationDataset(testRows, testRows.length, toDatum) : undefined,
    renderer,
    tokenizer,
  };
}
