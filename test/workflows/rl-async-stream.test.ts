// Async RL as 0.6.1's do_async_training runs it, beyond the schedule (rl.test.ts): streaming
// minibatches, the initial checkpoint, groups filtered as they complete and the data running out.
// On the real stack: Temporal dev server, engine over HTTP, real tokenizer.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { NO_TOKEN_TOTALS } from '../../src/cookbook/token-usage.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { expectRlTokenTotals, stepRows, tokenTotalsByStep } from '../support/tokens.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');
type Row = Record<string, unknown>;

describe('RL async with streaming minibatches', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  // max_steps_off_policy 0: each step's 2 rollouts start on its own weights once the step before
  // has trained, so which groups a step trains does not depend on timing; its two minibatches
  // (one group each) take them in completion order, and gradients add up the same either way.
  // The killed run must equal the uninterrupted one: rows, checkpoints (the initial 000000 too) and weights.
  it('a worker killed mid-step is replaced and the run equals an uninterrupted one', async () => {
    const overrides = [
      'async_config={"max_steps_off_policy":0,"groups_per_batch":2,"loss_fn":"importance_sampling"}',
      'stream_minibatch_config={"groups_per_batch":2,"num_minibatches":2}',
      'max_steps=2',
      'durability.steps_per_workflow_run=1',
    ];
    const clean = testRun(stack, config, overrides, 'rl');
    const crashed = testRun(stack, config, overrides, 'rl');
    let worker = await workerProcess(stack, 'rl-async-stream-worker-1');
    let cleanResult: RunResult;
    let crashedResult: RunResult;
    try {
      cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup');
      await worker.kill();
      worker = await workerProcess(stack, 'rl-async-stream-worker-2');
      crashedResult = (await handle.result()) as RunResult;
    } finally {
      await worker.stop();
    }
    expect(cleanResult).toMatchObject({ status: 'completed', steps: 2 });
    expect(crashedResult).toMatchObject({ status: 'completed', steps: 2 });
    const rows = stepRows(metricsOf(clean.run.logPath));
    expect(rows.map((r) => r['training_client/step'])).toEqual([0, 1]);
    for (const row of rows) {
      expect(row['env/all/total_episodes']).toBe(8); // 2 groups × 4 samples
      expect([row['async/staleness_max'], row['sampling_client/step_min']]).toEqual([0, row.step]);
    }
    expectSameRows(metricsOf(crashed.run.logPath), metricsOf(clean.run.logPath));
    expect(timingProblems(crashed.run.logPath, [0, 1], { total: true })).toEqual([]);
    // 0.6.1's initial checkpoint (state and sampler, batch 0) before the first step.
    expect(checkpointsOf(clean.run.logPath).map((c) => [c.name, c.batch])).toEqual([['000000', 0], ['final', 2]]);
    expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    expectRlTokenTotals(metricsOf(clean.run.logPath), new RunStore(clean.run.logPath).readCheckpoints(), 2);
    expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
      await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
    );
  });

  // The untrained model earns the same reward in (nearly) every group of rl_small: with
  // remove_constant_reward_groups the 6 groups of its first 2 batches are dropped as they complete
  // and take no place in a step, so the data runs out before end_batch (2). As 0.6.1: every step
  // trains 3 groups (the last what is left), a step left with none ends training (before, a row
  // with no training step was logged for it), and the run closes at end_batch. (Full steps with
  // groups filtered, and a shorter last one: test/unit/rl-async-rollouts.test.ts.)
  it('groups filtered as they complete take no place in a step; when none is left, training ends at end_batch with no row without a step', async () => {
    const run = testRun(stack, config, ['async_config={"max_steps_off_policy":1,"groups_per_batch":3,"loss_fn":"importance_sampling"}', 'remove_constant_reward_groups=true', 'max_steps=2'], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const all = metricsOf(run.run.logPath);
    const rows = stepRows(all);
    expect(rows.length).toBeLessThan(2);
    expect(rows.map((r) => r.step)).toEqual(rows.map((_, i) => i));
    const groups = rows.map((r) => (r['env/all/total_episodes'] as number) / 4);
    expect(groups.slice(0, -1).every((g) => g === 3)).toBe(true);
    if (groups.length) expect(groups.at(-1)).toBeGreaterThan(0);
    for (const row of rows) expect(row).toHaveProperty('optim/kl_sample_train_v1');
    // Every group was sampled once: trained, or dropped (a skipped group, its sampling discarded).
    const skipped = (rows.at(-1)?.['rollout_errors/groups_skipped'] as number | undefined) ?? 0;
    expect(groups.reduce((a, b) => a + b, 0) + skipped).toBeLessThanOrEqual(6);
    const closing = all.at(-1)!;
    expect(closing.step).toBe(2);
    expect(closing['tokens/discarded/sampled']).toBeGreaterThan(0);
    expect(closing['tokens/discarded/trained']).toBe(0);
    // The closing totals: the last step's, and the sampling of groups dropped after it (never trained tokens).
    const last = [...tokenTotalsByStep(all).values()].at(-1) ?? NO_TOKEN_TOTALS;
    expect(closing['tokens/cumulative/trained']).toBe(last.cumulative.trained);
    expect((closing['tokens/cumulative/sampled'] as number) - last.cumulative.sampled).toBe((closing['tokens/discarded/sampled'] as number) - last.discarded.sampled);
    const checkpoints = new RunStore(run.run.logPath).readCheckpoints();
    expect(checkpoints.map((c) => [c.name, c.batch])).toEqual([['000000', 0], ['final', 2]]);
    expect(checkpoints.at(-1)!.cumulative_tokens).toEqual(Object.fromEntries(['sampled', 'prefill_cached', 'prefill_uncached', 'trained'].map((k) => [k, closing[`tokens/cumulative/${k}`]])));
  });
});

/**
 * Rows equal: integers and strings exactly; floats to float32 rounding (the engine sums a step's
 * per-datum values over its minibatches in the order they were sent, which is completion order).
 */
function expectSameRows(actual: Row[], expected: Row[]): void {
  expect(actual.map((r) => Object.keys(r).sort())).toEqual(expected.map((r) => Object.keys(r).sort()));
  expected.forEach((row, i) => {
    for (const [k, v] of Object.entries(row)) {
      const w = actual[i][k];
      if (typeof v === 'number' && !Number.isInteger(v)) expect(Math.abs((w as number) - v), `step ${row.step} ${k}`).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(v)));
      else expect(w, `step ${row.step} ${k}`).toEqual(v);
    }
  });
}
