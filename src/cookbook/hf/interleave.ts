// HF `datasets.interleave_datasets(datasets, probabilities, seed, stopping_strategy)` on map-style
// datasets (datasets 5.2 arrow_dataset._interleave_map_style_datasets), as positions into the
// sources: each example's source is drawn by numpy's `default_rng(seed).choice(n, p=probabilities)`
// (in blocks of 1000, which draw the same stream as one at a time), and the source's next row is
// taken —
//   * first_exhausted: until some source has given all its rows (that row included);
//   * all_exhausted: until every source has, a source that ran out starting over from its first row;
//   * all_exhausted_without_replacement: every row once, an exhausted source's draws skipped.
// Also numpy's `choice` itself, for the reference's holdout split (supervised/interleaved.ts).

import { DataValidationError } from '../errors.js';
import { Pcg64 } from '../shuffle.js';

export const STOPPING_STRATEGIES = ['first_exhausted', 'all_exhausted', 'all_exhausted_without_replacement'] as const;
export type StoppingStrategy = (typeof STOPPING_STRATEGIES)[number];

/** numpy's float64 `sum` (pairwise summation: a plain loop under 8 values, eight accumulators up to 128). */
export function numpySum(values: readonly number[]): number {
  const n = values.length;
  if (n < 8) return values.reduce((acc, v) => acc + v, 0);
  if (n > 128) {
    const half = Math.floor(n / 2 / 8) * 8;
    return numpySum(values.slice(0, half)) + numpySum(values.slice(half));
  }
  const r = values.slice(0, 8);
  let i = 8;
  for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j++) r[j] += values[i + j];
  let res = r[0] + r[1] + (r[2] + r[3]) + (r[4] + r[5] + (r[6] + r[7]));
  for (; i < n; i++) res += values[i];
  return res;
}

/** The numpy Generator draws these builders use: `random()`, `choice(n, p=…)` and `integers(0, 2**32)`. */
export class NumpyRng {
  private readonly bits: Pcg64;

  constructor(seed: number | bigint) {
    this.bits = new Pcg64(seed);
  }

  /** `random()`: 53 bits of a 64-bit draw. */
  random(): number {
    return Number(this.bits.nextUint64() >> 11n) / 9007199254740992;
  }

  /** `integers(0, 2**32)`: one 32-bit draw (half of a buffered 64-bit one). */
  uint32(): number {
    return this.bits.nextUint32();
  }

  /** A sampler of `choice(len(p), p=p)`: the cdf of p normalised by its last value, searched to the right. */
  chooser(p: readonly number[]): () => number {
    const cdf: number[] = [];
    p.reduce((acc, v) => (cdf.push(acc + v), acc + v), 0);
    const last = cdf[cdf.length - 1];
    for (let i = 0; i < cdf.length; i++) cdf[i] /= last;
    return () => {
      const u = this.random();
      let lo = 0;
      let hi = cdf.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cdf[mid] <= u) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
  }
}

/** An example of the interleaved dataset: row `row` of source `source`. */
export interface InterleavedPosition {
  source: number;
  row: number;
}

/** The rows `interleave_datasets` selects, in order. Sources that can be drawn must be non-empty. */
export function interleavePositions(lengths: readonly number[], probabilities: readonly number[], seed: number, strategy: StoppingStrategy): InterleavedPosition[] {
  const drawable = probabilities.map((p) => p > 0);
  const empty = lengths.flatMap((n, i) => (n === 0 && drawable[i] ? [i] : []));
  if (empty.length) throw new DataValidationError(`dataset.sources: sources ${empty.join(', ')} are empty; every source that can be drawn must have rows`);
  const never = drawable.flatMap((d, i) => (d ? [] : [i]));
  if (strategy !== 'first_exhausted' && never.length) {
    throw new DataValidationError(`dataset.sources: stopping_strategy "${strategy}" cannot exhaust sources ${never.join(', ')}, which have weight 0 and are never drawn`);
  }
  const next = new NumpyRng(seed).chooser(probabilities);
  const drawn = lengths.map(() => 0);
  const out: InterleavedPosition[] = [];
  if (strategy === 'all_exhausted_without_replacement') {
    const total = lengths.reduce((a, b) => a + b, 0);
    while (out.length < total) {
      const s = next();
      if (drawn[s] < lengths[s]) out.push({ source: s, row: drawn[s]++ });
    }
    return out;
  }
  // A source counts as exhausted after its `length`-th draw; the draw that completes the stopping
  // condition is kept.
  let pendingSources = drawable.filter(Boolean).length;
  for (;;) {
    const s = next();
    out.push({ source: s, row: drawn[s] % lengths[s] });
    drawn[s]++;
    if (drawn[s] === lengths[s]) {
      if (strategy === 'first_exhausted') return out;
      if (--pendingSources === 0) return out;
    }
  }
}
