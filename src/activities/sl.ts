// Supervised activities (cookbook-spec §1.2, §1.5). A step's forward_backward and optim_step are
// submitted back to back with sequence ids from the workflow, so a retry resends exactly the same
// ids. Unpipelined, one activity submits and awaits them (`slStep`); pipelined, `slSubmit` queues
// them and `slFinish` awaits them while the next step's `slSubmit` runs.
import type { Datum, ForwardBackwardOutput, OptimStepResponse, TrainingSession } from '../backends/types.js';
import type { SupervisedConfig } from '../cookbook/config/sl.js';
import { captureTrainOp } from '../capture/run-capture.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { buildChatDatasets } from '../cookbook/supervised/dataset.js';
import { computeBpb, computeMeanNll } from '../cookbook/supervised/nll.js';
import { NO_TOKENS, TokenTracker, tokenUsage } from '../cookbook/token-usage.js';
import { scopeSpan } from '../cookbook/timing.js';
import { ApplicationFailure } from '@temporalio/activity';
import { callBackend, collectOrResubmit, heartbeating, type ActivityDeps } from './context.js';
import { runDataCache } from './run-data.js';
import { asEvaluator, stepTiming } from './timing.js';
import { readRunConfig } from './training.js';
import { heldToSeqRules } from './unsequenced.js';
import { ErrorTypes, type EvalInput, type EvalResult, type SlFinishInput, type SlFinishResult, type SlPlan, type SlRowState, type SlStepInput, type SlStepResult, type SlSubmitResult } from './types.js';

type SlData = Awaited<ReturnType<typeof buildChatDatasets>>;

// Datasets are rebuilt from the run's config on any worker, then kept for the worker's lifetime:
// the data is referenced by the config, never carried in payloads.
const slData = runDataCache<SupervisedConfig, SlData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset],
  (cfg) => buildChatDatasets(cfg.dataset, cfg),
);

const logprobsOf = (out: { loss_fn_outputs: Array<Record<string, { data: number[] }>> }) => out.loss_fn_outputs.map((o) => o.logprobs.data);
const weightsOf = (data: Datum[]) => data.map((d) => d.loss_fn_inputs.weights.data);
const targetsOf = (data: Datum[]) => data.map((d) => d.loss_fn_inputs.target_tokens.data);
const inputLength = (d: Datum) => d.model_input.chunks.reduce((n, c) => n + (c.type === 'encoded_text' ? c.tokens.length : (c.expected_tokens ?? 0)), 0);

/** A supervised step's `tokens/*` metrics: it samples and prefills nothing, it trains its batch. */
function slTokenMetrics(elapsedTokensBefore: number, numTokens: number): Record<string, number> {
  return new TokenTracker({ cumulative: tokenUsage({ trained: elapsedTokensBefore }), discarded: NO_TOKENS }).recordStep(tokenUsage({ trained: numTokens }));
}

/** A NaN mean NLL over a batch with trainable tokens means the model diverged: stop the run. */
function assertFinite(metrics: Record<string, number>, step: number): void {
  if (metrics.num_loss_tokens > 0 && !Number.isFinite(metrics.train_mean_nll)) {
    throw ApplicationFailure.nonRetryable(
      `step ${step}: train_mean_nll is ${metrics.train_mean_nll} (non-finite loss); the run stops here and its last checkpoint is intact`,
      ErrorTypes.nonFiniteLoss,
    );
  }
}

