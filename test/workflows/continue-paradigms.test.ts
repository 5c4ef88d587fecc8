// `cookbook continue` for DPO and on-policy distillation on the real stack: a run of N steps
// continued to 2N equals one uninterrupted 2N-step run in metrics rows, checkpoints.jsonl and final
// weights. DPO's continued run keeps its parent's reference (the parent's starting weights, recorded
// as the checkpoint row's resume_state), never its own continued weights; distillation's teacher
// stays and the student goes on.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastStateCheckpoint, resolveContinuation } from '../../src/cli/continue.js';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import { ConfigError } from '../../src/cookbook/config/overrides.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const promptsFile = join(import.meta.dirname, '..', '..', 'data', 'distill_prompts.jsonl');

describe('continuing DPO and distillation runs', () => {
  let stack: TestStack;
  let n = 0;
  const childOf = (parentLogPath: string, overrides: string[]) => {
    const id = `continued-${Date.now()}-${++n}`;
    return resolveContinuation(parentLogPath, [...overrides, `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
  };
  const runAll = (runs: ResolvedRun[]) =>
    withWorker(stack, async () => {
      const results: RunResult[] = [];
      for (const r of runs) results.push((await (await startRun(stack.client, r, stack.taskQueue)).result()) as RunResult);
      return results;
    });
  const fingerprint = (r: RunResult) => weightsFingerprint(stack.engine.baseUrl, r.finalCheckpoint!.samplerPath!);

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('DPO: 5 steps continued to 10 equal an uninterrupted 10-step run, on the parent\'s reference', async () => {
    const config = join(fixtures, 'dpo_small.json');
    const clean = testRun(stack, config, [], 'dpo');
    const parent = testRun(stack, config, ['max_steps=5'], 'dpo');
    const [cleanResult, parentResult] = await runAll([clean, parent]);
    expect([cleanResult.steps, parentResult.steps]).toEqual([10, 5]);

    const final = lastStateCheckpoint(parent.run.logPath)!;
    const referencePath = (final.resume_state as { reference_path?: string } | undefined)?.reference_path;
    expect(referencePath).toMatch(/^tinker:\/\/.*reference/);
    // Every row of the parent names the same reference: the weights it started from.
    expect(new RunStore(parent.run.logPath).readCheckpoints().map((r) => (r.resume_state as { reference_path: string }).reference_path)).toEqual([referencePath, referencePath]);

    const child = childOf(parent.run.logPath, ['max_steps=10']);
    expect(child.config.continue_from).toMatchObject({ name: 'final', next_step: 5, resume_state: { reference_path: referencePath } });
    const [childResult] = await runAll([child]);
    expect(childResult).toMatchObject({ status: 'completed', steps: 10 });

    const rows = metricsOf(child.run.logPath);
    expect(rows).toEqual(metricsOf(clean.run.logPath).slice(5));
    // A reference retaken from the continued weights would make step 5's policy its own reference: loss ln 2.
    expect(Math.abs((rows[0].dpo_loss as number) - Math.LN2)).toBeGreaterThan(1e-3);
    expect(checkpointsOf(child.run.logPath)).toEqual(checkpointsOf(clean.run.logPath).filter((c) => c.name !== '000004'));
    // The child's own checkpoints hand the same reference on to a further continuation.
    expect((lastStateCheckpoint(child.run.logPath)!.resume_state as { reference_path: string }).reference_path).toBe(referencePath);
    expect(await fingerprint(childResult)).toBe(await fingerprint(cleanResult));

    // A row written before rows recorded the reference cannot be continued against the initial weights.
    const old = join(stack.dir, 'runs', 'dpo-without-reference');
    const store = new RunStore(old);
    store.init({ ...new RunStore(parent.run.logPath).read(), config: { ...new RunStore(parent.run.logPath).read<Record<string, unknown>>().config, log_path: old } }, new Set());
    const { resume_state: _r, ...withoutReference } = final;
    store.writeCheckpoint(withoutReference);
    expect(() => childOf(old, ['max_steps=10'])).toThrow(ConfigError);
    expect(() => childOf(old, ['max_steps=10'])).toThrow(/^reference_model: checkpoint "final" in .*checkpoints\.jsonl records no reference_path/);
    expect(childOf(old, ['max_steps=10', 'reference_model={"kind":"sampler_path","path":"tinker://x/sampler_weights/y"}']).config.continue_from.resume_state).toBeNull();
  }, 600_000);

  it('on-policy distillation: 3 steps continued to 6 equal an uninterrupted 6-step run; the teacher stays', async () => {
    // A teacher away from the base model, so that the student has something to learn.
    const teacher = testRun(stack, join(fixtures, 'sl_small.json'), ['num_epochs=1', 'max_steps=3', 'learning_rate=0.02', 'eval_every=0', 'save_every=0']);
    const [teacherResult] = await runAll([teacher]);
    const cfg = JSON.parse(readFileSync(join(fixtures, 'distill_small.json'), 'utf8'));
    cfg.dataset_configs[0].teacher_config.load_checkpoint_path = teacherResult.finalCheckpoint!.samplerPath;
    cfg.dataset_configs[0].dataset.file_path = promptsFile;
    const config = join(stack.dir, 'distill-continue.json');
    writeFileSync(config, JSON.stringify(cfg));

    const clean = testRun(stack, config, [], 'distill');
    const parent = testRun(stack, config, ['max_steps=3'], 'distill');
    const [cleanResult, parentResult] = await runAll([clean, parent]);
    expect([cleanResult.steps, parentResult.steps]).toEqual([6, 3]);
    const child = childOf(parent.run.logPath, ['max_steps=null']);
    expect(child.config.dataset_configs[0].teacher_config.load_checkpoint_path).toBe(teacherResult.finalCheckpoint!.samplerPath);
    const [childResult] = await runAll([child]);
    expect(childResult).toMatchObject({ status: 'completed', steps: 6 });

    const cleanRows = metricsOf(clean.run.logPath);
    expect(cleanRows[3].teacher_kl as number).toBeGreaterThan(0);
    expect(metricsOf(child.run.logPath)).toEqual(cleanRows.slice(3));
    expect(checkpointsOf(child.run.logPath)).toEqual(checkpointsOf(clean.run.logPath).filter((c) => c.name !== '000003'));
    expect(await fingerprint(childResult)).toBe(await fingerprint(cleanResult));
  }, 600_000);

  // The fuller tier: the continued run is SL's mechanism (continue_from.next_step) on a step-indexed loop.
  if (fullTier) it('off-policy (top-K) distillation: 3 steps continued to 6 equal an uninterrupted 6-step run', async () => {
    const config = join(fixtures, 'distill_off_policy_small.json');
    const data = ['dataset_configs.0.dataset.file_path=' + join(import.meta.dirname, '..', '..', 'data', 'example_chat_small.jsonl')];
    const clean = testRun(stack, config, data, 'distill_off_policy');
    const parent = testRun(stack, config, [...data, 'max_steps=3'], 'distill_off_policy');
    const [cleanResult, parentResult] = await runAll([clean, parent]);
    expect([cleanResult.steps, parentResult.steps]).toEqual([6, 3]);
    const child = childOf(parent.run.logPath, ['max_steps=null']);
    expect(child.config.continue_from).toMatchObject({ name: 'final', next_step: 3 });
    const [childResult] = await runAll([child]);
    expect(childResult).toMatchObject({ status: 'completed', steps: 6 });

    expect(metricsOf(child.run.logPath)).toEqual(metricsOf(clean.run.logPath).slice(3));
    // The continued run saves no periodic checkpoint at the step it starts from, as a resumed reference loop.
    expect(checkpointsOf(child.run.logPath)).toEqual(checkpointsOf(clean.run.logPath).filter((c) => c.name !== '000002'));
    expect(await fingerprint(childResult)).toBe(await fingerprint(cleanResult));
  }, 600_000);

  it('a teacher-sampling (off_policy_sample) run is refused naming mode', () => {
    const dir = join(stack.dir, 'runs', 'teacher-sampling-parent');
    const config = { ...JSON.parse(readFileSync(join(fixtures, 'distill_small.json'), 'utf8')), mode: 'off_policy_sample', log_path: dir };
    new RunStore(dir).init({ workflowId: 'distill-sampling', kind: 'distill', config }, new Set());
    expect(() => childOf(dir, [])).toThrow(/^mode: .* is a teacher-sampling run \(mode off_policy_sample\), which has no checkpoint/);
  });
});
