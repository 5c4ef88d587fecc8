// Training on a server that neither orders nor deduplicates by seq_id (ModelRef.seqIdIgnored).
// Two rules stand in for the guarantees it lacks:
// - one training request of the model in flight at a time: each forward_backward, optim_step,
//   save or load resolves only once its result is in, so the next is sent after it ran (the
//   server may otherwise run them in another order). The chunks of one forward_backward still
//   go together: they only add into the same gradient.
// - a step is never resent blindly: an activity retried after an attempt that may have sent its
//   forward_backward or optim_step (a worker that died, a timeout) fails with StepOutcomeUnknown
//   before sending anything, and the workflow restores the last checkpoint and replays from there
//   (training-run.ts). The cost: one restore, and the steps since the checkpoint trained again,
//   per retried training activity; a server that deduplicates never pays it.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Datum, ForwardOpts, LossFn, OptimParams, SeqOpts, TrainingBackend, TrainingSession } from '../backends/types.js';
import { ErrorTypes, type ModelRef } from './types.js';

/** The attempt of the running activity (1 outside an activity). */
function attempt(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1;
  }
}

function refuseRetry(model: ModelRef, what: string): void {
  const n = attempt();
  if (n <= 1) return;
  throw ApplicationFailure.nonRetryable(
    `${what} of model ${model.modelId}: attempt ${n} of a training activity on a server that ignores seq_id, ` +
      'whose earlier attempt may have applied it: restoring the last checkpoint instead of resending',
    ErrorTypes.stepOutcomeUnknown,
  );
}

async function settled<S extends { result(): Promise<unknown> }>(submitted: S): Promise<S> {
  await submitted.result();
  return submitted;
}

/** The model's training session, held to the rules above when its server ignores seq_id. */
export function modelSession(backend: TrainingBackend, model: ModelRef): TrainingSession {
  return heldToSeqRules(backend.openTrainingSession(model.modelId), model);
}

/** `session` (of `model`) as is, or held to the rules above when the model's server ignores seq_id. */
export function heldToSeqRules(session: TrainingSession, model: ModelRef): TrainingSession {
  if (!model.seqIdIgnored) return session;
  return Object.assign(Object.create(session) as TrainingSession, {
    forward: async (data: Datum[], lossFn: LossFn, opts: ForwardOpts) => settled(await session.forward(data, lossFn, opts)),
    forwardBackward: async (data: Datum[], lossFn: LossFn, opts: ForwardOpts) => {
      refuseRetry(model, 'forward_backward');
      return settled(await session.forwardBackward(data, lossFn, opts));
    },
    forwardBackwardCustom: async (...args: Parameters<TrainingSession['forwardBackwardCustom']>) => {
      refuseRetry(model, 'forward_backward_custom');
      return settled(await session.forwardBackwardCustom(...args));
    },
    optimStep: async (params: OptimParams, opts: SeqOpts) => {
      refuseRetry(model, 'optim_step');
      return settled(await session.optimStep(params, opts));
    },
    saveState: async (...args: Parameters<TrainingSession['saveState']>) => settled(await session.saveState(...args)),
    saveWeightsForSampler: async (...args: Parameters<TrainingSession['saveWeightsForSampler']>) => settled(await session.saveWeightsForSampler(...args)),
    loadState: async (...args: Parameters<TrainingSession['loadState']>) => settled(await session.loadState(...args)),
  } satisfies Partial<TrainingSession>);
}
