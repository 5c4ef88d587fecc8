// A supervised dataset over conversation rows: batches of datums built lazily from rows, from an
// in-memory list reshuffled per epoch (EpochBatches) or a streaming source (hf/streaming.ts).

import type { Datum } from '../../backends/types.js';
import { BatchedDataset, EpochBatches } from '../epoch-batches.js';
import { hasImages, loadMessageImages } from '../images/messages.js';
import { DataValidationError } from '../errors.js';
import { TrainOnWhat, type Message, type Renderer } from '../renderers/types.js';
import { conversationToDatum, datumFromModelInputWeights } from './datum.js';
import type { ConversationRow } from './jsonl.js';

const rowWhere = (row: ConversationRow) => row.at ?? `line ${row.line}`;

export interface SupervisedDataset {
  /** Number of full batches (a last partial batch is dropped). */
  readonly length: number;
  /** Reshuffle the original row order with numpy `default_rng(seed).permutation`. */
  setEpoch(seed: number): void;
  /** Streaming (`hf.streaming`) datasets read batch `index` here; `getBatch` needs it first. */
  loadBatch(index: number): Promise<void>;
  getBatch(index: number): Datum[];
  /** Batch `index` of epoch `epoch` in one step (safe beside concurrent calls). */
  batchAt(epoch: number, index: number): Promise<Datum[]>;
}

/** Rows with lazily built, cached datums; `setEpoch` permutes the order (or restarts the stream). */
export class ConversationDataset extends BatchedDataset<ConversationRow, Datum, Datum[]> implements SupervisedDataset {
  /**
   * Rows with image parts have them decoded when their batch is loaded (`batchAt`, `loadBatch`);
   * `at` names a row in errors (e.g. `file:line`).
   */
  static fromRows(
    rows: ConversationRow[],
    batchSize: number,
    toDatum: (row: ConversationRow) => Datum,
    at: (row: ConversationRow) => string = rowWhere,
  ): ConversationDataset {
    const loadRowImages = async (row: ConversationRow) => ({ ...row, messages: await loadMessageImages(row.messages, at(row)) });
    const prepare = rows.some((r) => hasImages(r.messages)) ? loadRowImages : undefined;
    return new ConversationDataset(new EpochBatches(rows, batchSize, toDatum, prepare));
  }

  getBatch(index: number): Datum[] {
    return this.batches.batch(index).map((b) => b.value);
  }
}

/** Modes that train only assistant output need an assistant message in the right place. */
export function checkHasTrainableMessage(messages: Message[], trainOnWhat: TrainOnWhat, at: string): void {
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

/** Row → datum, with errors prefixed by where the row came from (`at`). */
export function conversationDatumBuilder(
  renderer: Renderer,
  maxLength: number | null,
  trainOnWhat: TrainOnWhat,
  at: (row: ConversationRow) => string,
): (row: ConversationRow) => Datum {
  return (row) => {
    let datum: Datum;
    try {
      // A row with its own tokens trains on them as they are, weighted as it says (token-record.ts).
      datum = row.record
        ? datumFromModelInputWeights({ chunks: [{ type: 'encoded_text', tokens: row.record.tokens }] }, row.record.weights, maxLength, 'mean')
        : conversationToDatum(row.messages, renderer, maxLength, trainOnWhat);
    } catch (e) {
      const err = e as Error;
      err.message = `${at(row)}: ${err.message}`;
      throw err;
    }
    if (!datum.loss_fn_inputs.weights.data.some((w) => w > 0)) {
      const cut = maxLength === null ? '' : ` after truncation to max_length=${maxLength}`;
      throw new DataValidationError(`${at(row)}: conversation has no trainable tokens${cut} (train_on_what=${trainOnWhat})`);
    }
    return datum;
  };
}
