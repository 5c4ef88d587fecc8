// The soft-label loss of decisions (reference recipes/decisions/train.py `probability_loss`): a
// per-example loss on the model's probabilities over the choices (a softmax over the answer
// position's choice logprobs), averaged over the batch, with its gradient with respect to the
// logprobs, all in float32 as torch computes them (forward_backward_custom sends weights = −grad).
import type { CustomLossFn, CustomLossResult, Datum } from '../../../backends/types.js';
import { f32, sumF32 } from '../../float32.js';

/** A scalar loss of (choiceProbs, targetProbs), both in choice order, and its gradient in choiceProbs. */
export interface ProbabilityLossFn {
  value(choiceProbs: readonly number[], targetProbs: readonly number[]): number;
  grad(choiceProbs: readonly number[], targetProbs: readonly number[]): number[];
}

/** Brier score, Σ (p − t)²: the loss forecasting.py trains with (2·(p_yes − outcome)² for yes / no). */
export const brierLoss: ProbabilityLossFn = {
  value: (p, t) => sumF32(p.map((x, i) => f32(f32(x - t[i]) ** 2))),
  grad: (p, t) => p.map((x, i) => f32(2 * f32(x - t[i]))),
};

/** torch.softmax of a float32 vector: exp(x − max) over its sum (taken as a reciprocal, then multiplied). */
export function softmaxF32(logits: readonly number[]): number[] {
  const max = Math.max(...logits.map(f32));
  const e = logits.map((x) => f32(Math.exp(f32(f32(x) - max))));
  const inv = f32(1 / sumF32(e));
  return e.map((x) => f32(x * inv));
}

/** The index of the first largest value (torch.argmax). */
export function argmax(xs: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

const lastRow = (data: readonly number[], K: number) => data.slice(data.length - K);

function choiceCount(d: Datum, i: number): number {
  const shape = d.loss_fn_inputs.target_tokens?.shape;
  if (!shape || shape.length !== 2) throw new RangeError(`probability loss: datum ${i} needs 2-D target_tokens (T, K), got shape ${JSON.stringify(shape)}`);
  return shape[1];
}

/**
 * A forwardBackwardCustom loss from a per-example loss on the choice distribution. Metrics, as the
 * reference's: `loss` (the batch mean), `target_prob:mean` (probability given to the targets) and
 * `accuracy` (the argmax of the model's probabilities is the targets' argmax).
 */
export function probabilityLoss(lossFn: ProbabilityLossFn): CustomLossFn {
  return (data, logprobs_D): CustomLossResult => {
    const D = data.length;
    if (D === 0) throw new RangeError('probability loss: no datums');
    const invD = f32(1 / D);
    const losses: number[] = [];
    const targetProbs: number[] = [];
    let correct = 0;
    const grads = data.map((datum, i) => {
      const K = choiceCount(datum, i);
      const target_K = lastRow(datum.loss_fn_inputs.weights.data, K).map(f32);
      const probs_K = softmaxF32(lastRow(logprobs_D[i], K));
      losses.push(lossFn.value(probs_K, target_K));
      targetProbs.push(sumF32(probs_K.map((p, k) => f32(p * target_K[k]))));
      if (argmax(probs_K) === argmax(target_K)) correct += 1;
      // d mean / d loss_i = 1/D, then softmax's backward: p ⊙ (g − Σ g·p).
      const g_K = lossFn.grad(probs_K, target_K).map((g) => f32(g * invD));
      const dot = sumF32(g_K.map((g, k) => f32(g * probs_K[k])));
      const grad = new Array<number>(logprobs_D[i].length).fill(0);
      const offset = grad.length - K;
      probs_K.forEach((p, k) => (grad[offset + k] = f32(p * f32(g_K[k] - dot))));
      return grad;
    });
    const loss = f32(sumF32(losses) / D);
    return {
      loss,
      grads,
      metrics: { loss, 'target_prob:mean': f32(sumF32(targetProbs) / D), accuracy: correct / D },
    };
  };
}
