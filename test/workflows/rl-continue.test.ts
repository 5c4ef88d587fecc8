// `cookbook continue` for RL on the real stack. Sync: a run of one epoch over the dataset,
// continued to two (num_epochs cycling), equals one uninterrupted two-epoch run in metrics rows,
// checkpoints.jsonl and final weights, also when the continued run's worker is SIGKILLed. Async:
// what a stopped run had in flight is not carried over; the continued run's dataloader starts at
// dataset batch `next_step` (the reference's resume) and its first step samples only on the
// continued weights.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastStateCheckpoint, resolveContinuation } from '../../src/cli/continue.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');
// Three dataset batches: an epoch is 3 steps, two epochs 6 (save_every=3: checkpoints 000003, 000006).
const small = ['dataset.n_batches=3'];

describe('continuing an RL run', () => {
  let stack: TestStack;
  let n = 0;
  const childOf = (parentLogPath: string, overrides: string[]) => {
    const id = `rl-continued-${Date.now()}-${++n}`;
    return resolveContinuation(parentLogPath, [...overrides, `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
  };

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('sync: one epoch continued to two (also through a worker kill) equals an uninterrupted two-epoch run', async () => {
    const clean = testRun(stack, config, [...small, 'num_epochs=2'], 'rl');
    const parent = testRun(stack, config, [...small, 'num_epochs=1'], 'rl');
    let worker = await workerProcess(stack, 'rl-continue-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const parentResult = (await (await startRun(stack.client, parent, stack.taskQueue)).result()) as RunResult;
      expect([cleanResult.steps, parentResult.steps]).toEqual([6, 3]);
      expect(lastStateCheckpoint(parent.run.logPath)).toMatchObject({ name: 'final', batch: 3, next_step: 3 });

      const child = childOf(parent.run.logPath, ['num_epochs=2']);
      expect(child.config.continue_from).toMatchObject({ name: 'final', next_step: 3 });
      const childResult = (await (await startRun(stack.client, child, stack.taskQueue)).result()) as RunResult;

      const killed = childOf(parent.run.logPath, ['num_epochs=2']);
      const handle = await startRun(stack.client, killed, stack.taskQueue);
      await waitUntil('step 4', async () => (await handle.query(progressQuery)).step >= 4, 120_000, 50);
      await worker.kill();
      worker = await workerProcess(stack, 'rl-continue-2');
      const killedResult = (await handle.result()) as RunResult;

      const cleanRows = metricsOf(clean.run.logPath);
      expect(cleanRows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6]); // the steps, then the closing token totals
      for (const [run, result] of [[child, childResult], [killed, killedResult]] as const) {
        expect(result.status).toBe('completed');
        expect(result.steps).toBe(6);
        // Steps 3..5 sample dataset batches 0..2 again (second epoch) on the continued weights, and
        // the token totals go on from the parent's (its final checkpoint row's loop state).
        expect(metricsOf(run.run.logPath)).toEqual(cleanRows.slice(3));
        expect(checkpointsOf(run.run.logPath)).toEqual(checkpointsOf(clean.run.logPath).filter((c) => c.name !== '000003'));
        expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(
          await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
        );
      }
      // The parent's files are untouched.
      expect(metricsOf(parent.run.logPath).map((r) => r.step)).toEqual([0, 1, 2, 3]);
    } finally {
      await worker.stop();
    }
  }, 900_000);

  // Fuller tier: the gate continues a sync run through a worker kill above.
  if (fullTier) it('async: the continued run re-samples from dataset batch next_step on the continued weights', async () => {
    const asyncCfg = ['async_config={"max_steps_off_policy":1,"groups_per_batch":3,"loss_fn":"importance_sampling"}', 'save_every=0'];
    const clean = testRun(stack, config, [...small, ...asyncCfg], 'rl');
    const parent = testRun(stack, config, [...small, ...asyncCfg, 'max_steps=2'], 'rl');
    const [cleanResult, child, childResult] = await withWorker(stack, async () => {
      const c = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      await (await startRun(stack.client, parent, stack.taskQueue)).result();
      const ch = childOf(parent.run.logPath, ['max_steps=null']);
      return [c, ch, (await (await startRun(stack.client, ch, stack.taskQueue)).result()) as RunResult] as const;
    });
    expect(cleanResult.steps).toBe(3);
    expect(childResult).toMatchObject({ status: 'completed', steps: 3 });
    const rows = metricsOf(child.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([2, 3]); // its one step, then the closing token totals
    // What IS equal to a longer run: the step numbering, progress and the keys of each row.
    expect(Object.keys(rows[0]).sort()).toEqual(Object.keys(metricsOf(clean.run.logPath)[2]).sort());
    expect(rows[0]['progress/done_frac']).toBe(1);
    // What is not: the parent's in-flight rollouts are gone; every group of step 2 sampled on the continued weights.
    expect(rows[0]['sampling_client/step_min']).toBe(2);
    expect(existsSync(join(child.run.logPath, '.cookbook', 'store', 'rollouts', 'batch_000002'))).toBe(true);
    expect(existsSync(join(child.run.logPath, '.cookbook', 'store', 'rollouts', 'batch_000001'))).toBe(false);
    // As 0.6.1's do_async_training on resume: the initial checkpoint of its start batch, then the final.
    expect(checkpointsOf(child.run.logPath).map(({ name, batch }) => ({ name, batch }))).toEqual([{ name: '000002', batch: 2 }, { name: 'final', batch: 3 }]);
  }, 600_000);
});
