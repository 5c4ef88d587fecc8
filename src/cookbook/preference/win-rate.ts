// The reference's ComparisonEvaluator (preference/comparison_policy_evaluator.py): the policy answers
// each comparison's prompt, the preference model judges the reference completion (A) against the
// policy's (B) both ways, and each comparison scores (r_AB − r_BA + 2) / 4 in [0, 1]: 1 when the
// policy's answer wins in both orders. Reports the mean as `win_rate` and its standard error.

import type { MessageCompleter } from '../rl/completers.js';
import { getTextContent } from '../renderers/content.js';
import type { Comparison } from './comparisons.js';
import type { PreferenceModel } from './preference-model.js';

export async function comparisonWinRate(
  comparisons: Comparison[],
  /** The policy's completer for comparison `index` (seeded by the caller from the index). */
  policyFor: (index: number) => MessageCompleter,
  preferenceModel: PreferenceModel,
  contentPreprocessor: (content: string) => string = (c) => c,
): Promise<{ win_rate: number; stderr: number }> {
  const scores: number[] = [];
  // One comparison after another: the preference model's seeds follow the call order.
  for (const [index, comparison] of comparisons.entries()) {
    const message = await policyFor(index)(comparison.prompt_conversation);
    const withPolicy: Comparison = { ...comparison, completion_B: [{ role: 'assistant', content: contentPreprocessor(getTextContent(message)) }] };
    const r0 = await preferenceModel.score(withPolicy);
    const r1 = await preferenceModel.score({ ...withPolicy, completion_A: withPolicy.completion_B, completion_B: withPolicy.completion_A });
    scores.push((r0 - r1 + 2) / 4.0);
  }
  return { win_rate: mean(scores), stderr: scores.length > 1 ? sampleStd(scores) / Math.sqrt(scores.length) : 0.0 };
}

/** np.mean: the scores are multiples of 1/4, so every summation order gives the same, exact sum. */
function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
}

/** np.std(ddof=1); numpy sums the squared deviations pairwise, so past 8 values the last bit may differ. */
function sampleStd(xs: number[]): number {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}
