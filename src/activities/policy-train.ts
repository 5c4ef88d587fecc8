// One policy-gradient step unit on assembled datums (spec §2.9 steps 9–10): per optimizer substep,
// one forward_backward per minibatch then one optim_step, then the sampler weights the next step
// samples from, all submitted back to back so the server pipelines them. Sequence ids run
// contiguously from the model's cursor, and the split into substeps and minibatches is a pure
// function of the data, so a retried activity resends exactly the same ids.
import type { Datum, ForwardBackwardOutput, LossFn, OptimStepResponse, Submitted, TrainingBackend } from '../backends/types.js';
import { ApplicationFailure } from '@temporalio/activity';
import { checkProvenance, datumForLoss, splitList } from '../cookbook/rl/data.js';
import { CookbookError } from '../cookbook/errors.js';
import { nowMs, recordSpan, spanUntilSettled } from '../cookbook/timing.js';
import { callBackend, heartbeating } from './context.js';
import { ErrorTypes, type ModelRef } from './types.js';
import { modelSession } from './unsequenced.js';

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
  opts: { learningRate: number; samplerName: string; step: number; keepSampler?: string },
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
  opts: { learningRate: number; samplerName: string; step: number; keepSampler?: string },
): Promise<PolicyStepResult> {
  const session = modelSession(backend, model);
  if (opts.keepSampler !== undefined) return trainKeepingSampler(session, model, substeps, cfg, opts.learningRate, opts.keepSampler, opts.step);
  // The reference's `train_step`, then its save of the next sampler weights; here the save is queued
  // right behind the training, so the two spans overlap.
  const trainStart = nowMs();
  const { submitted, seqId } = await submitSubsteps(session, model.nextSeqId, substeps, cfg, opts.learningRate);
  const saveStart = nowMs();
  const sampler = await submitSamplerSave(session, seqId, opts.samplerName, cfg.ttl_seconds);
  const [trainOuts, samplerPath] = await callBackend('train step', 'model-lost', () =>
    heartbeating(Promise.all([spanUntilSettled(['train_step'], trainStart, collectSubsteps(submitted)), spanUntilSettled(SAMPLER_SAVE_SPANS, saveStart, sampler.result())] as const), { step: opts.step }),
  );
  return {
    seqIdsUsed: sampler.nextSeqId - model.nextSeqId,
    trainLogprobs_D: trainOuts.trainLogprobs_D,
    optimMetrics: trainOuts.optimMetrics ?? {},
    samplerPath,
  };
}

/**
 * The step without saving sampler weights (0.6.1's async SamplingClientReuse: no rollout will
 * sample the new weights): `keepSampler` stays the sampler.
 */
async function trainKeepingSampler(session: TrainingSession, model: ModelRef, substeps: Datum[][][], cfg: PolicyStepConfig, learningRate: number, keepSampler: string, step: number): Promise<PolicyStepResult> {
  const trainStart = nowMs();
  const { submitted, seqId } = await submitSubsteps(session, model.nextSeqId, substeps, cfg, learningRate);
  const trainOuts = await callBackend('train step', 'model-lost', () => heartbeating(spanUntilSettled(['train_step'], trainStart, collectSubsteps(submitted)), { step }));
  return { seqIdsUsed: seqId - model.nextSeqId, trainLogprobs_D: trainOuts.trainLogprobs_D, optimMetrics: trainOuts.optimMetrics ?? {}, samplerPath: keepSampler };
}

export interface PolicySubstepResult {
  seqIdsUsed: number;
  /** Training logprobs per datum (minibatch, then datum order). */
  trainLogprobs_D: number[][];
  /** The optim_step's metrics; null when every minibatch was empty (no optimizer step). */
  optimMetrics: Record<string, number> | null;
}

/**
 * One optimizer substep on its own (streaming minibatches trained while the step still samples):
 * a forward_backward per non-empty minibatch, then one optim_step; its sequence ids run from the
 * model's cursor, so a retried activity resends exactly the same ids. Timed as the reference's
 * do_train_step_streaming_and_get_sampling_client: each request's enqueue and consume.
 */
export async function trainPolicySubstep(
  backend: TrainingBackend,
  model: ModelRef,
  minibatches: Datum[][],
  cfg: PolicyStepConfig,
  opts: { learningRate: number; step: number; substep: number },
): Promise<PolicySubstepResult> {
  const session = modelSession(backend, model);
  const name = (what: string) => `train/${what}_substep_${opts.substep}`;
  const { submitted, seqId } = await submitSubsteps(session, model.nextSeqId, [minibatches], cfg, opts.learningRate, (kind, index, startMs) =>
    recordSpan(kind === 'optim' ? `${name('optim')}_enqueue` : `${name('fwd_bwd')}_mb_${index}_enqueue`, startMs, nowMs()),
  );
  const outs = await callBackend('train substep', 'model-lost', () => heartbeating(collectTimed(submitted[0], name), { step: opts.step, substep: opts.substep }));
  return { seqIdsUsed: seqId - model.nextSeqId, trainLogprobs_D: outs.trainLogprobs_D, optimMetrics: outs.optimMetrics };
}

