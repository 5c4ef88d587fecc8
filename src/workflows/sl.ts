// Supervised fine-tuning (cookbook-spec §1.2): for each step, evaluate on the pre-step weights
// when due, then one forward_backward + optim_step on the step's batch, then checkpoint when due.
// Pipelined as the reference (`submit_ahead`): step N+1 is queued on the server while step N's
// results are collected, unless an eval or a checkpoint must come between them.
import { lrMultiplier } from '../cookbook/lr-schedule.js';
import type { SupervisedConfig } from '../cookbook/config/sl.js';
import type { SlFinishInput, SlPlan, SlRowState, SlStepInput } from '../activities/types.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type SupervisedInput = RunInput<SupervisedConfig, SlPlan>;

export async function supervisedWorkflow(input: SupervisedInput): Promise<RunResult> {
  const run = new TrainingRun<SupervisedConfig, SlPlan>('sl', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.slPrepare({ run: input.run }));
  input.plan = plan;

  const nBatches = plan.nBatches;
  const totalSteps = Math.min(nBatches * cfg.num_epochs, cfg.max_steps ?? Infinity);
  const progressDenominator = totalSteps > 0 ? totalSteps : 1;
  const cursor = (step: number) => ({ epoch: Math.floor(step / nBatches), batch: step % nBatches });

  /** What a step fixes when it starts: its batch, its learning rate, the evals on the pre-step weights. */
  async function startStep(step: number): Promise<Omit<SlStepInput, 'model'>> {
    const { epoch, batch } = cursor(step);
    // Fixed when the step starts: a `set` arriving later applies from the next step.
    const learningRate = run.learningRate(cfg.learning_rate, lrMultiplier(cfg.lr_schedule, step, totalSteps));
    const preStepMetrics = await evaluate(step);
    return { run: input.run, step, epoch, batch, learningRate, progressDenominator, preStepMetrics };
  }

  /** The reference's loop_state of a checkpoint after `step`: its position and the tokens trained so far. */
  function loopState(step: number): Record<string, unknown> {
    return { ...cursor(step), elapsed_tokens: run.state.elapsedTokens };
  }

  function finishStep(result: { numTokens: number; metrics: Record<string, number> }): void {
    run.state.elapsedTokens += result.numTokens;
    run.setLastMetrics(result.metrics);
  }

  /**
   * The evaluators of §1.2 step 5 due before `step`, on the pre-step weights, merged without prefix
   * in the reference's order: the custom sampling evaluators (sharing one sampler snapshot,
   * evaluated in parallel), the test-set NLL (`test/nll`), then the infrequent evaluators (on a
   * snapshot of their own, as the reference's second `run_evals`).
   */
  async function evaluate(step: number): Promise<Record<string, number>> {
    const metrics: Record<string, number> = {};
    if (run.shouldEval(step)) {
      Object.assign(metrics, await run.customEvalsOnSnapshot(step));
      if (plan.testSize > 0) Object.assign(metrics, (await run.train(acts.slEval, { run: input.run, step }, `eval before step ${step}`)).metrics);
    }
    if (run.shouldInfrequentEval(step)) Object.assign(metrics, await run.customEvalsOnSnapshot(step, 'infrequent_evaluators'));
    return metrics;
  }

  return run.run({
    totalSteps,
    lossKey: 'train_mean_nll',
    createInitialModel: () => acts.createModel({ run: input.run }),

    async runStep(step) {
      const stepInput = await startStep(step);
      const result = await run.train(acts.slStep, { ...stepInput, elapsedTokensBefore: run.state.elapsedTokens }, `step ${step} · epoch ${stepInput.epoch} batch ${stepInput.batch}`);
      finishStep(result);
    },

    pipeline: {
      // Histories recorded before the option existed carry no value: the reference's default.
      submitAhead: cfg.submit_ahead ?? 1,
      async submit(step) {
        const stepInput = await startStep(step);
        const { submitted, numTokens } = await run.train(acts.slSubmit, stepInput, `submit step ${step} · epoch ${stepInput.epoch} batch ${stepInput.batch}`);
        return { ...stepInput, submitted, numTokens } satisfies Omit<SlFinishInput, keyof SlRowState> & { numTokens?: number };
      },
      async finish(step, submitted) {
        // Steps finish in order: the state now holds every earlier step's tokens, not yet this one's.
        const { numTokens: _, ...stepInput } = submitted as Omit<SlFinishInput, keyof SlRowState> & { numTokens?: number };
        const input: SlFinishInput = { ...stepInput, elapsedTokensBefore: run.state.elapsedTokens };
        finishStep(await acts.slFinish.executeWithOptions({ summary: `step ${step} results` }, [input]));
      },
      needsResultsBefore: (step) => run.shouldEval(step) || run.shouldInfrequentEval(step),
      // Known at submission (histories recorded before carry none): `save_every_tokens` can decide while the step runs.
      submittedTokens: (submitted) => (submitted as { numTokens?: number }).numTokens,
    },

    // As the reference: a checkpoint after every `save_every`-th step, never after step 0.
    periodicCheckpoint: (step, every) => (step > 0 && step % every === 0 ? { name: String(step).padStart(6, '0'), row: loopState(step) } : undefined),
    loopState,
    // A completed run's final row is the reference's (resuming after it trains nothing); an early
    // stop's names the last step it contains.
    finalRow: () => ({
      ...(run.state.stopRequested ? (run.state.step > 0 ? cursor(run.state.step - 1) : {}) : { epoch: cfg.num_epochs, batch: 0 }),
      elapsed_tokens: run.state.elapsedTokens,
    }),
  });
}