export function supervisedActivities(deps: ActivityDeps) {
  const session = (run: RunRef, modelId: string): TrainingSession => {
    const cfg = readRunConfig<SupervisedConfig>(run);
    return deps.backendFor(cfg.base_url, cfg.wire).openTrainingSession(modelId);
  };

  /** The reference's `submit_batch` (its evals are activities of their own here): the batch, its requests queued. */
  function submitStep({ run, model, step, epoch, batch, learningRate }: SlStepInput) {
    return scopeSpan('submit_batch', async () => {
      const { cfg, data } = slData(run);
      const batch_D = await scopeSpan('get_batch', async () => (await data).train.batchAt(epoch, batch));
      const client = heldToSeqRules(session(run, model.modelId), model);
      const fb = await callBackend('forward_backward', 'model-lost', () => client.forwardBackward(batch_D, 'cross_entropy', { seqId: model.nextSeqId }));
      const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
      const optim = await callBackend('optim_step', 'model-lost', () => client.optimStep(adam, { seqId: model.nextSeqId + fb.seqIds }));
      captureTrainOp(cfg.capture, { run, step, op: 'forward_backward', modelId: model.modelId, details: { loss_fn: 'cross_entropy', epoch, batch } }, batch_D);
      captureTrainOp(cfg.capture, { run, step, op: 'optim_step', modelId: model.modelId, details: { learning_rate: learningRate } });
      return { batch_D, fb, optim };
    });
  }

  /**
   * The reference's `finish_batch`: the step's results awaited (`step`) and its metrics row (§1.2
   * step 7) written with the step's timing; a diverged loss stops the run.
   */
  async function finishStep(
    input: Omit<SlStepInput, 'model'> & SlRowState,
    collect: () => Promise<{ batch_D: Datum[]; results: [ForwardBackwardOutput, OptimStepResponse] }>,
  ): Promise<SlFinishResult> {
    const { numTokens, metrics } = await scopeSpan('finish_batch', async () => {
      const { batch_D, results } = await scopeSpan('step', collect);
      return rowMetrics(input, batch_D, ...results);
    });
    const timing = stepTiming(input.run, input.step);
    Object.assign(metrics, timing.metrics);
    const store = new RunStore(input.run.logPath);
    store.writeMetrics({ step: input.step, ...metrics });
    timing.write(store);
    assertFinite(metrics, input.step);
    return { numTokens, metrics };
  }

  /** The step's metrics (§1.2 step 7) but its timing. */
  async function rowMetrics(
    { run, step, epoch, learningRate, progressDenominator, preStepMetrics, elapsedTokensBefore }: Omit<SlStepInput, 'model'> & SlRowState,
    batch_D: Datum[],
    fbOut: ForwardBackwardOutput,
    optimOut: OptimStepResponse,
  ) {
    const { tokenizer } = await slData(run).data;
    const logprobs_D = logprobsOf(fbOut);
    const weights_D = weightsOf(batch_D);
    const numTokens = batch_D.reduce((n, d) => n + inputLength(d), 0);
    const metrics: Record<string, number> = {
      epoch,
      progress: Math.min((step + 1) / progressDenominator, 1.0),
      learning_rate: learningRate,
      ...(optimOut.metrics ?? {}),
      num_sequences: batch_D.length,
      num_tokens: numTokens,
      num_loss_tokens: weights_D.reduce((s, w) => s + w.reduce((a, b) => a + b, 0), 0),
      train_mean_nll: computeMeanNll(logprobs_D, weights_D),
      // Every token of the batch goes through forward_backward: trained = num_tokens, and the
      // cumulative count is elapsed_tokens after the step (the reference's cost tracker).
      ...slTokenMetrics(elapsedTokensBefore, numTokens),
      train_mean_bpb: computeBpb(logprobs_D, weights_D, targetsOf(batch_D), tokenizer),
      ...preStepMetrics,
    };
    return { numTokens, metrics };
  }

  return {
    async slPrepare({ run }: { run: RunRef }): Promise<SlPlan> {
      const { data } = slData(run);
      const { train, test } = await data;
      if (train.length === 0) {
        throw ApplicationFailure.nonRetryable('the training set has fewer rows than one batch: no step can run (lower dataset.batch_size or add rows)', ErrorTypes.data);
      }
      await test?.loadBatch(0);
      return { nBatches: train.length, testSize: test ? test.getBatch(0).length : 0 };
    },

    /** The whole step unit in one activity (`submit_ahead` 0): submitted, awaited, logged. */
    async slStep(input: SlStepInput & SlRowState): Promise<SlStepResult> {
      const { batch_D, fb, optim } = await submitStep(input);
      const row = await finishStep(input, async () => ({
        batch_D,
        results: await callBackend('train step', 'model-lost', () => heartbeating(Promise.all([fb.result(), optim.result()]), { step: input.step })),
      }));
      return { seqIdsUsed: fb.seqIds + optim.seqIds, ...row };
    },

    /**
     * A pipelined step's first half: its forward_backward and optim_step queued on the server, not
     * awaited. Returns their request ids, which `slFinish` awaits (a retry resends the same seq
     * ids, and the server answers them with the same request ids).
     */
    async slSubmit(input: SlStepInput): Promise<SlSubmitResult> {
      const { batch_D, fb, optim } = await submitStep(input);
      return {
        seqIdsUsed: fb.seqIds + optim.seqIds,
        submitted: { model: input.model, forwardBackward: fb.requestIds!, optimStep: optim.requestIds![0] },
        numTokens: batch_D.reduce((n, d) => n + inputLength(d), 0),
      };
    },

    /** A pipelined step's second half: its results awaited, its metrics row written. */
    async slFinish(input: SlFinishInput): Promise<SlFinishResult> {
      const { run, step, epoch, batch, submitted } = input;
      const { data } = slData(run);
      const client = heldToSeqRules(session(run, submitted.model.modelId), submitted.model);
      return finishStep(input, async () => ({
        batch_D: await (await data).train.batchAt(epoch, batch),
        results: await callBackend('train step', 'model-lost', () =>
          heartbeating(
            collectOrResubmit(
              () => Promise.all([client.forwardBackwardResult(submitted.forwardBackward), client.optimStepResult(submitted.optimStep)]),
              async () => {
                const { fb, optim } = await submitStep({ ...input, model: submitted.model });
                return Promise.all([fb.result(), optim.result()]);
              },
            ),
            { step },
          ),
        ),
      }));
    },

    /** The NLL evaluator on the test split: a forward pass (no gradients) on the pre-step weights. */
    slEval: ({ run, model, step }: EvalInput): Promise<EvalResult> => asEvaluator(run, async (): Promise<EvalResult> => {
      const { data } = slData(run);
      const { test, tokenizer } = await data;
      if (!test) return { seqIdsUsed: 0, metrics: {} };
      await test.loadBatch(0);
      const test_D = test.getBatch(0);
      const client = heldToSeqRules(session(run, model.modelId), model);
      const fwd = await callBackend('forward', 'model-lost', () => client.forward(test_D, 'cross_entropy', { seqId: model.nextSeqId }));
      const out = await callBackend('forward', 'model-lost', () => heartbeating(fwd.result(), { step }));
      const logprobs_D = logprobsOf(out);
      const weights_D = weightsOf(test_D);
      return {
        seqIdsUsed: fwd.seqIds,
        metrics: {
          'test/nll': computeMeanNll(logprobs_D, weights_D),
          'test/bpb': computeBpb(logprobs_D, weights_D, targetsOf(test_D), tokenizer),
        },
      };
    }),
  };
}
