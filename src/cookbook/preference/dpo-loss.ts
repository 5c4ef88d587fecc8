// The DPO loss (spec §4.3, reference `train_dpo.py::compute_dpo_loss` and `dpo_loss_fn`) and its
// gradient with respect to the policy's per-token logprobs, in float32 as torch computes them.
// Data are interleaved chosen/rejected (c0, r0, c1, r1, …); each sequence's logprob is the dot of
// its per-token logprobs with the datum's own (raw 0/1) weights.

import type { CustomLossFn, CustomLossResult, Datum } from '../../backends/types.js';
import { dotF32, f32, sumF32 } from '../float32.js';

export interface DpoMetrics {
  dpo_loss: number;
  accuracy: number;
  margin: number;
  chosen_reward: number;
  rejected_reward: number;
  [key: string]: number;
}

export interface DpoLossResult {
  loss: number;
  /** d loss / d (sequence logprob), per pair: chosen gets +g_i, rejected −g_i (before the weights). */
  pairGrads: number[];
  metrics: DpoMetrics;
}

/**
 * log σ(x) for a float32 x, rounded once to float32: min(x, 0) − log1p(exp(−|x|)) evaluated in
 * double, which is what torch's float32 log_sigmoid returns (its intermediates are not rounded).
 */
export function logSigmoidF32(x: number): number {
  return f32(Math.min(x, 0) - Math.log1p(Math.exp(-Math.abs(x))));
}

/** σ(−x), the factor of log_sigmoid's backward, stable on both sides of 0 and rounded once. */
function sigmoidOfNegF32(x: number): number {
  const z = Math.exp(-Math.abs(x));
  return f32(x < 0 ? 1 / (1 + z) : z / (1 + z));
}

const meanF32 = (xs: readonly number[]) => f32(sumF32(xs) / xs.length);

/**
 * Sequence-level DPO over P pairs: loss = mean_i −log σ(β(Δc_i − Δr_i)), Δ = π − ρ (policy minus
 * reference sequence logprob). Metric names are the reference's.
 */
export function dpoLoss(
  chosenLp: readonly number[],
  rejectedLp: readonly number[],
  refChosenLp: readonly number[],
  refRejectedLp: readonly number[],
  beta: number,
): DpoLossResult {
  const P = chosenLp.length;
  if (P === 0) throw new RangeError('dpoLoss: no pairs');
  for (const [name, xs] of [['rejectedLp', rejectedLp], ['refChosenLp', refChosenLp], ['refRejectedLp', refRejectedLp]] as const) {
    if (xs.length !== P) throw new RangeError(`dpoLoss: ${name} has ${xs.length} entries, chosenLp has ${P}`);
  }
  const b = f32(beta);
  const chosenRatio = chosenLp.map((x, i) => f32(f32(x) - f32(refChosenLp[i])));
  const rejectedRatio = rejectedLp.map((x, i) => f32(f32(x) - f32(refRejectedLp[i])));
  const z = chosenRatio.map((c, i) => f32(b * f32(c - rejectedRatio[i])));
  const loss = meanF32(z.map((zi) => f32(-logSigmoidF32(zi))));
  const chosenRewards = chosenRatio.map((c) => f32(b * c));
  const rejectedRewards = rejectedRatio.map((r) => f32(b * r));
  // Autograd's chain: mean → 1/P, neg → −, log_sigmoid → σ(−z), z = β(Δc − Δr) → β.
  const invP = f32(1 / P);
  const pairGrads = z.map((zi) => f32(f32(-invP * sigmoidOfNegF32(zi)) * b));
  return {
    loss,
    pairGrads,
    metrics: {
      dpo_loss: loss,
      accuracy: meanF32(chosenRatio.map((c, i) => (c > rejectedRatio[i] ? 1 : 0))),
      margin: meanF32(chosenRewards.map((c, i) => f32(c - rejectedRewards[i]))),
      chosen_reward: meanF32(chosenRewards),
      rejected_reward: meanF32(rejectedRewards),
    },
  };
}

const weightsOf = (d: Datum): number[] => {
  const w = d.loss_fn_inputs.weights;
  if (!w) throw new RangeError('DPO datum has no loss_fn_inputs.weights');
  return w.data;
};

/**
 * The custom loss for `forwardBackwardCustom`: policy logprobs from the forward pass, reference
 * logprobs (aligned to the targets) given per datum. Returns d loss / d logprobs per datum.
 */
export function dpoLossFn(refLogprobs_D: readonly number[][], beta: number): CustomLossFn {
  return (data, logprobs_D): CustomLossResult => {
    if (data.length % 2 !== 0) throw new RangeError(`DPO needs an even number of datums (chosen, rejected pairs), got ${data.length}`);
    if (refLogprobs_D.length !== data.length) throw new RangeError(`DPO: ${refLogprobs_D.length} reference rows for ${data.length} datums`);
    const seqLp = (rows: readonly number[][], parity: number) =>
      data.flatMap((d, i) => (i % 2 === parity ? [dotF32(rows[i], weightsOf(d))] : []));
    const { loss, pairGrads, metrics } = dpoLoss(seqLp(logprobs_D, 0), seqLp(logprobs_D, 1), seqLp(refLogprobs_D, 0), seqLp(refLogprobs_D, 1), beta);
    const grads = data.map((d, i) => {
      const g = i % 2 === 0 ? pairGrads[i >> 1] : f32(-pairGrads[i >> 1]);
      return weightsOf(d).map((w) => f32(g * w));
    });
    return { loss, grads, metrics };
  };
}

/** The reference's guard for datasets that are not built in pairs: an odd last datum is dropped. */
export function evenDatums<T>(data: readonly T[], warn: (msg: string) => void = console.warn): T[] {
  if (data.length % 2 === 0) return [...data];
  warn(`DPO batch has an odd number of datums (${data.length}); dropping the last one`);
  return data.slice(0, -1);
}
