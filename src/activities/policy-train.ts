// One policy-gradient step unit on assembled datums (spec §2.9 steps 9–10): forward_backward +
// optim_step per substep, then the sampler weights the next step samples from, all submitted back
// to back so the server pipelines them. Sequence ids run contiguously from the model's cursor, and
// the chunking is a pure function of the data, so a retried activity resends exactly the same ids.
import type { Datum, ForwardBackwardOutput, LossFn, OptimStepResponse, Submitted, TrainingBackend } from '../backends/types.js';
import { removeMask, splitList } from '../cookbook/rl/data.js';
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
  /** Training logprobs per datum, for the sample/train KL metrics. */
  trainLogprobs_D: number[][];
  /** The last optim_step's metrics (the reference merges the last one). */
  optimMetrics: Record<string, number>;
  samplerPath: string;
}

export async function trainPolicyStep(
  backend: TrainingBackend,
  model: ModelRef,
  data_D: Datum[],
  cfg: PolicyStepConfig,
  opts: { learningRate: number; samplerName: string; step: number },
): Promise<PolicyStepResult> {
  const session = backend.openTrainingSession(model.modelId);
  const adam = { learning_rate: opts.learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
  let seqId = model.nextSeqId;
  const submitted: Array<{ fb: Submitted<ForwardBackwardOutput>; optim: Submitted<OptimStepResponse> }> = [];
  for (const chunk of splitList(data_D, Math.min(cfg.num_substeps, data_D.length))) {
    const fb = await callBackend('forward_backward', 'model-lost', () =>
      session.forwardBackward(chunk.map(removeMask), cfg.loss_fn, { seqId, lossFnConfig: cfg.loss_fn_config ?? undefined }),
    );
    seqId += fb.seqIds;
    const optim = await callBackend('optim_step', 'model-lost', () => session.optimStep(adam, { seqId }));
    seqId += optim.seqIds;
    submitted.push({ fb, optim });
  }
  const sampler = await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(opts.samplerName, { seqId, ttlSeconds: cfg.ttl_seconds }));
  seqId += sampler.seqIds;
  const results = await callBackend('train step', 'model-lost', () =>
    heartbeating(Promise.all([...submitted.map(({ fb, optim }) => Promise.all([fb.result(), optim.result()])), sampler.result()]), { step: opts.step }),
  );
  const trainOuts = results.slice(0, submitted.length) as Array<[ForwardBackwardOutput, OptimStepResponse]>;
  return {
    seqIdsUsed: seqId - model.nextSeqId,
    trainLogprobs_D: trainOuts.flatMap(([fbOut]) => fbOut.loss_fn_outputs.map((o) => o.logprobs.data)),
    optimMetrics: trainOuts[trainOuts.length - 1]?.[1].metrics ?? {},
    samplerPath: (results[results.length - 1] as { path: string }).path,
  };
}