/** A streaming substep's results, each request's wait timed as the reference's `_consume` spans. */
async function collectTimed(substep: SubmittedSubstep | undefined, name: (what: string) => string): Promise<{ trainLogprobs_D: number[][]; optimMetrics: Record<string, number> | null }> {
  if (!substep) return { trainLogprobs_D: [], optimMetrics: null };
  const trainLogprobs_D: number[][] = [];
  for (const [i, fb] of substep.fbs.entries()) {
    const start = nowMs();
    const out = await fb.result();
    recordSpan(`${name('fwd_bwd')}_mb_${i}_consume`, start, nowMs());
    trainLogprobs_D.push(...out.loss_fn_outputs.map((o) => o.logprobs.data));
  }
  const start = nowMs();
  const optim = await substep.optim.result();
  recordSpan(`${name('optim')}_consume`, start, nowMs());
  return { trainLogprobs_D, optimMetrics: optim.metrics ?? {} };
}

/** Sampler weights of the model as it stands (after a step's substeps): what the next step samples from. */
export async function savePolicySampler(
  backend: TrainingBackend,
  model: ModelRef,
  opts: { samplerName: string; ttlSeconds: number | null; step: number },
): Promise<{ seqIdsUsed: number; samplerPath: string }> {
  const session = modelSession(backend, model);
  const start = nowMs();
  const sampler = await submitSamplerSave(session, model.nextSeqId, opts.samplerName, opts.ttlSeconds);
  const samplerPath = await callBackend('save_weights_for_sampler', 'model-lost', () => heartbeating(spanUntilSettled(SAMPLER_SAVE_SPANS, start, sampler.result()), { step: opts.step }));
  return { seqIdsUsed: sampler.nextSeqId - model.nextSeqId, samplerPath };
}

/** The next sampler's weights saved, as the reference's step names it (`save_checkpoint_and_get_sampling_client` around its `save_checkpoint`). */
const SAMPLER_SAVE_SPANS = ['save_checkpoint', 'save_checkpoint_and_get_sampling_client'];

type TrainingSession = ReturnType<TrainingBackend['openTrainingSession']>;
type SubmittedSubstep = { fbs: Array<Submitted<ForwardBackwardOutput>>; optim: Submitted<OptimStepResponse> };

/** Submits the substeps back to back (the server pipelines them); returns the cursor after them. */
async function submitSubsteps(
  session: TrainingSession,
  firstSeqId: number,
  substeps: Datum[][][],
  cfg: PolicyStepConfig,
  learningRate: number,
  enqueued?: (kind: 'fwd_bwd' | 'optim', index: number, startMs: number) => void,
) {
  const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
  try {
    checkProvenance(substeps.flat(2), cfg.loss_fn); // before anything is sent, as the reference
  } catch (err) {
    if (err instanceof CookbookError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.data);
    throw err;
  }
  let seqId = firstSeqId;
  const submitted: SubmittedSubstep[] = [];
  for (const minibatches of substeps) {
    const fbs: Array<Submitted<ForwardBackwardOutput>> = [];
    for (const minibatch of minibatches.filter((m) => m.length > 0)) {
      const start = nowMs();
      const fb = await callBackend('forward_backward', 'model-lost', () =>
        session.forwardBackward(minibatch.map((d) => datumForLoss(d, cfg.loss_fn)), cfg.loss_fn, { seqId, lossFnConfig: cfg.loss_fn_config ?? undefined }),
      );
      enqueued?.('fwd_bwd', fbs.length, start);
      seqId += fb.seqIds;
      fbs.push(fb);
    }
    if (fbs.length === 0) continue;
    const start = nowMs();
    const optim = await callBackend('optim_step', 'model-lost', () => session.optimStep(adam, { seqId }));
    enqueued?.('optim', 0, start);
    seqId += optim.seqIds;
    submitted.push({ fbs, optim });
  }
  return { submitted, seqId };
}

/** Training logprobs of every datum in submission order, and the last optim_step's metrics (the reference merges the last). */
async function collectSubsteps(submitted: SubmittedSubstep[]): Promise<{ trainLogprobs_D: number[][]; optimMetrics: Record<string, number> | null }> {
  const outs = await Promise.all(submitted.map(({ fbs, optim }) => Promise.all([Promise.all(fbs.map((fb) => fb.result())), optim.result()] as const)));
  return {
    trainLogprobs_D: outs.flatMap(([fbOuts]) => fbOuts.flatMap((out) => out.loss_fn_outputs.map((o) => o.logprobs.data))),
    optimMetrics: outs.length ? (outs[outs.length - 1][1].metrics ?? {}) : null,
  };
}

async function submitSamplerSave(session: TrainingSession, seqId: number, name: string, ttlSeconds: number | null) {
  const sampler = await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(name, { seqId, ttlSeconds }));
  return { nextSeqId: seqId + sampler.seqIds, result: async () => ((await sampler.result()) as { path: string }).path };
}
