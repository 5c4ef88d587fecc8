// RL on verifiable rewards (cookbook-spec §2.9). Each step: evaluate on the current sampler when
// due, get the step's trajectory groups — sync: every group of batch i sampled now, in parallel;
// async: the first fresh groups off the off-policy queue — then train on them and save the sampler
// weights the next rollouts sample from.
import type { RLConfig } from '../cookbook/config/rl.js';
import { RolloutErrorCounter, type RolloutErrorCounterState } from '../cookbook/rl/rollouts.js';
import type { RLPlan, RolloutGroupResult } from '../activities/types.js';
import { emptyOffPolicyState, OffPolicyRollouts, type OffPolicyState } from './rl-off-policy.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type RLInput = RunInput<RLConfig, RLPlan>;

/** What RL carries besides the model: error counts, the next sampler, the off-policy queue. */
interface RLState {
  errors: RolloutErrorCounterState;
  sampler?: { path: string; step: number };
  offPolicy?: OffPolicyState;
}

const pad = (n: number) => String(n).padStart(6, '0');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function rlWorkflow(input: RLInput): Promise<RunResult> {
  const run = new TrainingRun<RLConfig, RLPlan>('rl', input);
  const { acts } = run;
  const cfg = input.config;
  const async = cfg.async_config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.rlPrepare({ run: input.run }));
  input.plan = plan;
  // num_epochs passes over the dataset (configs recorded before the field existed ran one).
  const totalBuilders = plan.nBatches * plan.groupsPerBatch * (cfg.num_epochs ?? 1);
  const groupsPerStep = async ? async.groups_per_batch : plan.groupsPerBatch;
  const totalSteps = Math.min(Math.floor(totalBuilders / groupsPerStep), cfg.max_steps ?? Infinity);
  const initialState: RLState = { errors: { counts: [], groupsSkipped: 0 }, ...(async ? { offPolicy: emptyOffPolicyState() } : {}) };
  run.state.custom ??= JSON.parse(JSON.stringify(initialState));
  const state = () => run.state.custom as RLState;

  const rollout = (batch: number, group: number, samplerPath: string, samplingStep: number, attempt = 0) =>
    acts.rlRolloutGroup.executeWithOptions({ summary: `rollout batch ${batch} group ${group}${attempt ? ` (attempt ${attempt + 1})` : ''} on weights of step ${samplingStep}` }, [
      { run: input.run, step: batch, group, samplerPath, samplingStep, attempt },
    ]);

  // Async mode: the sampler in use when a rollout starts is whatever is current then.
  let current = { path: '', step: -1 };
  let queue: OffPolicyRollouts | undefined;
  const offPolicyQueue = (): OffPolicyRollouts => {
    const st = state().offPolicy!;
    // A restore or continue-as-new replaces the state object: rebuild the queue around it.
    if (!queue || queue.state !== st) {
      queue = new OffPolicyRollouts(st, {
        totalBuilders,
        groupsPerDatasetBatch: plan.groupsPerBatch,
        concurrency: async!.groups_per_batch,
        maxStepsOffPolicy: async!.max_steps_off_policy,
        launch: (batch, group, attempt) => rollout(batch, group, current.path, current.step, attempt),
      });
    }
    queue.resync(run.state.recoveries);
    return queue;
  };

  async function groupsFor(step: number, samplerPath: string): Promise<{ groups: RolloutGroupResult[]; metrics: Record<string, number> }> {
    if (!async) {
      const groups = await Promise.all(Array.from({ length: plan.groupsPerBatch }, (_, group) => rollout(step, group, samplerPath, step)));
      return { groups, metrics: {} };
    }
    current = { path: samplerPath, step };
    const q = offPolicyQueue();
    const collected = await q.collect(step, groupsPerStep);
    q.fill(); // keep sampling while this step trains
    const steps = collected.groups.map((g) => g.samplingStep);
    const metrics: Record<string, number> = steps.length
      ? { 'sampling_client/step_max': Math.max(...steps), 'sampling_client/step_min': Math.min(...steps), 'sampling_client/step_mean': mean(steps) }
      : {};
    return { groups: [...collected.groups, ...collected.dropped], metrics };
  }

  /** Every evaluator due at this step, in parallel on the pre-update sampler; merged without prefix. */
  function evaluate(step: number, samplerPath: string): Promise<Array<{ metrics: Record<string, number> }>> {
    if (!run.shouldEval(step)) return Promise.resolve([]);
    const testSet = plan.hasTest ? [acts.rlEval.executeWithOptions({ summary: `eval before step ${step}` }, [{ run: input.run, step, samplerPath }])] : [];
    return Promise.all([...testSet, ...run.customSamplingEvals(step, samplerPath)]);
  }

  return run.run({
    totalSteps,
    lossKey: 'env/all/reward/total',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: initialState,
    beforeContinueAsNew: async () => {
      await queue?.drain();
    },

    async runStep(step) {
      const sampler = state().sampler;
      const samplerPath = sampler?.step === step ? sampler.path : await run.saveSamplerWeights(`sampler_${pad(step)}`);
      const lr = run.learningRate(cfg.learning_rate, 1);
      const preStepMetrics: Record<string, number> = async
        ? { 'training_client/step': step, 'optim/lr': lr, 'progress/done_frac': (step + 1) / totalSteps }
        : { 'progress/batch': step, 'optim/lr': lr, 'progress/done_frac': (step + 1) / totalSteps };
      const [evalResults, { groups, metrics: samplingMetrics }] = await Promise.all([evaluate(step, samplerPath), groupsFor(step, samplerPath)]);
      const errors = countErrors(state().errors, groups);
      Object.assign(preStepMetrics, samplingMetrics, ...evalResults.map((r) => r.metrics));
      const trainable = groups.filter((g) => g.ref !== null);

      if (trainable.length === 0) {
        // Nothing survived: no training, no checkpoint; the row records progress and errors.
        await run.logMetrics(step, { ...preStepMetrics, ...errors.getMetrics() });
        run.state.custom = { ...state(), errors: errors.toJSON(), sampler: { path: samplerPath, step: step + 1 } } satisfies RLState;
        return;
      }
      // Streaming minibatches are cut by group position, so dropped groups keep their places.
      const result = await run.train(
        acts.rlTrain,
        { run: input.run, step, groups: cfg.stream_minibatch_config ? groups : trainable, learningRate: lr, preStepMetrics, errorMetrics: errors.getMetrics() },
        `train step ${step} on ${trainable.length} groups`,
      );
      run.state.custom = { ...state(), errors: errors.toJSON(), sampler: { path: result.samplerPath, step: step + 1 } } satisfies RLState;
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
