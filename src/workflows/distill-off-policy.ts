// Off-policy distillation with soft teacher targets (distillation/train_off_policy.py): the student
// trains on fixed supervised data; at every position the teacher's top-K tokens, renormalised, are
// the cross-entropy targets. Each step: evaluators on the pre-step weights when due, every domain's
// teacher pass (concurrently, recorded in the run store), one forward_backward + optim_step, then
// a checkpoint when due. The learning rate is constant, as the reference's. The teacher passes do not
// depend on the student, so step i+1's run while step i trains (the reference runs them in turn).
import type { OffPolicyDistillConfig } from '../cookbook/config/distill-off-policy.js';
import type { OffPolicyDistillPlan, TeacherTargetsResult } from '../activities/distill-off-policy.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type OffPolicyDistillInput = RunInput<OffPolicyDistillConfig, OffPolicyDistillPlan>;

const pad = (n: number) => String(n).padStart(6, '0');

export async function offPolicyDistillWorkflow(input: OffPolicyDistillInput): Promise<RunResult> {
  const run = new TrainingRun<OffPolicyDistillConfig, OffPolicyDistillPlan>('distill_off_policy', input);
  const { acts } = run;
  const cfg = input.config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.offPolicyDistillPrepare({ run: input.run }));
  input.plan = plan;
  const totalSteps = Math.min(plan.nBatches, cfg.max_steps ?? Infinity);
  // The reference saves no periodic checkpoint at the step it started (or resumed) from.
  const startStep = cfg.continue_from?.next_step ?? 0;

  /** Teacher passes started ahead, by step: a retried or replayed step reads what they recorded. */
  const teacherPasses = new Map<number, Promise<TeacherTargetsResult[]>>();
  function teacherTargets(step: number): Promise<TeacherTargetsResult[]> {
    let pass = teacherPasses.get(step);
    if (!pass) {
      pass = Promise.all(
        plan.counts.map((_, domain) =>
          acts.offPolicyTeacherTargets.executeWithOptions({ summary: `teacher top-${cfg.n_teacher_targets} step ${step} domain ${domain}` }, [{ run: input.run, step, domain }]),
        ),
      );
      // Settled here so an abandoned prefetch is no unhandled rejection; awaiting it still throws.
      pass.catch(() => undefined);
      teacherPasses.set(step, pass);
    }
    return pass;
  }

  /** The custom evaluators on the pre-step weights, their keys under `test/` as the reference's. */
  async function evaluate(step: number): Promise<Record<string, number>> {
    const metrics: Record<string, number> = {};
    if (run.shouldEval(step)) for (const [k, v] of Object.entries(await run.customEvalsOnSnapshot(step))) metrics[`test/${k}`] = v;
    return metrics;
  }

  return run.run({
    totalSteps,
    lossKey: 'train/loss:sum',
    createInitialModel: () => acts.createModel({ run: input.run }),
    // The next step's teacher pass is not left running behind continue-as-new.
    beforeContinueAsNew: async () => {
      await Promise.allSettled(teacherPasses.values());
    },

    async runStep(step) {
      const learningRate = run.learningRate(cfg.learning_rate, 1);
      const pass = teacherTargets(step); // alongside the evals on the pre-step weights
      const preStepMetrics = { 'progress/done_frac': (step + 1) / totalSteps, 'optim/lr': learningRate, ...(await evaluate(step)) };
      const targets = await pass;
      teacherPasses.delete(step);
      if (step + 1 < totalSteps) void teacherTargets(step + 1);
      const result = await run.train(acts.offPolicyDistillTrain, { run: input.run, step, targets, learningRate, preStepMetrics }, `train step ${step}`);
      run.setLastMetrics(result.metrics);
    },

    // As the reference: a checkpoint after every `save_every`-th step (not the first), its loop
    // state the step's own index.
    periodicCheckpoint: (step, every) => (step > startStep && step % every === 0 ? { name: pad(step), row: { batch: step } } : undefined),
    loopState: (step) => ({ batch: step + 1 }),
    finalRow: () => ({ batch: run.state.step }),
  });
}
