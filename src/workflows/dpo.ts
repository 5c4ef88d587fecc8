// DPO (cookbook-spec §4.3): for each step, evaluate on the pre-step weights when due, then the
// reference logprobs, the DPO loss (client-side custom loss) and the optim step. The reference is
// frozen before the first step and named by a sampler path. Pipelined like supervised training
// (`submit_ahead`): step N+1's forward is queued behind step N's update while N's results are collected.
// The reference is frozen, so step N+1's reference logprobs are computed (into the run store) while
// step N trains (behind N's training calls when N computed its own): the reference computes them inside its step.
import { patched, proxyActivities } from '@temporalio/workflow';
import type { DPOConfig } from '../cookbook/config/dpo.js';
import { lrMultiplier } from '../cookbook/lr-schedule.js';
import type { Activities, DPOFinishInput, DPOPlan, DPOStepInput, ReferenceSource } from '../activities/types.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type DPOInput = RunInput<DPOConfig, DPOPlan>;

/** DPO's paradigm state: the frozen starting weights when the reference is the initial model. */
interface DPOState {
  referencePath?: string;
}

const pad = (n: number) => String(n).padStart(6, '0');
/** Reference logprobs computed one step ahead (histories recorded before it compute them in the step). */
const REFERENCE_AHEAD_PATCH = 'dpo-reference-ahead';
/**
 * A step with nothing computed ahead for it (step 0, the first of a continued workflow run) computes
 * its own reference logprobs, and starts the next step's only once its training calls are submitted,
 * so the engine no longer runs both beside each other before the step can train. Other steps still
 * start the next step's first: theirs were computed ahead, and the next step's then run while this
 * one's activity is handed over rather than after it (measured: deferring them too added a handoff
 * to every step). Histories recorded before it start the next step's ahead of the step's own.
 */
const AFTER_OWN_PASS_PATCH = 'dpo-reference-ahead-after-own-pass';

