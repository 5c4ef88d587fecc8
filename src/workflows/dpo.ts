// DPO (cookbook-spec §4.3): for each step, evaluate on the pre-step weights when due, then one
// activity computes the reference logprobs and applies the DPO loss (client-side custom loss) and
// the optim step. The reference is frozen before the first step and named by a sampler path.
import type { DPOConfig } from '../cookbook/config/dpo.js';
import { lrMultiplier } from '../cookbook/lr-schedule.js';
import type { DPOPlan, ReferenceSource } from '../activities/types.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type DPOInput = RunInput<DPOConfig, DPOPlan>;

/** DPO's paradigm state: the frozen starting weights when the reference is the initial model. */
interface DPOState {
  referencePath?: string;
}

const pad = (n: number) => String(n).padStart(6, '0');

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
  run.state.custom ??= {};
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

  /** Custom sampling evaluators on a snapshot of the pre-step weights, then the test-set NLL. */
  async function evaluate(step: number): Promise<Record<string, number>> {
    const metrics = await run.customEvalsOnSnapshot(step);
    if (plan.testSize > 0) Object.assign(metrics, (await run.train(acts.dpoEval, { run: input.run, step }, `eval before step ${step}`)).metrics);
    return metrics;
  }

  return run.run({
    totalSteps,
    lossKey: 'dpo_loss',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: {},

    async runStep(step) {
      const { epoch, batch } = cursor(step);
      const reference = await referenceSource();
      const learningRate = run.learningRate(cfg.learning_rate, lrMultiplier(cfg.lr_schedule, step, totalSteps));
      // As the reference: evals when due and also before the last step.
      const evalDue = run.shouldEval(step) || (run.state.hot.eval_every > 0 && step === totalSteps - 1);
      const preStepMetrics = evalDue ? await evaluate(step) : {};
      const saved = run.state.lastCheckpoint;
      const statePath = saved && saved.name === pad(step) ? saved.statePath : undefined;
      const result = await run.train(
        acts.dpoStep,
        { run: input.run, step, epoch, batch, learningRate, totalSteps, reference, preStepMetrics, ...(statePath ? { statePath } : {}) },
        `step ${step} · epoch ${epoch} batch ${batch}`,
      );
      run.state.elapsedTokens += result.numTokens;
      run.setLastMetrics(result.metrics);
    },

    // The reference saves at the start of step s (s > 0, s % save_every == 0) before its update:
    // that is after step s−1 here, named s, and its row names the batch still to train.
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 && step + 1 < totalSteps ? { name: pad(step + 1), row: cursor(step + 1) } : undefined),
    finalRow: () => (run.state.stopRequested ? cursor(run.state.step) : { epoch: cfg.num_epochs, batch: 0 }),
  });
}
