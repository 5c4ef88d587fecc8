// RL on verifiable rewards, synchronous mode (cookbook-spec §2.9): each step samples every group of
// its batch in parallel from the current sampler weights (and runs the evaluators on them), then
// trains on the surviving groups and saves the sampler weights the next step samples from.
import type { RLConfig } from '../cookbook/config/rl.js';
import { RolloutErrorCounter, type RolloutErrorCounterState } from '../cookbook/rl/rollouts.js';
import type { RLPlan, RolloutGroupResult } from '../activities/types.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type RLInput = RunInput<RLConfig, RLPlan>;

/** What RL carries besides the model: error counts and the sampler for the next step. */
interface RLState {
  errors: RolloutErrorCounterState;
  sampler?: { path: string; step: number };
}

const pad = (n: number) => String(n).padStart(6, '0');

export async function rlWorkflow(input: RLInput): Promise<RunResult> {
  const run = new TrainingRun<RLConfig, RLPlan>('rl', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.rlPrepare({ run: input.run }));
  input.plan = plan;
  const totalSteps = Math.min(plan.nBatches, cfg.max_steps ?? Infinity);
  const initialState: RLState = { errors: { counts: [], groupsSkipped: 0 } };
  run.state.custom ??= initialState;
  const state = () => run.state.custom as RLState;

  return run.run({
    totalSteps,
    lossKey: 'env/all/reward/total',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: initialState,

    async runStep(step) {
      const current = state().sampler;
      const samplerPath = current?.step === step ? current.path : await run.saveSamplerWeights(`sampler_${pad(step)}`);
      const preStepMetrics: Record<string, number> = {
        'progress/batch': step,
        'optim/lr': run.learningRate(cfg.learning_rate, 1),
        'progress/done_frac': (step + 1) / totalSteps,
      };
      const evaluating = plan.hasTest && run.shouldEval(step);
      const [evalResult, groups] = await Promise.all([
        evaluating ? acts.rlEval.executeWithOptions({ summary: `eval before step ${step}` }, [{ run: input.run, step, samplerPath }]) : { metrics: {} },
        Promise.all(
          Array.from({ length: plan.groupsPerBatch }, (_, group) =>
            acts.rlRolloutGroup.executeWithOptions({ summary: `rollout step ${step} group ${group}` }, [{ run: input.run, step, group, samplerPath, samplingStep: step }]),
          ),
        ),
      ]);
      const errors = countErrors(state().errors, groups);
      Object.assign(preStepMetrics, evalResult.metrics);

      if (groups.every((g) => g.ref === null)) {
        // Nothing survived: no training, no checkpoint; the row records progress and errors.
        await run.logMetrics(step, { ...preStepMetrics, ...errors.getMetrics() });
        run.state.custom = { errors: errors.toJSON(), sampler: { path: samplerPath, step: step + 1 } } satisfies RLState;
        return;
      }
      const result = await run.train(
        acts.rlTrain,
        { run: input.run, step, groups, learningRate: preStepMetrics['optim/lr'], preStepMetrics, errorMetrics: errors.getMetrics() },
        `train step ${step}`,
      );
      run.state.custom = { errors: errors.toJSON(), sampler: { path: result.samplerPath, step: step + 1 } } satisfies RLState;
      run.setLastMetrics(result.metrics);
    },

    // As the reference: the checkpoint after step i is named i+1 and resumes at batch i+1.
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 ? { name: pad(step + 1), row: { batch: step + 1 } } : undefined),
    finalRow: () => ({ batch: run.state.step }),
  });
}

function countErrors(before: RolloutErrorCounterState, groups: RolloutGroupResult[]): RolloutErrorCounter {
  const counter = new RolloutErrorCounter(before);
  for (const g of groups) counter.ingest(g.ref === null ? null : { rolloutErrors: g.errorTypes.map((errorType) => ({ errorType, errorMessage: '' })) });
  return counter;
}