export async function dpoWorkflow(input: DPOInput): Promise<RunResult> {
  const run = new TrainingRun<DPOConfig, DPOPlan>('dpo', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.dpoPrepare({ run: input.run }));
  input.plan = plan;

  const nBatches = plan.nBatches;
  const totalSteps = Math.min(nBatches * cfg.num_epochs, cfg.max_steps ?? Infinity);
  const cursor = (step: number) => ({ epoch: Math.floor(step / nBatches), batch: step % nBatches });
  // A continued run keeps its parent's reference: the weights the parent started from, not its own.
  const inherited = cfg.continue_from?.resume_state?.reference_path;
  const initialState: DPOState = typeof inherited === 'string' ? { referencePath: inherited } : {};
  run.state.custom ??= { ...initialState };
  const state = () => run.state.custom as DPOState;

  async function referenceSource(): Promise<ReferenceSource> {
    const ref = cfg.reference_model;
    if (ref.kind === 'base_model') return { baseModel: ref.base_model ?? cfg.model_name };
    if (ref.kind === 'sampler_path') return { modelPath: ref.path };
    // Saved before step 0's update (the reference's save_weights_and_get_sampling_client right
    // after the client is created); checkpoints carry the path, so recovery keeps the same reference.
    if (!state().referencePath) run.state.custom = { referencePath: await run.saveSamplerWeights('reference') } satisfies DPOState;
    return { modelPath: state().referencePath! };
  }

  // One attempt: what it leaves undone, the step's own submission computes (and reports failures of).
  const ahead = proxyActivities<Activities>({
    startToCloseTimeout: `${cfg.durability.step_timeout_s}s`,
    heartbeatTimeout: `${cfg.durability.heartbeat_timeout_s}s`,
    retry: { maximumAttempts: 1 },
  });
  let referenceAhead: { step: number; done: Promise<boolean> } | undefined;

  /**
   * Awaits the reference logprobs computed ahead for `step` (true: they are in the run store), then
   * starts the next step's.
   */
  async function nextReferenceAhead(step: number, reference: ReferenceSource): Promise<boolean> {
    const computed = await settleReferenceAhead(step);
    startReferenceAhead(step + 1, reference);
    return computed;
  }
  function startReferenceAhead(step: number, reference: ReferenceSource): void {
    if (step >= totalSteps || !patched(REFERENCE_AHEAD_PATCH)) return;
    const { epoch, batch } = cursor(step);
    const done = ahead.dpoReferenceAhead
      .executeWithOptions({ summary: `reference logprobs ahead of step ${step}` }, [{ run: input.run, step, epoch, batch, reference }])
      .then(() => true, () => false);
    referenceAhead = { step, done };
  }
  async function settleReferenceAhead(step?: number): Promise<boolean> {
    const pending = referenceAhead;
    referenceAhead = undefined;
    return !!pending && (await pending.done) && pending.step === step;
  }

  // As the reference: evals when due and also before the last step.
  const regularEvalDue = (step: number) => run.shouldEval(step) || (run.state.hot.eval_every > 0 && step === totalSteps - 1);
  const evalDue = (step: number) => regularEvalDue(step) || run.shouldInfrequentEval(step);

  /** What a step fixes when it starts: its batch, reference, learning rate, pre-step evals. */
  async function startStep(step: number): Promise<Omit<DPOStepInput, 'model'>> {
    const { epoch, batch } = cursor(step);
    const reference = await referenceSource();
    const learningRate = run.learningRate(cfg.learning_rate, lrMultiplier(cfg.lr_schedule, step, totalSteps));
    const preStepMetrics = evalDue(step) ? await evaluate(step) : {};
    const saved = run.state.lastCheckpoint;
    const statePath = saved && saved.name === pad(step) ? saved.statePath : undefined;
    return { run: input.run, step, epoch, batch, learningRate, totalSteps, reference, preStepMetrics, ...(statePath ? { statePath } : {}) };
  }

  function finishStep(result: { numTokens: number; metrics: Record<string, number> }): void {
    run.state.elapsedTokens += result.numTokens;
    run.setLastMetrics(result.metrics);
  }

  /**
   * When due, custom sampling evaluators on a snapshot of the pre-step weights, then the test-set
   * NLL; then, when due, the infrequent evaluators on a snapshot of their own (the reference's order).
   */
  async function evaluate(step: number): Promise<Record<string, number>> {
    const metrics: Record<string, number> = {};
    if (regularEvalDue(step)) {
      Object.assign(metrics, await run.customEvalsOnSnapshot(step));
      if (plan.testSize > 0) Object.assign(metrics, (await run.train(acts.dpoEval, { run: input.run, step }, `eval before step ${step}`)).metrics);
    }
    if (run.shouldInfrequentEval(step)) Object.assign(metrics, await run.customEvalsOnSnapshot(step, 'infrequent_evaluators'));
    return metrics;
  }

  return run.run({
    totalSteps,
    lossKey: 'dpo_loss',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: initialState,
    resumeState: () => (cfg.reference_model.kind === 'initial' && state().referencePath ? { reference_path: state().referencePath } : undefined),

    beforeContinueAsNew: async () => void (await settleReferenceAhead()),

    async runStep(step) {
      const stepInput = await startStep(step);
      if (await nextReferenceAhead(step, stepInput.reference)) stepInput.referenceAhead = true;
      finishStep(await run.train(acts.dpoStep, stepInput, `step ${step} · epoch ${stepInput.epoch} batch ${stepInput.batch}`));
    },

    pipeline: {
      // Histories recorded before the option existed carry no value: the default.
      submitAhead: cfg.submit_ahead ?? 1,
      async submit(step) {
        const { statePath, ...stepInput } = await startStep(step);
        const afterSubmit = referenceAhead?.step !== step && patched(AFTER_OWN_PASS_PATCH);
        if (await (afterSubmit ? settleReferenceAhead(step) : nextReferenceAhead(step, stepInput.reference))) stepInput.referenceAhead = true;
        const model = run.model;
        const { submitted } = await run.train(acts.dpoSubmit, stepInput, `submit step ${step} · epoch ${stepInput.epoch} batch ${stepInput.batch}`);
        if (afterSubmit) startReferenceAhead(step + 1, stepInput.reference);
        return { step: { ...stepInput, model }, ...(statePath ? { statePath } : {}), submitted } satisfies DPOFinishInput;
      },
      async finish(step, submitted) {
        finishStep(await acts.dpoFinish.executeWithOptions({ summary: `step ${step} results` }, [submitted as DPOFinishInput]));
      },
      needsResultsBefore: evalDue,
    },

    // The reference saves at the start of step s (s > 0, s % save_every == 0) before its update:
    // that is after step s−1 here, named s, and its row names the batch still to train.
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 && step + 1 < totalSteps ? { name: pad(step + 1), row: cursor(step + 1) } : undefined),
    finalRow: () => (run.state.stopRequested ? cursor(run.state.step) : { epoch: cfg.num_epochs, batch: 0 }),
  });
}
