// math_rl's PolarisDataset and DeepMathDataset (recipes/math_rl/math_env.py): a Hub dataset's train
// split shuffled with HF `shuffle(seed)`, cut into batches of `batch_size` rows, each row a MathEnv
// group (sympy grading, no few-shot prefix) tagged "polaris" / "deepmath". As in the reference, a
// row without a problem or an answer is dropped from its batch when the batch is made, so that
// batch holds fewer groups; the last batch may be short too. There is no test set.

import type { Renderer } from '../../renderers/types.js';
import { numpyPermutation } from '../../shuffle.js';
import { ProblemGroupBuilder } from '../problem-env.js';
import type { EnvGroupBuilder, RLDataset } from '../types.js';
import { MathEnv } from './math.js';

/** Where the reference loads each dataset from, and the logging tag of its groups. */
export const HF_MATH_DATASETS = {
  polaris: { path: 'POLARIS-Project/Polaris-Dataset-53K', format: 'polaris' },
  deepmath: { path: 'zwhe99/DeepMath-103K', format: 'deepmath' },
} as const;
export type HfMathDatasetName = keyof typeof HF_MATH_DATASETS;

/** A row as read: empty strings where the dataset has no problem or answer. */
export interface MathRow {
  question: string;
  answer: string;
}

export interface HfMathDatasetOptions {
  batchSize: number;
  groupSize: number;
  seed: number;
}

export class HfMathDataset implements RLDataset {
  readonly rows: MathRow[];

  constructor(
    readonly name: HfMathDatasetName,
    rows: readonly MathRow[],
    readonly renderer: Renderer,
    readonly opts: HfMathDatasetOptions,
  ) {
    this.rows = numpyPermutation(opts.seed, rows.length).map((i) => rows[i]);
  }

  get length(): number {
    return Math.ceil(this.rows.length / this.opts.batchSize);
  }

  getBatch(index: number): EnvGroupBuilder[] {
    const start = index * this.opts.batchSize;
    const end = Math.min(start + this.opts.batchSize, this.rows.length);
    if (!Number.isInteger(index) || index < 0 || start >= end) throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
    return this.rows
      .slice(start, end)
      .filter((r) => r.question !== '' && r.answer !== '')
      .map((r) => new ProblemGroupBuilder(() => new MathEnv(r.question, r.answer, this.renderer), this.opts.groupSize, this.name));
  }
}
