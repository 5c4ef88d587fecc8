// Decision models (reference recipes/decisions; the loop of forecasting.py's `train`): the
// training decisions in file order, batch after batch, each step one forward_backward (hard labels:
// cross_entropy) or forward_backward_custom (the Brier probability loss) and one optim_step at a
// constant learning rate. With held-out decisions, the model is scored at the start, every
// `eval_every` steps and at the end, each time from a sampler snapshot of the weights then.
import type { DecisionsPlan } from '../activities/decisions.js';
import type { DecisionsConfig } from '../cookbook/config/decisions.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type DecisionsInput = RunInput<DecisionsConfig, DecisionsPlan>;

/** The end's scores, measured after the last step and written in the closing row before the final checkpoint. */
interface DecisionsState {
  finalEval?: Record<string, number>;
}

const pad = (n: number) => String(n).padStart(6, '0');

export async function decisionsWorkflow(input: DecisionsInput): Promise<RunResult> {
  const run = new TrainingRun<DecisionsConfig, DecisionsPlan>('decisions', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.decisionsPrepare({ run: input.run }));
  input.plan = plan;

  const totalSteps = Math.min(plan.nBatches * cfg.epochs, cfg.max_steps ?? Infinity);
  run.state.custom ??= {};
  const state = () => run.state.custom as DecisionsState;

  // Scored on the weights before `step` (forecasting.py's evaluate at step), the start always.
  const evalDue = (step: number) => plan.validationSize > 0 && (step === 0 || run.shouldEval(step));

  async function evaluate(step: number): Promise<Record<string, number>> {
    const samplerPath = await run.saveSamplerWeights(`eval_${pad(step)}`);
    const result = await acts.decisionsEval.executeWithOptions({ summary: `eval before step ${step}` }, [{ run: input.run, step, samplerPath }]);
    return result.metrics;
  }

  return run.run({
    totalSteps,
    lossKey: 'train/loss',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: {} satisfies DecisionsState,

    async runStep(step) {
      const batch = step % plan.nBatches;
      // Fixed when the step starts: a `set` arriving later applies from the next step.
      const learningRate = run.learningRate(cfg.learning_rate, 1);
      const preStepMetrics = evalDue(step) ? await evaluate(step) : {};
      const result = await run.train(
        acts.decisionsStep,
        { run: input.run, step, batch, learningRate, totalSteps, preStepMetrics },
        `step ${step} · epoch ${Math.floor(step / plan.nBatches)} batch ${batch}`,
      );
      run.setLastMetrics(result.metrics);
      if (step === totalSteps - 1 && plan.validationSize > 0) run.state.custom = { finalEval: await evaluate(totalSteps) } satisfies DecisionsState;
    },

    // As the reference: a checkpoint after every `save_every`-th step but the last, named by the
    // steps it contains (the reference saves its state only; the shared machinery adds sampler weights).
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 && step + 1 < totalSteps ? { name: pad(step + 1), row: { step: step + 1 } } : undefined),
    loopState: (step) => ({ step: step + 1 }),
    // Read when the final checkpoint is saved: the end's scores when the last step measured them
    // (a stopped run's last scores are its last periodic eval's).
    get closingMetrics() {
      const scores = state().finalEval;
      return scores ? () => scores : undefined;
    },
    finalRow: () => ({ step: run.state.step, final: true }),
  });
}
