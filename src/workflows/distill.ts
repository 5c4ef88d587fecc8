// Distillation (cookbook-spec §5). `distillWorkflow` is the `distill` run kind; its config's `mode`
// picks the stage:
//  - on_policy (§5.1): each step samples every group of its batch in parallel from the student's
//    current sampler weights, then one train activity scores the rollouts with each dataset's
//    teacher, uses the reverse KL as the advantage, trains and saves the next sampler weights;
//  - off_policy_sample (§5.2's first stage): `teacherSamplingWorkflow`, which writes the teacher's
//    replies as a conversations JSONL; a `supervisedWorkflow` on that file is the second stage.
import type { DistillConfig } from '../cookbook/config/distill.js';
import { compositeBatchDatasets } from '../cookbook/distillation/plan.js';
import type { DistillPlan } from '../activities/types.js';
import { runShardedGeneration } from './shared/sharded-generation.js';
import { activitiesFor, TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type DistillInput = RunInput<DistillConfig, DistillPlan>;

/**
 * What on-policy distillation carries besides the model: the sampler the next step samples from.
 * Nothing a continued run must inherit: the teachers come from the config, the batch from the step,
 * and a run's first step saves its sampler from the weights it starts with.
 */
interface DistillState {
  sampler?: { path: string; step: number };
}

const pad = (n: number) => String(n).padStart(6, '0');

export async function distillWorkflow(input: DistillInput): Promise<RunResult> {
  if (input.config.mode === 'off_policy_sample') return teacherSamplingWorkflow(input);
  return onPolicyDistillation(input);
}

async function onPolicyDistillation(input: DistillInput): Promise<RunResult> {
  const run = new TrainingRun<DistillConfig, DistillPlan>('distill', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.distillPrepare({ run: input.run }));
  input.plan = plan;
  const totalSteps = Math.min(plan.nBatches, cfg.max_steps ?? Infinity);
  run.state.custom ??= {} satisfies DistillState;
  const state = () => run.state.custom as DistillState;

  return run.run({
    totalSteps,
    lossKey: 'teacher_kl',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: {} satisfies DistillState,

    async runStep(step) {
      const current = state().sampler;
      const samplerPath = current?.step === step ? current.path : await run.saveSamplerWeights(`sampler_${pad(step)}`);
      const preStepMetrics: Record<string, number> = {
        'progress/batch': step,
        'optim/lr': run.learningRate(cfg.learning_rate, 1),
        'progress/done_frac': (step + 1) / totalSteps,
      };
      const datasets = compositeBatchDatasets(plan.promptCounts, plan.groupsPerBatch, step);
      // As the reference (§5.1): evaluators on the pre-update sampler, their keys under `test/`.
      const evals = run.shouldEval(step) ? run.customSamplingEvals(step, samplerPath) : [];
      const groups = await Promise.all(
        datasets.map((dataset, group) =>
          acts.distillRolloutGroup.executeWithOptions({ summary: `student rollout step ${step} group ${group} (dataset ${dataset})` }, [
            { run: input.run, step, group, samplerPath },
          ]),
        ),
      );
      for (const { metrics } of await Promise.all(evals)) for (const [k, v] of Object.entries(metrics)) preStepMetrics[`test/${k}`] = v;
      if (groups.every((g) => g.ref === null)) {
        // Nothing survived: no training and no checkpoint, as the reference; the row records progress.
        await run.logMetrics(step, preStepMetrics);
        run.state.custom = { sampler: { path: samplerPath, step: step + 1 } } satisfies DistillState;
        return;
      }
      const result = await run.train(
        acts.distillTrain,
        { run: input.run, step, groups, learningRate: preStepMetrics['optim/lr'], preStepMetrics },
        `train step ${step}`,
      );
      run.state.custom = { sampler: { path: result.samplerPath, step: step + 1 } } satisfies DistillState;
      run.setLastMetrics(result.metrics);
    },

    // As RL (§5.1 "a checkpoint at i+1, exactly as in RL").
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 ? { name: pad(step + 1), row: { batch: step + 1 } } : undefined),
    loopState: (step) => ({ batch: step + 1 }),
    finalRow: () => ({ batch: run.state.step }),
  });
}

/** The sampling stage's result: a RunResult (no checkpoint) plus the conversations file for SFT. */
export interface TeacherSamplingResult extends RunResult {
  /** Absolute path of the conversations JSONL: the next stage's `dataset.file_path`. */
  outputPath: string;
  conversations: number;
  shards: number;
}

/**
 * Samples each dataset's teacher on its prompts in parallel shard activities (seeds from the run
 * seed and each prompt's position) and concatenates the shards into one conversations file.
 */
export async function teacherSamplingWorkflow(input: DistillInput): Promise<TeacherSamplingResult> {
  const cfg = input.config;
  const acts = activitiesFor(cfg.durability);
  const { done, ...result } = await runShardedGeneration(input, {
    kind: 'distill',
    label: 'teacher sampling',
    unit: 'shard',
    width: cfg.off_policy.max_parallel_shards,
    init: () => acts.initRun({ run: input.run, config: cfg }),
    plan: async () => (await acts.teacherSamplePlan({ run: input.run })).nShards,
    shard: (shard) => acts.teacherSampleShard.executeWithOptions({ summary: `teacher samples shard ${shard}` }, [{ run: input.run, shard }]),
    merge: (nShards) => acts.teacherSampleMerge({ run: input.run, nShards }),
  });
  return { ...result, shards: done };
}
