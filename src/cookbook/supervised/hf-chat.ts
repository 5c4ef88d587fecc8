// Chat datasets from an `hf` source (docs/hf-datasets.md): rows mapped by a chat format
// (hf/formats.ts) into conversations, split as the reference's recipes split them (hf/splits.ts),
// then batched like the JSONL datasets — or streamed, batch by batch, with `hf.streaming`. A mixture
// of sources (`sources`) is interleaved first (interleaved.ts).

import type { Datum } from '../../backends/types.js';
import { DataFormatError, DataValidationError } from '../errors.js';
import type { HfSource } from '../hf/config.js';
import { bindFormat, isSkipped } from '../hf/formats.js';
import type { HubOptions } from '../hf/hub.js';
import type { HfRow } from '../hf/source.js';
import { loadHfSplits } from '../hf/splits.js';
import { StreamingBatches } from '../hf/streaming.js';
import { TrainOnWhat, type Message, type Renderer } from '../renderers/types.js';
import { checkHasTrainableMessage, conversationDatumBuilder, ConversationDataset, type SupervisedDataset } from './conversation-dataset.js';
import type { ConversationRow } from './jsonl.js';
import type { StoppingStrategy } from '../hf/interleave.js';
import { interleaveChatRows, loadInterleavedSources, type HFDatasetSource } from './interleaved.js';

interface ChatSettings {
  batch_size: number;
  test_size: number;
  shuffle_seed: number;
  max_length: number | null;
  train_on_what?: TrainOnWhat;
}

export async function buildHfChatDatasets(
  cfg: ChatSettings,
  hf: HfSource,
  renderer: Renderer,
  opts: { baseDir?: string; hub?: HubOptions } = {},
): Promise<{ train: SupervisedDataset; test?: SupervisedDataset }> {
  const format = bindFormat('chat', hf.format, hf.columns);
  // An explicit train_on_what wins; otherwise the recipe's (tulu3: last assistant message).
  const trainOnWhat = cfg.train_on_what ?? format.trainOnWhat ?? TrainOnWhat.ALL_ASSISTANT_MESSAGES;
  const splits = await loadHfSplits(hf, format, { ...opts, testSize: cfg.test_size, seed: cfg.shuffle_seed });
  const toRow = (r: HfRow<Message[]>): ConversationRow => {
    checkHasTrainableMessage(r.value, trainOnWhat, r.at);
    return { messages: r.value, line: r.line, at: r.at };
  };
  const toDatum = conversationDatumBuilder(renderer, cfg.max_length, trainOnWhat, (row) => row.at ?? `${hf.path}:${row.line}`);
  const test = splits.test?.length ? ConversationDataset.fromRows(splits.test.map(toRow), splits.test.length, toDatum) : undefined;

  if (splits.streaming) {
    const train = new ConversationDataset(
      new StreamingBatches(
        splits.plan,
        cfg.batch_size,
        (r) => {
          // Chat formats never skip rows; a skip here would be a format bug, not bad data.
          if (isSkipped(r.value)) throw new DataFormatError(`${r.at}: row skipped (${r.value.skip})`);
          return toRow(r as HfRow<Message[]>);
        },
        toDatum,
      ),
    );
    if (train.length === 0) throw new DataValidationError(`${hf.path}: split "${hf.split}" has fewer rows than batch_size ${cfg.batch_size} (after holding out ${splits.test?.length ?? 0} for test), so there is not one full batch`);
    return { train, test };
  }
  const trainRows = splits.train.map(toRow);
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(
      `${hf.path}: ${trainRows.length} training conversations in split "${hf.split}"${hf.test_split === null ? ` (after holding out ${splits.test?.length ?? 0} for test)` : ''} ` +
        `is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }
  return { train: ConversationDataset.fromRows(trainRows, cfg.batch_size, toDatum), test };
}

/** The reference's InterleavedChatDatasetBuilder: its train rows batched (reshuffled per epoch), its held-out rows one test batch. */
export async function buildInterleavedChatDatasets(
  cfg: ChatSettings & { sources: HFDatasetSource[]; stopping_strategy?: StoppingStrategy },
  renderer: Renderer,
  opts: { baseDir?: string; hub?: HubOptions } = {},
): Promise<{ train: SupervisedDataset; test?: SupervisedDataset }> {
  const trainOnWhat = cfg.train_on_what ?? TrainOnWhat.ALL_ASSISTANT_MESSAGES;
  const rows = await loadInterleavedSources(cfg.sources, opts);
  const mixed = interleaveChatRows(rows, cfg.sources, { test_size: cfg.test_size, shuffle_seed: cfg.shuffle_seed, stopping_strategy: cfg.stopping_strategy ?? 'all_exhausted' });
  const toRow = (r: HfRow<Message[]>): ConversationRow => {
    checkHasTrainableMessage(r.value, trainOnWhat, r.at);
    return { messages: r.value, line: r.line, at: r.at };
  };
  const toDatum = conversationDatumBuilder(renderer, cfg.max_length, trainOnWhat, (row) => row.at ?? `line ${row.line}`);
  const trainRows = mixed.train.map(toRow);
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(`dataset.sources: the mixture has ${trainRows.length} training rows, fewer than batch_size ${cfg.batch_size}, so there is not one full batch`);
  }
  const test = mixed.test?.length ? ConversationDataset.fromRows(mixed.test.map(toRow), mixed.test.length, toDatum) : undefined;
  return { train: ConversationDataset.fromRows(trainRows, cfg.batch_size, toDatum), test };
}
