// A DPO dataset over comparison rows: each row becomes [chosen, rejected] datums, built lazily,
// from an in-memory list reshuffled per epoch (EpochBatches) or a streaming source (hf/streaming.ts).

import type { Datum } from '../../backends/types.js';
import { BatchedDataset, EpochBatches, type BatchSource } from '../epoch-batches.js';
import { DataValidationError } from '../errors.js';
import { TrainOnWhat, type Renderer } from '../renderers/types.js';
import { datumFromModelInputWeights } from '../supervised/datum.js';
import { chosenAndRejected, type ComparisonRow, type LabeledComparison } from './comparisons.js';

/** A row an `hf` format skips (as the reference's adapters return None); only streams keep these. */
export interface SkippedComparisonRow {
  line: number;
  at: string;
  skip: string;
}
export type PreferenceRow = ComparisonRow | SkippedComparisonRow;
export type PairOrFiltered = { datums: [Datum, Datum] } | { filtered: string };

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

export class PreferenceDataset extends BatchedDataset<PreferenceRow, PairOrFiltered, PreferenceBatch> {
  readonly batchSize: number;

  /** In-memory rows, or a streaming batch source (hf/streaming.ts) as `rows`. */
  constructor(
    rows: ComparisonRow[] | BatchSource<PreferenceRow, PairOrFiltered>,
    batchSize: number,
    toDatums: (row: ComparisonRow) => PairOrFiltered,
    private readonly displayPath: string,
  ) {
    super(Array.isArray(rows) ? new EpochBatches<PreferenceRow, PairOrFiltered>(rows, batchSize, (r) => ('skip' in r ? { filtered: r.skip } : toDatums(r))) : rows);
    this.batchSize = batchSize;
  }

  getBatch(index: number): PreferenceBatch {
    const batch: PreferenceBatch = { datums: [], lines: [], filtered: [] };
    for (const { row, value } of this.batches.batch(index)) {
      if ('filtered' in value) batch.filtered.push(`${row.at ?? `${this.displayPath}:${row.line}`}: ${value.filtered}`);
      else {
        batch.datums.push(...value.datums);
        batch.lines.push(row.line);
      }
    }
    return batch;
  }
}

/** Both completions must end with the assistant's reply, or there is nothing to compare. */
export function checkCompletionsEndWithAssistant(row: LabeledComparison, at: string): void {
  for (const [key, completion] of [['completion_A', row.comparison.completion_A], ['completion_B', row.comparison.completion_B]] as const) {
    const last = completion[completion.length - 1];
    if (last.role !== 'assistant') {
      throw new DataValidationError(`${at}: the last message of ${key} is ${last.role}, not assistant, so there is nothing to compare`);
    }
  }
}

/** comparisonToDatums with errors prefixed by where the row came from. */
export function comparisonDatumsBuilder(renderer: Renderer, maxLength: number | null, at: (row: ComparisonRow) => string): (row: ComparisonRow) => PairOrFiltered {
  return (row) => {
    try {
      return comparisonToDatums(row, renderer, maxLength);
    } catch (e) {
      const err = e as Error;
      err.message = `${at(row)}: ${err.message}`;
      throw err;
    }
  };
}
