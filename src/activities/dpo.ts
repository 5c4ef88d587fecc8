// DPO activities (cookbook-spec §4.3). A step: reference logprobs (from a sampler named by path or
// base model, cached per row in the run store), then the custom-loss forward_backward and the
// optim_step submitted back to back before either is awaited, so a retry resends exactly the same
// sequence ids. Unpipelined, one activity does it all (`dpoStep`); pipelined, `dpoSubmit` queues
// the requests and `dpoFinish` awaits them while the next step's `dpoSubmit` runs.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { withLossMetrics } from '../backends/custom-loss.js';
import type { Datum, ForwardBackwardOutput, OptimStepResponse, TrainingSession } from '../backends/types.js';
import type { DPOConfig } from '../cookbook/config/dpo.js';
import { runLogger } from '../cookbook/logging.js';
import { buildPreferenceDatasets } from '../cookbook/preference/dataset.js';
import { dpoLossFn, evenDatums } from '../cookbook/preference/dpo-loss.js';
import { alignScoredLogprobs, fullSequenceForScoring } from '../cookbook/rl/kl.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { computeMeanNll } from '../cookbook/supervised/nll.js';
import { nowMs, recordSpan, scopeSpan } from '../cookbook/timing.js';
import { callBackend, collectOrResubmit, heartbeating, type ActivityDeps } from './context.js';
import { runDataCache } from './run-data.js';
import { SamplingSessions } from './sampling-sessions.js';
import { asEvaluator, stepTiming } from './timing.js';
import { ErrorTypes, type EvalInput, type EvalResult, type ModelRef, type SeqUse, type SubmittedStep } from './types.js';
import { heldToSeqRules } from './unsequenced.js';

type DPOData = Awaited<ReturnType<typeof buildPreferenceDatasets>>;
const dpoData = runDataCache<DPOConfig, DPOData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset],
  (cfg) => buildPreferenceDatasets(cfg.dataset, cfg),
);

export interface DPOPlan {
  nBatches: number;
  /** Datums in the test batch (0: no test set, so no evaluation). */
  testSize: number;
}

/** Where reference logprobs come from: a sampler over saved weights or over a base model. */
export type ReferenceSource = { modelPath: string } | { baseModel: string };

export interface DPOStepInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  epoch: number;
  batch: number;
  learningRate: number;
  totalSteps: number;
  reference: ReferenceSource;
  /** Evals on the pre-step weights, merged into the row. */
  preStepMetrics: Record<string, number>;
  /** The checkpoint saved at the start of this step, logged as the reference's `state_path`. */
  statePath?: string;
  /** Its reference logprobs were computed ahead (dpoReferenceAhead, whose `get_ref_logprobs` span the row counts). */
  referenceAhead?: boolean;
}
/** A step whose reference logprobs are computed ahead of it (no model: the reference is frozen). */
export interface DPOReferenceAheadInput {
  run: RunRef;
  step: number;
  epoch: number;
  batch: number;
  reference: ReferenceSource;
}
export interface DPOStepResult extends SeqUse {
  numTokens: number;
  metrics: Record<string, number>;
}

/** What a step knows once submitted: its row so far (small numbers only). */
export interface DPOStepRow {
  numTokens: number;
  /** false: every comparison was filtered out, nothing was submitted. */
  trained: boolean;
  metrics: Record<string, number>;
}
export interface DPOSubmitted {
  row: DPOStepRow;
  /** The backward's and optim_step's request ids, and the custom loss's client-side metrics. */
  requests?: SubmittedStep & { lossMetrics: Record<string, number> };
}
export interface DPOSubmitResult extends SeqUse {
  submitted: DPOSubmitted;
}
export interface DPOFinishInput {
  /** The step as submitted (to submit it again if the server lost its futures). */
  step: Omit<DPOStepInput, 'statePath'>;
  statePath?: string;
  submitted: DPOSubmitted;
}

