// Client-side custom loss, the SDK's forward_backward_custom (§9.8): forward with cross_entropy
// → loss and dC/dlogprobs computed in TypeScript → forward_backward(cross_entropy, weights = −g).
// Because the server's cross-entropy loss is −Σ w·logp, its gradient with w = −g is Σ g·∇logp = ∇C,
// so the accumulated gradient is exactly the custom loss's. Used by DPO.
import { submitted } from './core.js';
import {
  BackendError,
  type CustomLossFn,
  type CustomLossSubmitted,
  type Datum,
  type ForwardBackwardOutput,
  type SeqOpts,
  type Submitted,
  type TensorData,
  type TrainingSession,
} from './types.js';

/** Only these keys reach the server; extra keys stay visible to the loss function (like `mask`). */
function serverDatum(d: Datum, weights?: number[]): Datum {
  const targets = d.loss_fn_inputs.target_tokens;
  if (!targets) {
    throw new BackendError('forwardBackwardCustom: every datum needs loss_fn_inputs.target_tokens', undefined, 'ForwardBackwardCustom', undefined, 'bad_request');
  }
  const shape = targets.shape ?? [targets.data.length];
  // The SDK inserts all-zero weights where absent so the forward is a valid cross_entropy call.
  const w: TensorData = weights
    ? { data: weights, dtype: 'float32', shape }
    : (d.loss_fn_inputs.weights ?? { data: new Array<number>(targets.data.length).fill(0), dtype: 'float32', shape });
  return { model_input: d.model_input, loss_fn_inputs: { target_tokens: targets, weights: w } };
}

/**
 * Consumes the seq ids of both calls: the forward's chunks first (opts.seqId …), then the
 * forward_backward's. Resolves once the forward_backward is submitted, i.e. after the forward has
 * been computed, so an optim_step submitted next is still ordered after it.
 */
export async function runCustomLoss(
  session: Pick<TrainingSession, 'forward' | 'forwardBackward'>,
  data: Datum[],
  lossFn: CustomLossFn,
  opts: SeqOpts,
): Promise<CustomLossSubmitted> {
  const fwdData = data.map((d) => serverDatum(d));
  const fwd = await session.forward(fwdData, 'cross_entropy', { seqId: opts.seqId });
  const fwdOut = await fwd.result();
  const logprobs = fwdOut.loss_fn_outputs.map((o, i) => {
    const lp = o.logprobs;
    if (!lp) throw new BackendError(`forwardBackwardCustom: forward output ${i} has no logprobs`, undefined, 'ForwardBackwardCustom', o, 'server');
    return lp.data;
  });
  if (logprobs.length !== data.length) {
    throw new BackendError(`forwardBackwardCustom: forward returned ${logprobs.length} outputs for ${data.length} datums`, undefined, 'ForwardBackwardCustom', undefined, 'server');
  }
  const result = await lossFn(data, logprobs);
  if (result.grads.length !== data.length) {
    throw new BackendError(`forwardBackwardCustom: loss returned ${result.grads.length} gradients for ${data.length} datums`, undefined, 'ForwardBackwardCustom', undefined, 'bad_request');
  }
  const fbData = fwdData.map((d, i) => {
    const g = result.grads[i];
    if (g.length !== logprobs[i].length) {
      throw new BackendError(`forwardBackwardCustom: gradient ${i} has ${g.length} entries, logprobs have ${logprobs[i].length}`, undefined, 'ForwardBackwardCustom', undefined, 'bad_request');
    }
    if (!g.every(Number.isFinite)) {
      throw new BackendError(`forwardBackwardCustom: gradient ${i} is non-finite`, undefined, 'ForwardBackwardCustom', undefined, 'bad_request');
    }
    return serverDatum(d, g.map((v) => (v === 0 ? 0 : -v)));
  });
  const fb = await session.forwardBackward(fbData, 'cross_entropy', { seqId: opts.seqId + fwd.seqIds });
  // As SDK 0.38: the loss function's metrics, then `loss:sum` is the custom loss's (set last, so it
  // wins), and the server's own loss:sum (the linear surrogate's) stays as `surrogate_loss:sum`.
  const lossMetrics = { ...result.metrics, 'loss:sum': result.loss };
  const sub = submitted(
    fwd.seqIds + fb.seqIds,
    async () => withLossMetrics(await fb.result(), lossMetrics),
    fb.requestIds,
  );
  return { ...sub, lossMetrics };
}

/**
 * A custom-loss backward's server output with the client-side loss metrics merged over it; the
 * server's `loss:sum` becomes `surrogate_loss:sum` (SDK 0.38's `_run_custom_backward`).
 */
export function withLossMetrics(out: ForwardBackwardOutput, lossMetrics: Record<string, number>): ForwardBackwardOutput {
  const { 'loss:sum': surrogate, ...server } = out.metrics;
  return { ...out, metrics: { ...server, ...lossMetrics, ...(surrogate === undefined ? {} : { 'surrogate_loss:sum': surrogate }) } };
}
