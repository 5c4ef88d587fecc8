// Decisions activities (reference recipes/decisions): a step is the batch's datums, then
// forward_backward (cross_entropy on the answer token) or forward_backward_custom (the Brier
// probability loss) and the optim_step submitted back to back with sequence ids from the workflow,
// so a retry resends exactly the same ids; an eval samples the held-out decisions from a sampler
// snapshot, its probabilities recorded in the run store by step and read back on a retry.
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, ForwardBackwardOutput, TrainingSession } from '../backends/types.js';
import type { DecisionsConfig } from '../cookbook/config/decisions.js';
import { f32, sumF32, dotF32 } from '../cookbook/float32.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import {
  batchOf,
  batchesPerEpoch,
  brierLoss,
  decisionChoiceDatums,
  decisionDistDatums,
  loadDecisionsData,
  probabilityLoss,
  sampleDecision,
  scoreDecisions,
  labelOf,
  targetProbsOf,
  type DecisionsData,
} from '../cookbook/supervised/decisions/index.js';
import { nowMs, scopeSpan } from '../cookbook/timing.js';
import { callBackend, heartbeating, samplingBackendOf, type ActivityDeps } from './context.js';
import { runDataCache } from './run-data.js';
import { asEvaluator, stepTiming } from './timing.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';
import { heldToSeqRules } from './unsequenced.js';

const decisionsData = runDataCache<DecisionsConfig, DecisionsData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.data_path, cfg.validation_data_path, cfg.max_train_questions, cfg.max_validation_questions, cfg.loss_fn],
  (cfg) => loadDecisionsData(cfg),
);

export interface DecisionsPlan {
  /** Steps per epoch: the training decisions in batches of batch_size (the last maybe short). */
  nBatches: number;
  validationSize: number;
}

export interface DecisionsStepInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  batch: number;
  learningRate: number;
  totalSteps: number;
  /** Evals on the pre-step weights, merged into the step's row. */
  preStepMetrics: Record<string, number>;
}
export interface DecisionsStepResult extends SeqUse {
  metrics: Record<string, number>;
}
export interface DecisionsEvalInput {
  run: RunRef;
  /** The step whose pre-step weights the sampler holds (the run's step count for the final eval). */
  step: number;
  samplerPath: string;
}

/** The reference's training metrics of a step: the probability loss's, or the mean cross-entropy of the answer token. */
const TRAIN_KEYS = ['loss', 'target_prob:mean', 'accuracy'];

function trainMetrics(lossFn: DecisionsData['lossFn'], datums: Datum[], out: ForwardBackwardOutput): Record<string, number> {
  if (lossFn === 'brier') return Object.fromEntries(TRAIN_KEYS.filter((k) => k in out.metrics).map((k) => [`train/${k}`, out.metrics[k]]));
  const nll_D = out.loss_fn_outputs.map((o, i) => f32(-dotF32(o.logprobs.data, datums[i].loss_fn_inputs.weights.data)));
  return { 'train/loss': f32(sumF32(nll_D) / datums.length) };
}

export interface DecisionsActivities {
  decisionsPrepare(input: { run: RunRef }): Promise<DecisionsPlan>;
  decisionsStep(input: DecisionsStepInput): Promise<DecisionsStepResult>;
  decisionsEval(input: DecisionsEvalInput): Promise<{ metrics: Record<string, number> }>;
}

