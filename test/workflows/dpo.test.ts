// The DPO workflow on the real stack: Temporal dev server, engine over HTTP, real tokenizer, the
// shipped comparison data. Preference accuracy must rise above chance.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { overlappingActivities } from '../support/history.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'dpo_small.json');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('DPO workflow', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ own: true });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('learns the preference: accuracy and margin rise, files and metrics use the reference names', async () => {
    const run = testRun(stack, config, [], 'dpo');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(10);

    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([...Array(10).keys()]);
    for (const key of ['epoch', 'learning_rate', 'progress', 'num_pairs', 'num_tokens', 'dpo_loss', 'accuracy', 'margin', 'chosen_reward', 'rejected_reward', 'loss:sum']) {
      expect(rows[3], key).toHaveProperty(key);
    }
    expect(rows[3].progress).toBe(3 / 10); // step/total_steps, as the reference
    expect(rows.every((r) => r.num_pairs === 2)).toBe(true);
    // Step 0: the policy is the reference, so every log ratio is 0: loss ln 2, accuracy 0 (strict).
    expect(rows[0].dpo_loss as number).toBeCloseTo(Math.LN2, 3);
    expect(rows[0].accuracy).toBe(0);
    const acc = rows.map((r) => r.accuracy as number);
    const margin = rows.map((r) => r.margin as number);
    expect(mean(acc.slice(-4))).toBeGreaterThan(0.5);
    expect(mean(acc.slice(-4))).toBeGreaterThan(mean(acc.slice(0, 4)));
    expect(mean(margin.slice(-4))).toBeGreaterThan(0);
    expect(mean(rows.slice(-4).map((r) => r.dpo_loss as number))).toBeLessThan(Math.LN2);

    // Evals before steps 0 and 5 (eval_every) and before the last step.
    expect(rows.filter((r) => 'test/nll' in r).map((r) => r.step)).toEqual([0, 5, 9]);
    // DPO checkpoints at the start of steps 4 and 8, before their update; the row names the batch to train.
    const ckpts = checkpointsOf(run.run.logPath);
    expect(ckpts.map((c) => c.name)).toEqual(['000004', '000008', 'final']);
    expect(ckpts[0]).toMatchObject({ epoch: 0, batch: 4 });
    expect(ckpts[2]).toMatchObject({ epoch: 1, batch: 0 });
    // As the reference, the row of a step that began with a save logs its state_path.
    const raw = new RunStore(run.run.logPath).readMetrics();
    expect(raw[4].state_path).toMatch(/^tinker:\/\/.+\/weights\/000004$/);
    expect(raw[5]).not.toHaveProperty('state_path');
    expect(result.finalCheckpoint?.samplerPath).toMatch(/sampler_weights\/final$/);
  });

  // Fuller tier: the step loop is shared with SL, whose pipelined and unpipelined runs sl.test.ts compares in the gate.
  if (fullTier) it('pipelined steps (submit_ahead 1, the default) equal unpipelined ones, queued ahead except before an eval or checkpoint', async () => {
    const pipelined = testRun(stack, config, [], 'dpo');
    const unpipelined = testRun(stack, config, ['submit_ahead=0'], 'dpo');
    const [a, b] = await withWorker(stack, async () => {
      const results: RunResult[] = [];
      for (const run of [pipelined, unpipelined]) results.push((await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
      return results;
    });
    const untimed = (logPath: string) => metricsOf(logPath).map(({ 'time/total': _t, ...row }) => row);
    expect(untimed(pipelined.run.logPath)).toEqual(untimed(unpipelined.run.logPath));
    expect(checkpointsOf(pipelined.run.logPath)).toEqual(checkpointsOf(unpipelined.run.logPath));
    const [fa, fb] = await Promise.all([weightsFingerprint(stack.engine.baseUrl, a.finalCheckpoint!.samplerPath!), weightsFingerprint(stack.engine.baseUrl, b.finalCheckpoint!.samplerPath!)]);
    expect(fa).toBe(fb);
    // Not ahead of the evals before 5 and 9 nor of the checkpoints taken before 4 and 8: 1, 2, 3, 6, 7.
    expect(await overlappingActivities(stack.client, pipelined.workflowId, 'dpoSubmit', 'dpoFinish')).toBe(5);
    expect(await overlappingActivities(stack.client, unpipelined.workflowId, 'dpoSubmit', 'dpoFinish')).toBe(0);
  });

  it("infrequent evaluators before every infrequent_eval_every-th step, after the others (the reference's train_dpo)", async () => {
    const probe = join(stack.dir, 'dpo_rare_eval.jsonl');
    writeFileSync(probe, ['What is 2 + 2?', 'Name a colour.'].map((input) => JSON.stringify({ input, output: 'e' })).join('\n') + '\n');
    const entry = { kind: 'custom_sampling', name: 'rare', file_path: probe, max_tokens: 8 };
    const run = testRun(stack, config, ['max_steps=3', 'eval_every=0', 'infrequent_eval_every=2', `infrequent_evaluators=${JSON.stringify([entry])}`], 'dpo');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.steps).toBe(3);
    const rows = metricsOf(run.run.logPath);
    expect(rows.filter((r) => 'rare/accuracy' in r).map((r) => r.step)).toEqual([0, 2]);
    // eval_every 0: no regular evals (nor the test NLL), even before the last step.
    expect(rows.some((r) => 'test/nll' in r)).toBe(false);
  });

  it('an engine restart mid-run restores the last checkpoint with the same reference and equals an uninterrupted run', async () => {
    // With a custom evaluator too: its snapshot and sampling must replay the same after the restore.
    const evaluated = ['evaluators=[{"kind":"custom_sampling","name":"probe","file_path":"eval_probe.jsonl","max_tokens":8}]'];
    const clean = testRun(stack, config, evaluated, 'dpo');
    const crashed = testRun(stack, config, evaluated, 'dpo');
    const worker = await workerProcess(stack, 'dpo-worker');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      // After the checkpoint taken before step 4 and before the next one: steps 4.. are replayed.
      await waitUntil('step 6', async () => (await handle.query(progressQuery)).step >= 6, 120_000, 50);
      await stack.restartEngine();
      const crashedResult = (await handle.result()) as RunResult;

      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1);
      // Evals before steps 0 and 5 and before the last step (9), as the reference.
      expect(metricsOf(clean.run.logPath).filter((r) => 'probe/accuracy' in r).map((r) => r.step)).toEqual([0, 5, 9]);
      const withoutPaths = (rows: Array<Record<string, unknown>>) => rows.map(({ state_path: _p, ...rest }) => rest);
      expect(withoutPaths(metricsOf(crashed.run.logPath))).toEqual(withoutPaths(metricsOf(clean.run.logPath)));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      const [a, b] = await Promise.all([
        weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
        weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!),
      ]);
      expect(b).toBe(a);
    } finally {
      await worker.stop();
    }
  });
});
