// reverse_kl_custom_loss (distillation/sdft.py, `reverse=True`): the analytical reverse KL over the
// teacher's top-K set, in REINFORCE form with the bracket stop-gradded. The datums are the top-K
// ones (renormalised teacher probability in `weights`, 0 = not trained); the forward returns the
// student's logprob of every (N, K) target, and the gradient handed back is dLoss/dlogp.
import type { CustomLossResult, Datum } from '../../backends/types.js';
import { f32 } from '../float32.js';

/**
 * Per trained position with valid slots S: p = softmax(logp_S), a_k = log p_k − log q_k (no
 * gradient), loss = Σ_k p_k a_k, whose gradient is p_j (a_j − Σ_k p_k a_k).
 */
export function reverseKlCustomLoss(data: Datum[], logprobs: number[][]): CustomLossResult {
  let totalLoss = 0;
  let sumKl = 0;
  let sumEntropy = 0;
  let positions = 0;
  const grads = data.map((datum, d) => {
    const weights = datum.loss_fn_inputs.weights.data;
    const shape = datum.loss_fn_inputs.weights.shape ?? [weights.length];
    const K = shape.length === 2 ? shape[1] : 1;
    const N = weights.length / K;
    const lp = logprobs[d];
    if (lp.length !== weights.length) throw new RangeError(`reverse KL: datum ${d} has ${weights.length} target slots but ${lp.length} logprobs`);
    const grad = new Array<number>(lp.length).fill(0);
    let lossD = 0;
    for (let n = 0; n < N; n++) {
      const slots: number[] = [];
      for (let k = 0; k < K; k++) if (weights[n * K + k] > 0) slots.push(n * K + k);
      if (slots.length === 0) continue;
      const logP = logSoftmaxF32(slots.map((s) => lp[s]));
      const p = logP.map((x) => f32(Math.exp(x)));
      const adv = slots.map((s, i) => f32(logP[i] - f32(Math.log(f32(weights[s])))));
      let perPos = 0;
      let ent = 0;
      for (let i = 0; i < slots.length; i++) {
        perPos = f32(perPos + f32(p[i] * adv[i]));
        ent = f32(ent - f32(p[i] * logP[i]));
      }
      // As autograd rounds it: d/dlogp of log_softmax's output (a·p) minus p·Σ(a·p).
      slots.forEach((s, i) => {
        grad[s] = f32(f32(adv[i] * p[i]) - f32(p[i] * perPos));
      });
      lossD = f32(lossD + perPos);
      sumKl += perPos;
      sumEntropy += ent;
      positions += 1;
    }
    totalLoss = f32(totalLoss + lossD);
    return grad;
  });
  const metrics: Record<string, number> = { 'sdft/reverse_kl_loss': totalLoss };
  if (positions > 0) {
    metrics['sdft/reverse_kl_mean'] = sumKl / positions;
    metrics['sdft/student_entropy_mean'] = sumEntropy / positions;
  }
  metrics['sdft/reverse_kl_positions'] = positions;
  return { loss: totalLoss, grads, metrics };
}

/** torch.log_softmax on float32: (x − max) − log Σ exp(x − max), rounded in that order. */
function logSoftmaxF32(xs: number[]): number[] {
  const max = xs.reduce((m, x) => (f32(x) > m ? f32(x) : m), -Infinity);
  const shifted = xs.map((x) => f32(f32(x) - max));
  let sum = 0;
  for (const x of shifted) sum = f32(sum + f32(Math.exp(x)));
  const logSum = f32(Math.log(sum));
  return shifted.map((x) => f32(x - logSum));
}
