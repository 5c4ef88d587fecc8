// The reference's InterleavedRLDatasetBuilder (rl/interleaved.py): several RL datasets blended by
// weight into one. A schedule fixed by `seed` gives every (batch, slot) a (source, group): the
// source is drawn with Python's `random.Random(seed).choices(weights)`, and each source visits its
// groups (flattened across its batches) in `cycle_permutation` order, a fresh permutation per pass.
// Groups are never mixed across sources, so a group's advantages centre within one problem.

import { pyShuffled, PythonRandom } from '../python-random.js';
import { DataValidationError } from '../errors.js';
import type { EnvGroupBuilder, RLDataset } from './types.js';

/** The reference's `cycle_permutation(size, seed, cycle)`: `random.Random(f"{seed}:{cycle}").shuffle(range(size))`. */
export function cyclePermutation(size: number, seed: number | string, cycle: number): number[] {
  return pyShuffled(
    Array.from({ length: size }, (_, i) => i),
    `${seed}:${cycle}`,
  );
}

/** `random.choices(range(n), weights)[0]`: bisect_right of random()·total into the running sums, capped at n−1. */
function choose(rng: PythonRandom, cumWeights: readonly number[]): number {
  const x = rng.random() * cumWeights[cumWeights.length - 1];
  let lo = 0;
  let hi = cumWeights.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x < cumWeights[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

export interface InterleavedOptions {
  weights: readonly number[];
  groupsPerBatch: number;
  /** null: until the smallest source would run out (no cycling). */
  totalBatches: number | null;
  seed: number;
}

/** `_InterleavedRLDataset`: `groupsPerBatch` groups per batch, each from one source's flattened groups. */
export class InterleavedRLDataset implements RLDataset {
  readonly length: number;
  /** Normalised weights. */
  readonly weights: number[];
  /** Every batch's (source, flat group index), in slot order. */
  readonly schedule: Array<Array<[number, number]>>;
  private readonly groupsPerSourceBatch: number[] = [];
  private readonly totalGroups: number[] = [];

  constructor(
    readonly sources: readonly RLDataset[],
    opts: InterleavedOptions,
  ) {
    if (sources.length === 0) throw new DataValidationError('dataset.sources: at least one source is required');
    if (opts.weights.length !== sources.length) {
      throw new DataValidationError(`dataset.weights: ${opts.weights.length} weights for ${sources.length} sources; give one weight per source`);
    }
    opts.weights.forEach((w, i) => {
      if (!(w > 0) || !Number.isFinite(w)) throw new DataValidationError(`dataset.weights.${i}: every weight must be positive, got ${w}`);
    });
    const total = opts.weights.reduce((a, b) => a + b, 0);
    this.weights = opts.weights.map((w) => w / total);
    sources.forEach((src, i) => {
      if (src.length === 0) throw new DataValidationError(`dataset.sources.${i}: the source has 0 batches; every source must be non-empty`);
      const gpb = src.getBatch(0).length;
      if (gpb === 0) throw new DataValidationError(`dataset.sources.${i}: batch 0 has no groups; every source must give at least one group per batch`);
      this.groupsPerSourceBatch.push(gpb);
      // The last batch may be short (ragged); every other one is taken to hold `gpb`.
      this.totalGroups.push(src.length === 1 ? gpb : (src.length - 1) * gpb + src.getBatch(src.length - 1).length);
    });
    this.length = opts.totalBatches ?? this.naturalLength(opts.groupsPerBatch);
    this.schedule = this.buildSchedule(opts.groupsPerBatch, opts.seed);
  }

  /** Batches until the smallest source runs out: total_groups / (weight · groups_per_batch), at least 1. */
  private naturalLength(groupsPerBatch: number): number {
    const perSource = this.totalGroups.map((n, i) => Math.trunc(n / (this.weights[i] * groupsPerBatch)));
    return Math.max(1, Math.min(...perSource));
  }

  private buildSchedule(groupsPerBatch: number, seed: number): Array<Array<[number, number]>> {
    const rng = new PythonRandom(seed);
    const cum: number[] = [];
    this.weights.reduce((acc, w) => (cum.push(acc + w), acc + w), 0);
    const permutation = (src: number, cycle: number) => cyclePermutation(this.totalGroups[src], `${seed}:${src}`, cycle);
    const cycles = this.sources.map(() => 0);
    const perms = this.sources.map((_, i) => permutation(i, 0));
    const positions = this.sources.map(() => 0);
    const schedule: Array<Array<[number, number]>> = [];
    for (let b = 0; b < this.length; b++) {
      const batch: Array<[number, number]> = [];
      for (let slot = 0; slot < groupsPerBatch; slot++) {
        const src = choose(rng, cum);
        if (positions[src] >= this.totalGroups[src]) {
          perms[src] = permutation(src, ++cycles[src]);
          positions[src] = 0;
        }
        batch.push([src, perms[src][positions[src]++]]);
      }
      schedule.push(batch);
    }
    return schedule;
  }

  getBatch(index: number): EnvGroupBuilder[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) throw new RangeError(`batch index ${index} out of range (total_batches=${this.length})`);
    return this.schedule[index].map(([src, flat]) => this.resolve(src, flat));
  }

  private resolve(src: number, flat: number): EnvGroupBuilder {
    const gpb = this.groupsPerSourceBatch[src];
    const batchIndex = Math.floor(flat / gpb);
    const batch = this.sources[src].getBatch(batchIndex);
    const group = batch[flat % gpb];
    if (!group) {
      throw new DataValidationError(
        `dataset.sources.${src}: batch ${batchIndex} has ${batch.length} groups, expected ${gpb} (as batch 0); ` +
          'an interleaved source needs every batch but the last to hold as many groups as batch 0',
      );
    }
    return group;
  }
}
