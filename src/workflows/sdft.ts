// Self-distillation fine-tuning (the reference's distillation/sdft.py `main`), the `sdft` run kind.
// Each step: evaluators on the student's current sampler; every group of the batch rolled out by
// the student (question only); the teacher — the frozen base model, or the student's weights synced
// every `teacher_sync_every` steps — forced through each group's completions with the question and
// its golden answer as a demonstration, all groups at once; then one training step on the teacher's
// top-K soft targets (cross_entropy, or the reverse-KL custom loss) or on teacher_lp − student_lp
// advantages (`topk = 0`), which also saves the sampler weights the next step samples from.
import type { SDFTConfig } from '../cookbook/config/sdft.js';
import type { SDFTPlan } from '../activities/types.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type SDFTInput = RunInput<SDFTConfig, SDFTPlan>;

/** What a step hands the next: the student's sampler weights and the teacher's (null: the base model). */
interface SDFTState {
  sampler?: { path: string; step: number };
  teacherPath?: string | null;
}

const pad = (n: number) => String(n).padStart(6, '0');

export async function sdftWorkflow(input: SDFTInput): Promise<RunResult> {
  const run = new TrainingRun<SDFTConfig, SDFTPlan>('sdft', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.sdftPrepare({ run: input.run }));
  input.plan = plan;
  const totalSteps = Math.min(plan.nBatches, cfg.max_steps ?? Infinity);
  run.state.custom ??= {} satisfies SDFTState;
  const state = () => run.state.custom as SDFTState;
  const groupsIn = (step: number) => Math.min(cfg.dataset.groups_per_batch, plan.nTrain - step * cfg.dataset.groups_per_batch);

  return run.run({
    totalSteps,
    lossKey: cfg.topk > 0 ? 'sdft/mean_teacher_entropy' : 'sdft/mean_advantage',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: {} satisfies SDFTState,

    async runStep(step) {
      const current = state().sampler;
      const samplerPath = current?.step === step ? current.path : await run.saveSamplerWeights(`sampler_${pad(step)}`);
      const teacherPath = state().teacherPath ?? null;
      const preStepMetrics: Record<string, number> = {
        'progress/batch': step,
        'optim/lr': run.learningRate(cfg.learning_rate, 1),
        'progress/done_frac': (step + 1) / totalSteps,
      };
      const evals = run.shouldEval(step) ? run.customSamplingEvals(step, samplerPath) : [];
      for (const { metrics } of await Promise.all(evals)) for (const [k, v] of Object.entries(metrics)) preStepMetrics[`test/${k}`] = v;

      const groups = Array.from({ length: groupsIn(step) }, (_, g) => g);
      const rollouts = await Promise.all(
        groups.map((group) => acts.sdftRolloutGroup.executeWithOptions({ summary: `student rollout step ${step} group ${group}` }, [{ run: input.run, step, group, samplerPath }])),
      );
      const kept = rollouts.filter((r) => r.ref !== null);
      const teacher = await Promise.all(
        kept.map((r) =>
          acts.sdftTeacherGroup.executeWithOptions({ summary: `teacher pass step ${step} group ${r.group}` }, [{ run: input.run, step, group: r.group, rolloutRef: r.ref!, teacherPath }]),
        ),
      );
      const result = await run.train(
        acts.sdftTrain,
        {
          run: input.run,
          step,
          groups: kept.map((r, i) => ({ group: r.group, rolloutRef: r.ref!, teacherRef: teacher[i].ref })),
          learningRate: preStepMetrics['optim/lr'],
          preStepMetrics,
        },
        `train step ${step}`,
      );
      let nextTeacher = teacherPath;
      // The reference's optional hard sync: the student's weights become the teacher's.
      if (cfg.teacher_sync_every && (step + 1) % cfg.teacher_sync_every === 0) nextTeacher = await run.saveSamplerWeights(`teacher_sync_${step + 1}`);
      run.state.custom = { sampler: { path: result.samplerPath, step: step + 1 }, teacherPath: nextTeacher } satisfies SDFTState;
      run.setLastMetrics(result.metrics);
    },

    // As the reference's save_checkpoint_and_get_sampling_client: a checkpoint at i+1.
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 ? { name: pad(step + 1), row: { batch: step + 1 } } : undefined),
    loopState: (step) => ({ batch: step + 1 }),
    finalRow: () => ({ batch: run.state.step }),
  });
}
