// One policy-gradient step unit on assembled datums (spec §2.9 steps 9–10): per optimizer substep,
// one forward_backward per minibatch then one optim_step, then the sampler weights the next step
// samples from, all submitted back to back so the server pipelines them. Sequence ids run
// contiguously from the model's cursor, and the split into substeps and minibatches is a pure
// function of the data, so a retried activity resends exactly the same ids.
import type { Datum, ForwardBackwardOutput, LossFn, OptimStepResponse, Submitted, TrainingBackend } from '../backends/types.js';
import { datumForLoss, splitList } from '../cookbook/rl/data.js';
import { callBackend, heartbeating } from './context.js';
import type { ModelRef } from './types.js';

export interface PolicyStepConfig {
  num_substeps: number;
  loss_fn: LossFn;
  loss_fn_config: Record<string, number> | null;
  adam_beta1: number;
  adam_beta2: number;
  adam_eps: number;
  ttl_seconds: number | null;
}

export interface PolicyStepResult {
  seqIdsUsed: number;
  /** Training logprobs per datum (substep, then minibatch, then datum order), for the sample/train KL metrics. */
  trainLogprobs_D: number[][];
  /** The last optim_step's metrics (the reference merges the last one). */
  optimMetrics: Record<string, number>;
  samplerPath: string;
}

/** The reference's `train_step`: `min(num_substeps, n)` contiguous chunks, one forward_backward each. */
export async function trainPolicyStep(
  backend: TrainingBackend,
  model: ModelRef,
  data_D: Datum[],
  cfg: PolicyStepConfig,
  opts: { learningRate: number; samplerName: string; step: number },
): Promise<PolicyStepResult> {
  const substeps = splitList(data_D, Math.min(cfg.num_substeps, data_D.length)).map((chunk) => [chunk]);
  return trainPolicySubsteps(backend, model, substeps, cfg, opts);
}

/**
 * Optimizer substeps, each a list of minibatches (streaming minibatches, §2.9): one forward_backward
 * per non-empty minibatch and one optim_step per substep that has any; no substep: only the sampler save.
 */
export async function trainPolicySubsteps(
  backend: TrainingBackend,
  model: ModelRef,
  substeps: Datum[][][],
  cfg: PolicyStepConfig,
  opts: { learningRate: number; samplerName: string; step: number },
): Promise<PolicyStepResult> {
  const session = backend.openTrainingSession(model.modelId);
  const adam = { learning_rate: opts.learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
  let seqId = model.nextSeqId;
  const submitted: Array<{ fbs: Array<Submitted<ForwardBackwardOutput>>; optim: Submitted<OptimStepResponse> }> = [];
  for (const minibatches of substeps) {
    const fbs: Array<Submitted<ForwardBackwardOutput>> = [];
    for (const minibatch of minibatches.filter((m) => m.length > 0)) {
      const fb = await callBackend('forward_backward', 'model-lost', () =>
        session.forwardBackward(minibatch.map((d) => datumForLoss(d, cfg.loss_fn)), cfg.loss_fn, { seqId, lossFnConfig: cfg.loss_fn_config ?? undefined }),
      );
      seqId += fb.seqIds;
      fbs.push(fb);
    }
    if (fbs.length === 0) continue;
    const optim = await callBackend('optim_step', 'model-lost', () => session.optimStep(adam, { seqId }));
    seqId += optim.seqIds;
    submitted.push({ fbs, optim });
  }
  const sampler = await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(opts.samplerName, { seqId, ttlSeconds: cfg.ttl_seconds }));
  seqId += sampler.seqIds;
  const [trainOuts, saved] = await callBackend('train step', 'model-lost', () =>
    heartbeating(
      Promise.all([Promise.all(submitted.map(({ fbs, optim }) => Promise.all([Promise.all(fbs.map((fb) => fb.result())), optim.result()] as const))), sampler.result()] as const),
      { step: opts.step },
    ),
  );
  return {
    seqIdsUsed: seqId - model.nextSeqId,
    trainLogprobs_D: trainOuts.flatMap(([fbOuts]) => fbOuts.flatMap((out) => out.loss_fn_outputs.map((o) => o.logprobs.data))),
    optimMetrics: trainOuts[trainOuts.length - 1]?.[1].metrics ?? {},
    samplerPath: (saved as { path: string }).path,
  };
}
