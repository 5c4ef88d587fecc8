// `_CompositeSupervisedDataset` of distillation/train_off_policy.py: each step takes batch `i` of
// every domain's dataset, the first `count` examples of it, and routes them to that domain's
// teacher. Counts split `batch_size` by weight (Python's round, the last domain takes the rest).
import { pyRound } from '../misc-utils.js';

/** Examples each domain contributes to a step, as the reference computes them. */
export function domainCounts(weights: readonly number[], batchSize: number): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  const counts: number[] = [];
  let remaining = batchSize;
  weights.forEach((w, i) => {
    if (i === weights.length - 1) counts.push(remaining);
    else {
      const count = Math.max(1, pyRound((batchSize * w) / total));
      counts.push(count);
      remaining -= count;
    }
  });
  return counts;
}

/** `batch[:count]`, with Python's meaning of a negative count (all but the last -count). */
export function pySlicePrefix<T>(batch: readonly T[], count: number): T[] {
  return batch.slice(0, count < 0 ? Math.max(0, batch.length + count) : count);
}

/** Steps the composite dataset has: the shortest domain's batches. */
export function compositeSteps(batchesPerDomain: readonly number[]): number {
  return batchesPerDomain.length ? Math.min(...batchesPerDomain) : 0;
}