const inputLength = (d: Datum) => d.model_input.chunks.reduce((n, c) => n + (c.type === 'encoded_text' ? c.tokens.length : (c.expected_tokens ?? 0)), 0);
const sourceKey = (ref: ReferenceSource) => createHash('sha256').update(JSON.stringify(ref)).digest('hex').slice(0, 16);

export function dpoActivities(deps: ActivityDeps) {
  const backendOf = (cfg: DPOConfig) => deps.backendFor(cfg.base_url, cfg.wire);
  const session = (cfg: DPOConfig, modelId: string): TrainingSession => backendOf(cfg).openTrainingSession(modelId);
  // The reference model's sampler, opened once per run and worker (the reference opens it once).
  const referenceSessions = new SamplingSessions();

  /**
   * Reference logprobs of each pair's two datums (compute_logprobs(full)[1:]). They depend only on
   * the reference and the row, so they are stored per source line and reused by retries and epochs.
   */
  async function referenceLogprobs(run: RunRef, cfg: DPOConfig, ref: ReferenceSource, lines: number[], data_D: Datum[]): Promise<number[][]> {
    const store = new RunStore(run.logPath);
    const blob = (line: number) => `dpo_reference/${sourceKey(ref)}/line_${String(line).padStart(6, '0')}.json`;
    // Written without fsync (a cache): one that does not hold a logprob per token of each datum is computed again.
    const holds = (pair: unknown, i: number): pair is [number[], number[]] =>
      Array.isArray(pair) && pair.length === 2 &&
      pair.every((lp, k) => Array.isArray(lp) && lp.length === inputLength(data_D[2 * i + k]) && lp.every((x) => typeof x === 'number'));
    const cached = lines.map((line, i) => {
      try {
        const pair: unknown = JSON.parse(store.readBlob(blob(line)).toString('utf8'));
        return holds(pair, i) ? pair : undefined;
      } catch {
        return undefined;
      }
    });
    const missing = lines.flatMap((_, i) => (cached[i] ? [] : [i]));
    if (missing.length) {
      const open = () => callBackend('create reference sampler', 'bad-path', () => backendOf(cfg).createSamplingSession(ref));
      // Every sequence at once, as the reference gathers them. A 404 means the engine restarted and
      // lost the sampler: the session is dropped, so a new attempt opens a new one (a vanished path
      // fails at creation instead).
      await callBackend('reference compute_logprobs', 'session-lost', () =>
        heartbeating(
          referenceSessions.use(`${cfg.base_url ?? ''} ${JSON.stringify(ref)}`, open, (sampler) => {
            const score = (d: Datum) => sampler.computeLogprobs(fullSequenceForScoring(d)).then(alignScoredLogprobs);
            return Promise.all(
              missing.map(async (i) => {
                const pair = (await Promise.all([score(data_D[2 * i]), score(data_D[2 * i + 1])])) as [number[], number[]];
                store.writeCacheBlob(blob(lines[i]), JSON.stringify(pair));
                cached[i] = pair;
              }),
            );
          }),
        ),
      );
    }
    return cached.flatMap((pair) => pair!);
  }

  /** A step's pairs as datums (chosen, rejected, ...) and their source lines; `warn` hears what was dropped. */
  async function stepPairs(run: RunRef, epoch: number, batch: number, warn: (msg: string) => void, span = true) {
    const { train } = await dpoData(run).data;
    const b = span ? await scopeSpan('get_batch', () => train.batchAt(epoch, batch)) : await train.batchAt(epoch, batch);
    for (const why of b.filtered) warn(`comparison skipped: ${why}`);
    const data_D = evenDatums(b.datums, warn);
    return { data_D, lines: b.lines.slice(0, data_D.length / 2) };
  }

  /** Everything of a step up to its training requests queued: the row so far and the submissions. */
  async function submitStep(input: DPOStepInput) {
    const { run, model, step, epoch, batch, learningRate, totalSteps, reference, preStepMetrics } = input;
    const { cfg, data } = dpoData(run);
    const { tokenizer } = await data;
    const logger = runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId });
    const { data_D, lines } = await stepPairs(run, epoch, batch, (msg) => logger.warn({ step }, msg));
    if (step === 0) {
      for (let i = 0; i < Math.min(10, lines.length); i++) {
        const text = (d: Datum) => tokenizer.decode(d.model_input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])));
        logger.info({ line: lines[i], chosen: text(data_D[2 * i]), rejected: text(data_D[2 * i + 1]) }, 'example pair');
      }
    }
    const numTokens = data_D.reduce((n, d) => n + inputLength(d), 0);
    const row: DPOStepRow = {
      numTokens,
      trained: data_D.length > 0,
      metrics: { epoch, learning_rate: learningRate, progress: step / totalSteps, num_pairs: data_D.length / 2, num_tokens: numTokens, ...preStepMetrics },
    };
    if (data_D.length === 0) {
      logger.warn({ step }, 'every comparison of the batch was filtered out: no update this step');
      return { seqIdsUsed: 0, row };
    }
    const ref_D = input.referenceAhead
      ? await referenceLogprobs(run, cfg, reference, lines, data_D)
      : await scopeSpan('get_ref_logprobs', () => referenceLogprobs(run, cfg, reference, lines, data_D));
    // The reference's `step` runs from the custom loss's forward to the optim step's result: it
    // starts here and ends where the results are collected (a pipelined step's dpoFinish).
    const stepStart = nowMs();
    const client = heldToSeqRules(session(cfg, model.modelId), model);
    const fb = await callBackend('forward_backward_custom', 'model-lost', () =>
      heartbeating(client.forwardBackwardCustom(data_D, dpoLossFn(ref_D, cfg.dpo_beta), { seqId: model.nextSeqId }), { step }),
    );
    const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
    const optim = await callBackend('optim_step', 'model-lost', () => client.optimStep(adam, { seqId: model.nextSeqId + fb.seqIds }));
    return { seqIdsUsed: fb.seqIds + optim.seqIds, row, fb, optim, stepStart };
  }

  /**
   * Awaits a step's results: the end of its `step` span, whole when this activity submitted the
   * step (at `submittedAt`), else the collection's part of it (a pipelined step's dpoFinish).
   */
  async function collectStep<T>(collect: () => Promise<T>, submittedAt?: number): Promise<T> {
    const start = submittedAt ?? nowMs();
    try {
      return await collect();
    } finally {
      recordSpan('step', start, nowMs(), submittedAt === undefined ? { part: true } : {});
    }
  }

  /** The step's metrics row with its training results (none when every pair was filtered out). */
  function finishRow(
    { run, step, statePath }: { run: RunRef; step: number; statePath?: string },
    row: DPOStepRow,
    results: [ForwardBackwardOutput, OptimStepResponse] | undefined,
  ): { numTokens: number; metrics: Record<string, number> } {
    const metrics = { ...row.metrics };
    if (results) Object.assign(metrics, results[0].metrics, results[1].metrics ?? {});
    const timing = stepTiming(run, step);
    Object.assign(metrics, timing.metrics);
    if ('time/total' in metrics) metrics.batch_time = metrics['time/total'];
    const store = new RunStore(run.logPath);
    store.writeMetrics({ step, ...metrics, ...(statePath ? { state_path: statePath } : {}) });
    timing.write(store);
    if (row.trained && !Number.isFinite(metrics.dpo_loss)) {
      throw ApplicationFailure.nonRetryable(`step ${step}: dpo_loss is ${metrics.dpo_loss} (non-finite loss); the run stops here and its last checkpoint is intact`, ErrorTypes.nonFiniteLoss);
    }
    return { numTokens: row.numTokens, metrics };
  }

  return {
    async dpoPrepare({ run }: { run: RunRef }): Promise<DPOPlan> {
      const { train, test } = await dpoData(run).data;
      return { nBatches: train.length, testSize: test ? test.getBatch(0).datums.length : 0 };
    },

    /**
     * A step's reference logprobs into the run store ahead of the step (the reference is frozen):
     * computed while the step before it trains, so the step's own submission finds them there.
     */
    async dpoReferenceAhead({ run, epoch, batch, reference }: DPOReferenceAheadInput): Promise<void> {
      // The step itself warns of what was dropped, and its row's get_batch is the step's own.
      const { data_D, lines } = await stepPairs(run, epoch, batch, () => undefined, false);
      if (data_D.length > 0) await scopeSpan('get_ref_logprobs', () => referenceLogprobs(run, dpoData(run).cfg, reference, lines, data_D));
    },

    /** The whole step unit in one activity (`submit_ahead` 0). */
    async dpoStep(input: DPOStepInput): Promise<DPOStepResult> {
      const step = await submitStep(input);
      const results = step.fb && step.optim
        ? await collectStep(() => callBackend('train step', 'model-lost', () => heartbeating(Promise.all([step.fb!.result(), step.optim!.result()]), { step: input.step })), step.stepStart)
        : undefined;
      return { seqIdsUsed: step.seqIdsUsed, ...finishRow(input, step.row, results) };
    },

    /**
     * A pipelined step's first half: reference logprobs, the custom loss's forward (which runs on
     * the server right after the previous step's update) and gradients, then the backward and the
     * optim_step queued, not awaited.
     */
    async dpoSubmit(input: DPOStepInput): Promise<DPOSubmitResult> {
      const { seqIdsUsed, row, fb, optim, stepStart } = await submitStep(input);
      // The first part of the step's `step` span; dpoFinish adds the rest.
      if (stepStart !== undefined) recordSpan('step', stepStart, nowMs(), { part: true });
      const requests = fb && optim ? { model: input.model, forwardBackward: fb.requestIds!, optimStep: optim.requestIds![0], lossMetrics: fb.lossMetrics } : undefined;
      return { seqIdsUsed, submitted: { row, ...(requests ? { requests } : {}) } };
    },

    /** A pipelined step's second half: its results awaited, its metrics row written. */
    async dpoFinish({ step: stepInput, statePath, submitted }: DPOFinishInput): Promise<DPOStepResult> {
      const { run, step } = stepInput;
      const { requests } = submitted;
      let results: [ForwardBackwardOutput, OptimStepResponse] | undefined;
      if (requests) {
        const client = heldToSeqRules(session(dpoData(run).cfg, requests.model.modelId), requests.model);
        results = await collectStep(() => callBackend('train step', 'model-lost', () =>
          heartbeating(
            collectOrResubmit(
              async () => {
                const [fbOut, optimOut] = await Promise.all([client.forwardBackwardResult(requests.forwardBackward), client.optimStepResult(requests.optimStep)]);
                return [withLossMetrics(fbOut, requests.lossMetrics), optimOut] as [ForwardBackwardOutput, OptimStepResponse];
              },
              async () => {
                const again = await submitStep({ ...stepInput, model: requests.model });
                return Promise.all([again.fb!.result(), again.optim!.result()]);
              },
            ),
            { step },
          ),
        ));
      }
      return { seqIdsUsed: 0, ...finishRow({ run, step, ...(statePath ? { statePath } : {}) }, submitted.row, results) };
    },

    /** The reference's default evaluator: NLL of the test pairs' datums (raw weights), pre-step weights. */
    dpoEval: ({ run, model, step }: EvalInput): Promise<EvalResult> => asEvaluator(run, async (): Promise<EvalResult> => {
      const { cfg, data } = dpoData(run);
      const { test } = await data;
      if (!test) return { seqIdsUsed: 0, metrics: {} };
      const test_D = test.getBatch(0).datums;
      const fwd = await callBackend('forward', 'model-lost', () => session(cfg, model.modelId).forward(test_D, 'cross_entropy', { seqId: model.nextSeqId }));
      const out = await callBackend('forward', 'model-lost', () => heartbeating(fwd.result(), { step }));
      const logprobs_D = out.loss_fn_outputs.map((o) => o.logprobs.data);
      return { seqIdsUsed: fwd.seqIds, metrics: { 'test/nll': computeMeanNll(logprobs_D, test_D.map((d) => d.loss_fn_inputs.weights.data)) } };
    }),
  };
}
