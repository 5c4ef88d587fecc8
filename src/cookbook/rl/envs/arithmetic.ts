// Arithmetic env and dataset (spec §3.2): "What is x + y?" with x, y drawn per batch from numpy's
// legacy RandomState(batch index), so batch i is the same problem set in every run.

import type { Message, Renderer } from '../../renderers/types.js';
import { LegacyRandomState } from '../mt19937.js';
import { ProblemEnv, ProblemGroupBuilder, type ProblemEnvOptions } from '../problem-env.js';
import type { EnvGroupBuilder, RLDataset } from '../types.js';

export class ArithmeticEnv extends ProblemEnv {
  constructor(
    readonly x: number,
    readonly y: number,
    renderer: Renderer,
    opts: ProblemEnvOptions = {},
  ) {
    super(renderer, opts);
  }

  getQuestion(): string {
    return `What is ${this.x} + ${this.y}?`;
  }

  /** The last integer in the response (commas removed) must equal x + y. */
  checkAnswer(content: string): boolean {
    const matches = content.replaceAll(',', '').match(/-?\d+/g);
    if (!matches) return false;
    return Number(matches[matches.length - 1]) === this.x + this.y;
  }

  checkFormat(_content: string): boolean {
    return true;
  }

  getReferenceAnswer(): string {
    return String(this.x + this.y);
  }

  static standardFewshotPrefix(): Message[] {
    return [
      { role: 'user', content: 'What is 4 + 5?' },
      { role: 'assistant', content: '9' },
    ];
  }
}

export interface ArithmeticDatasetOptions {
  batchSize: number;
  groupSize: number;
  nBatches?: number;
  includeFewshot?: boolean;
}

/** The (x, y) pairs of batch `index`: RandomState(index), x then y per group. */
export function arithmeticProblems(index: number, batchSize: number): Array<[number, number]> {
  const rng = new LegacyRandomState(index);
  const out: Array<[number, number]> = [];
  for (let g = 0; g < batchSize; g++) {
    const x = rng.randint(0, 101);
    const y = rng.randint(0, 101);
    out.push([x, y]);
  }
  return out;
}

export class ArithmeticDataset implements RLDataset {
  readonly batchSize: number;
  readonly groupSize: number;
  readonly nBatches: number;
  readonly includeFewshot: boolean;

  constructor(
    readonly renderer: Renderer,
    opts: ArithmeticDatasetOptions,
  ) {
    this.batchSize = opts.batchSize;
    this.groupSize = opts.groupSize;
    this.nBatches = opts.nBatches ?? 100;
    this.includeFewshot = opts.includeFewshot ?? true;
  }

  get length(): number {
    return this.nBatches;
  }

  getBatch(index: number): EnvGroupBuilder[] {
    if (!Number.isInteger(index) || index < 0) throw new RangeError(`batch index ${index} is not a non-negative integer`);
    const convoPrefix = this.includeFewshot ? ArithmeticEnv.standardFewshotPrefix() : null;
    return arithmeticProblems(index, this.batchSize).map(
      ([x, y]) =>
        new ProblemGroupBuilder(() => new ArithmeticEnv(x, y, this.renderer, { convoPrefix }), this.groupSize),
    );
  }
}
