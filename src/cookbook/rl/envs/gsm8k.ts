// GSM8K-format dataset (spec §3.1 Gsm8kDataset): problems from a JSONL file, the train split
// shuffled with numpy's permutation(seed) like HF `shuffle(seed)`, the test split in file order
// with one sample per problem. The last batch may be partial.

import type { Message, Renderer } from '../../renderers/types.js';
import { numpyPermutation } from '../../shuffle.js';
import { ProblemGroupBuilder } from '../problem-env.js';
import type { EnvGroupBuilder, RLDataset } from '../types.js';
import { MathEnv, type Gsm8kProblem } from './math.js';

export interface Gsm8kDatasetOptions {
  batchSize: number;
  groupSize: number;
  convoPrefix?: Message[] | null;
  split?: 'train' | 'test';
  seed?: number;
}

export class Gsm8kDataset implements RLDataset {
  readonly problems: Gsm8kProblem[];
  readonly batchSize: number;
  readonly groupSize: number;
  readonly convoPrefix: Message[] | null;

  constructor(
    problems: readonly Gsm8kProblem[],
    readonly renderer: Renderer,
    opts: Gsm8kDatasetOptions,
  ) {
    const split = opts.split ?? 'train';
    if (!Number.isInteger(opts.batchSize) || opts.batchSize <= 0) throw new RangeError('batchSize must be a positive integer');
    this.problems = split === 'train' ? numpyPermutation(opts.seed ?? 0, problems.length).map((i) => problems[i]) : [...problems];
    this.batchSize = opts.batchSize;
    this.groupSize = split === 'train' ? opts.groupSize : 1;
    this.convoPrefix = opts.convoPrefix ?? null;
  }

  get length(): number {
    return Math.ceil(this.problems.length / this.batchSize);
  }

  getBatch(index: number): EnvGroupBuilder[] {
    const start = index * this.batchSize;
    const end = Math.min((index + 1) * this.batchSize, this.problems.length);
    if (!Number.isInteger(index) || index < 0 || start >= end) {
      throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
    }
    return this.problems.slice(start, end).map(
      (p) =>
        new ProblemGroupBuilder(
          () => new MathEnv(p.question, p.answer, this.renderer, { convoPrefix: this.convoPrefix }),
          this.groupSize,
        ),
    );
  }
}