export function decisionsActivities(deps: ActivityDeps): DecisionsActivities {
  const session = (cfg: DecisionsConfig, modelId: string): TrainingSession => deps.backendFor(cfg.base_url, cfg.wire).openTrainingSession(modelId);

  return {
    async decisionsPrepare({ run }: { run: RunRef }): Promise<DecisionsPlan> {
      const { cfg, data } = decisionsData(run);
      const { train, validation } = await data;
      return { nBatches: batchesPerEpoch(train.length, cfg.batch_size), validationSize: validation.length };
    },

    /** A whole step: datums, forward_backward(_custom) and optim_step submitted, awaited, its row written. */
    async decisionsStep({ run, model, step, batch, learningRate, totalSteps, preStepMetrics }: DecisionsStepInput): Promise<DecisionsStepResult> {
      const start = nowMs();
      const { cfg, data } = decisionsData(run);
      const d = await data;
      const examples = batchOf(d.train, cfg.batch_size, batch);
      const { seqIdsUsed, datums, out } = await scopeSpan('step', async () => {
        const datums =
          d.lossFn === 'brier'
            ? decisionDistDatums(d.renderer, examples.map((e) => [e.decision, targetProbsOf(e)] as const))
            : decisionChoiceDatums(d.renderer, examples.map((e) => [e.decision, labelOf(e)] as const));
        const client = heldToSeqRules(session(cfg, model.modelId), model);
        const seqId = model.nextSeqId;
        const fb =
          d.lossFn === 'brier'
            ? await callBackend('forward_backward_custom', 'model-lost', () => heartbeating(client.forwardBackwardCustom(datums, probabilityLoss(brierLoss), { seqId }), { step }))
            : await callBackend('forward_backward', 'model-lost', () => client.forwardBackward(datums, 'cross_entropy', { seqId }));
        const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
        const optim = await callBackend('optim_step', 'model-lost', () => client.optimStep(adam, { seqId: seqId + fb.seqIds }));
        const [out] = await callBackend('train step', 'model-lost', () => heartbeating(Promise.all([fb.result(), optim.result()]), { step }));
        return { seqIdsUsed: fb.seqIds + optim.seqIds, datums, out };
      });
      const metrics: Record<string, number> = {
        ...trainMetrics(d.lossFn, datums, out),
        learning_rate: learningRate,
        num_examples: examples.length,
        progress: (step + 1) / totalSteps,
        time_total: (nowMs() - start) / 1000,
        ...preStepMetrics,
      };
      const timing = stepTiming(run, step);
      Object.assign(metrics, timing.metrics);
      const store = new RunStore(run.logPath);
      store.writeMetrics({ step, ...metrics });
      timing.write(store);
      if (!Number.isFinite(metrics['train/loss'])) {
        throw ApplicationFailure.nonRetryable(`step ${step}: train/loss is ${metrics['train/loss']} (non-finite loss); the run stops here and its last checkpoint is intact`, ErrorTypes.nonFiniteLoss);
      }
      return { seqIdsUsed, metrics };
    },

    /** The held-out decisions scored from a sampler snapshot: `test/accuracy`, `test/target_prob:mean`, `test/brier`. */
    decisionsEval: ({ run, step, samplerPath }: DecisionsEvalInput): Promise<{ metrics: Record<string, number> }> => asEvaluator(run, async () => {
      const { cfg, data } = decisionsData(run);
      const { renderer, validation } = await data;
      if (validation.length === 0) return { metrics: {} };
      const store = new RunStore(run.logPath);
      const blob = `decisions_eval/step_${String(step).padStart(6, '0')}.json`;
      let probabilities: number[][];
      if (store.hasBlob(blob)) {
        probabilities = (JSON.parse(store.readBlob(blob).toString('utf8')) as { probabilities: number[][] }).probabilities;
      } else {
        const sampler = await callBackend('create sampling session', 'bad-path', () => samplingBackendOf(deps, cfg).createSamplingSession({ modelPath: samplerPath }));
        probabilities = await callBackend(`decisions eval before step ${step}`, 'session-lost', () =>
          heartbeating(Promise.all(validation.map(async (e) => [...(await sampleDecision(sampler, renderer.render(e.decision))).values()])), { step }),
        );
        store.writeBlob(blob, JSON.stringify({ step, sampler_path: samplerPath, labels: validation.map((e) => e.decision.labels), probabilities }));
      }
      const scores = scoreDecisions(validation, probabilities);
      return { metrics: Object.fromEntries(Object.entries(scores).map(([k, v]) => [`test/${k}`, v])) };
    }),
  };
}
