// Reward-model training data: the reference's ChatDatasetBuilderFromComparisons. Each labeled
// comparison becomes one SL datum (comparison-renderer.ts, reduction "none", cut to max_length);
// with `swap` both orders of every comparison are in the batch, without it each comparison is
// swapped when Python's `random.Random(0).random() < 0.5`.
//
// The reference draws from that stream lazily, in the order batches are fetched, so a row's swap
// depends on its position in the run: draw k decides the k-th row trained on. Here that position is
// computed — (epoch · batches per epoch + batch) · batch_size + row — so a rebuilt or resumed batch
// swaps exactly as in an uninterrupted run. The test set (one batch) draws from its own
// `random.Random(0)` stream; the reference's test draws interleave with training at eval time.

import type { Datum } from '../../backends/types.js';
import { BatchedDataset, EpochBatches } from '../epoch-batches.js';
import { DataValidationError } from '../errors.js';
import type { Renderer } from '../renderers/types.js';
import { datumFromModelInputWeights } from '../supervised/datum.js';
import { comparisonModelInputWeights } from './comparison-renderer.js';
import { splitFileComparisons, swapComparison, type ComparisonRow, type LabeledComparison } from './comparisons.js';
import { PythonRandomStream } from '../python-random.js';

/** The seed of the reference's `rng = random.Random(0)`. */
export const SWAP_RNG_SEED = 0;

export interface RewardModelDatasetOptions {
  batchSize: number;
  maxLength: number | null;
  /** Both orders of every comparison (true), or a seeded 50% swap (false). */
  swap: boolean;
  /** "file:line" of a row, for errors. */
  at: (row: ComparisonRow) => string;
}

/**
 * One datum for a labeled comparison. A label cut off by max_length leaves a datum of zero
 * weights that trains nothing, as in the reference; errors are prefixed with the row (`at`).
 */
export function rewardModelDatum(renderer: Renderer, lc: LabeledComparison, maxLength: number | null, at: string): Datum {
  try {
    const { modelInput, weights } = comparisonModelInputWeights(renderer, lc);
    return datumFromModelInputWeights(modelInput, weights, maxLength, 'none');
  } catch (e) {
    const err = e as Error;
    err.message = `${at}: ${err.message}`;
    throw err;
  }
}

export class RewardModelDataset extends BatchedDataset<ComparisonRow, ComparisonRow, Datum[]> {
  private epoch = 0;
  private readonly draws = new PythonRandomStream(SWAP_RNG_SEED);
  private readonly built = new Map<string, Datum>();

  constructor(
    rows: ComparisonRow[],
    private readonly renderer: Renderer,
    private readonly opts: RewardModelDatasetOptions,
  ) {
    super(new EpochBatches(rows, opts.batchSize, (row) => row));
  }

  override setEpoch(seed: number): void {
    this.epoch = seed;
    super.setEpoch(seed);
  }

  /** Whether the row trained at this position of the run is swapped (swap=false only). */
  swappedAt(index: number, position: number): boolean {
    const draw = (this.epoch * this.length + index) * this.opts.batchSize + position;
    return this.draws.at(draw) < 0.5;
  }

  getBatch(index: number): Datum[] {
    return this.batches.batch(index).flatMap(({ row }, position) => {
      if (this.opts.swap) return [this.datum(row, false), this.datum(row, true)];
      return [this.datum(row, this.swappedAt(index, position))];
    });
  }

  private datum(row: ComparisonRow, swapped: boolean): Datum {
    const key = `${row.at ?? row.line}/${swapped}`;
    let datum = this.built.get(key);
    if (!datum) {
      const lc = swapped ? swapComparison(row) : row;
      datum = rewardModelDatum(this.renderer, { comparison: lc.comparison, label: lc.label }, this.opts.maxLength, this.opts.at(row));
      this.built.set(key, datum);
    }
    return datum;
  }
}

export interface RewardModelDataSettings {
  batch_size: number;
  max_length: number | null;
  test_size: number;
  shuffle_seed: number;
  comparisons: { swap: boolean };
}

/**
 * Train and test sets from comparison rows already split (hf) or to be split here (JSONL: in file
 * order, as the reference's ComparisonBuilderFromJsonl, with a `shuffle_seed` sample of `test_size`
 * held out; see splitFileComparisons).
 */
export function rewardModelDatasets(
  split: { train: ComparisonRow[]; test?: ComparisonRow[] } | { rows: ComparisonRow[] },
  cfg: RewardModelDataSettings,
  renderer: Renderer,
  displayPath: string,
  shuffle: (n: number, seed: number) => number[],
): { train: RewardModelDataset; test?: RewardModelDataset } {
  let train: ComparisonRow[];
  let test: ComparisonRow[] | undefined;
  if ('rows' in split) {
    ({ train, test } = splitFileComparisons(split.rows, cfg.test_size, (n) => shuffle(n, cfg.shuffle_seed)));
  } else {
    ({ train, test } = split);
  }
  if (train.length < cfg.batch_size) {
    throw new DataValidationError(
      `${displayPath}: ${train.length} training comparisons (after holding out ${test?.length ?? 0} for test) is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }
  const at = (row: ComparisonRow) => row.at ?? `${displayPath}:${row.line}`;
  const opts = { maxLength: cfg.max_length, swap: cfg.comparisons.swap, at };
  return {
    train: new RewardModelDataset(train, renderer, { ...opts, batchSize: cfg.batch_size }),
    test: test?.length ? new RewardModelDataset(test, renderer, { ...opts, batchSize: test.length }) : undefined,
  };
}
