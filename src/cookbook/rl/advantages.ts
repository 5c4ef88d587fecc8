// Group-centred advantages (spec §2.4): A_g = R_g − mean(R) in float32, as torch computes them
// from a tensor of Python floats. No std normalisation, clipping or length normalisation.
// torch's CPU sum of a float32 tensor accumulates in double (ATen's acc_type<float> on CPU) and
// rounds once; the mean then divides in float32 (pinned by test/parity/numbers.parity.test.ts).

import { f32 } from '../float32.js';
import type { TrajectoryGroup } from './types.js';

/** torch's `tensor_f32.mean()` on CPU: the sum accumulated in double, rounded, divided in float32. */
export function meanF32(xs: readonly number[]): number {
  let acc = 0;
  for (const x of xs) acc += f32(x);
  return f32(f32(acc) / xs.length);
}

/** One float32 advantage per trajectory of each group. */
export function computeAdvantages(groups: readonly TrajectoryGroup[]): number[][] {
  return groups.map((g) => {
    const rewards = g.getTotalRewards().map((r) => f32(r));
    if (rewards.length === 0) return [];
    const mean = meanF32(rewards);
    return rewards.map((r) => f32(r - mean));
  });
}

/**
 * Keep the groups whose total rewards are not all equal. If none is left, keep the first group
 * (it trains with zero advantage) and warn, as the reference does.
 */
export function removeConstantRewardGroups(
  groups: readonly TrajectoryGroup[],
  onWarning?: (message: string) => void,
): TrajectoryGroup[] {
  const kept = groups.filter((g) => {
    const r = g.getTotalRewards();
    return !r.every((x) => x === r[0]);
  });
  if (kept.length === 0) {
    onWarning?.('All rewards are uniform. There will be no gradient');
    return groups.slice(0, 1);
  }
  return kept;
}
