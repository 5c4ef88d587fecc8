// Which numbers of a metrics row are ints. The reference's rows mix Python ints and floats
// (`4` vs `4.0`), and numbers that crossed Temporal no longer say which they were, so the key
// decides; every paradigm's rows go through this one predicate.
import { TOKEN_METRIC_PREFIX } from './token-usage.js';

/** Trajectory totals (computeTrajectoryMetrics) that are Python ints, under any env tag. */
export const TRAJECTORY_METRIC_INT_SUFFIXES = ['/total_episodes', '/total_turns', '/total_ac_tokens', '/total_ob_tokens', '/total_cached_ob_tokens'];

/** Metrics the reference writes as Python ints, by name (each checked in its loop's code). */
const INT_METRIC_KEYS = new Set([
  'step', 'epoch', 'batch', 'num_sequences', 'num_tokens', // every loop; SL
  'num_pairs', // DPO
  'num_examples', // decisions
  'batch_size', // off-policy distillation
  'progress/batch', 'training_client/step', 'sampling_client/step_max', 'sampling_client/step_min', // RL, distillation
  'async/staleness_max', 'async/staleness_min', // async RL
]);

/** A repeated span's count (`time/<name>:count`, a `len()` in the reference's trace). */
const isSpanCount = (key: string) => key.startsWith('time/') && key.endsWith(':count');

/**
 * Whether a metrics.jsonl value is a Python int in the reference's rows; every other number there
 * is a float. Numbers that crossed Temporal no longer say which they were, so the key decides: the
 * names above, every token count (`tokens/…`), the trajectory totals under any env tag
 * (`env/<tag>/total_episodes`, also as `test/env/…`) and span counts.
 */
export function isIntMetricKey(key: string): boolean {
  return INT_METRIC_KEYS.has(key) || key.startsWith(TOKEN_METRIC_PREFIX) || TRAJECTORY_METRIC_INT_SUFFIXES.some((suffix) => key.endsWith(suffix)) || isSpanCount(key);
}

