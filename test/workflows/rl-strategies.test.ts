// Rollout strategies and custom evaluators on the real stack: a registered environment whose env
// in slot 1 of each group throws once (test/fixtures/envs/flaky-arithmetic.ts), run against the
// Temporal dev server and the engine, under each strategy of cookbook-spec §2.8.
import { join } from 'node:path';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_flaky.json');

describe('RL rollout strategies with an env that throws', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const runToResult = (overrides: string[]) =>
    withWorker(stack, async () => {
      const run = testRun(stack, config, overrides, 'rl');
      const handle = await startRun(stack.client, run, stack.taskQueue);
      return { run, result: (await handle.result().catch((err: unknown) => err)) as RunResult | Error };
    });

  it('retry_on_failure: the failed rollout is sampled again in a fresh env and every group trains', async () => {
    const { run, result } = await runToResult([]);
    expect((result as RunResult).status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    // One failure per group, cumulative over the run; no group lost a trajectory.
    expect(rows.map((r) => r['rollout_errors/FlakyToolError'])).toEqual([3, 6]);
    expect(rows.map((r) => r['rollout_errors/groups_skipped'])).toEqual([0, 0]);
    expect(rows.map((r) => r['env/all/total_episodes'])).toEqual([12, 12]);

    // The custom evaluator ran before each step: two targets always match, two never do.
    for (const row of rows) {
      const accuracy = row['probe/accuracy'] as number;
      expect(Number.isInteger(accuracy * 8)).toBe(true);
      expect(accuracy).toBeGreaterThanOrEqual(2 / 8);
      expect(accuracy).toBeLessThanOrEqual(6 / 8);
    }
  });

  it('min_viable_group: a group keeps its successful rollouts when they reach the floor', async () => {
    const { run, result } = await runToResult(['rollout_error_tolerance={"kind":"min_viable_group","min_successful":3,"max_retries":0}', 'eval_every=0']);
    expect((result as RunResult).status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r['env/all/total_episodes'])).toEqual([9, 9]);
    expect(rows.map((r) => r['rollout_errors/FlakyToolError'])).toEqual([3, 6]);
    expect(rows.every((r) => !('probe/accuracy' in r))).toBe(true);
  });

  it('min_viable_group: a group below the floor is dropped, and a batch with no group left does not train', async () => {
    const { run, result } = await runToResult(['rollout_error_tolerance={"kind":"min_viable_group","min_successful":4,"max_retries":0}', 'eval_every=0']);
    expect((result as RunResult).status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r['rollout_errors/groups_skipped'])).toEqual([3, 6]);
    expect(rows.every((r) => !('env/all/total_episodes' in r) && !('optim/entropy' in r))).toBe(true);
    // Nothing was trained, and failed rollouts are not counted (as the reference): zero totals.
    const none = { sampled: 0, prefill_cached: 0, prefill_uncached: 0, trained: 0 };
    expect(checkpointsOf(run.run.logPath)).toEqual([{ name: 'final', batch: 2, cumulative_tokens: none, discarded_tokens: none }]);
  });

  it('fail_fast: the first env error fails the run with a message naming the rollout', async () => {
    const { run, result } = await runToResult(['rollout_error_tolerance=false', 'eval_every=0']);
    expect(result).toBeInstanceOf(WorkflowFailedError);
    const failure = (result as WorkflowFailedError).cause?.cause as ApplicationFailure;
    expect(failure.type).toBe('RolloutFailed');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/rollout of step 0 group \d: the grading tool timed out/);
    expect(metricsOf(run.run.logPath)).toEqual([]);
    expect(checkpointsOf(run.run.logPath)).toEqual([]);
  });
});
