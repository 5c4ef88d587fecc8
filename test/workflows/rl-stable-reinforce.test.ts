// loss_fn stable_reinforce on the real stack: the cookbook samples with record_stability_info and
// sends provenance on every datum (the engine checks the spans against its records), and the local
// engine, which cannot serve the unpublished objective, makes the run fail at once with a
// non-retryable error naming the loss rather than retrying forever. On-policy distillation, which
// takes any RL loss, samples with the same records.
import { join } from 'node:path';
import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');
const distillConfig = join(import.meta.dirname, '..', 'fixtures', 'distill_small.json');

describe('RL with loss_fn stable_reinforce against the local engine', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('fails within the first step with a non-retryable error naming the loss', async () => {
    const started = Date.now();
    const { run, result } = await withWorker(stack, async () => {
      const run = testRun(stack, config, ['loss_fn=stable_reinforce', 'eval_every=0'], 'rl');
      const handle = await startRun(stack.client, run, stack.taskQueue);
      return { run, result: await handle.result().catch((err: unknown) => err) };
    });
    expect(result).toBeInstanceOf(WorkflowFailedError);
    const failure = (result as WorkflowFailedError).cause?.cause as ApplicationFailure;
    expect(failure.nonRetryable).toBe(true);
    expect(failure.type).toBe('InvalidRequest');
    // Refused for the loss itself: the provenance the cookbook sent passed the engine's checks first.
    expect(failure.message).toMatch(/loss_fn 'stable_reinforce' is not served by this engine/);
    expect(metricsOf(run.run.logPath)).toEqual([]);
    expect(checkpointsOf(run.run.logPath)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(240_000);
  });

  it('on-policy distillation samples the same way: refused for the loss itself, not for missing stability records', async () => {
    const { run, result } = await withWorker(stack, async () => {
      const run = testRun(stack, distillConfig, ['loss_fn=stable_reinforce', 'eval_every=0'], 'distill');
      const handle = await startRun(stack.client, run, stack.taskQueue);
      return { run, result: await handle.result().catch((err: unknown) => err) };
    });
    expect(result).toBeInstanceOf(WorkflowFailedError);
    const failure = (result as WorkflowFailedError).cause?.cause as ApplicationFailure;
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/loss_fn 'stable_reinforce' is not served by this engine/);
    expect(metricsOf(run.run.logPath)).toEqual([]);
  });
});
