// `cookbook set` while no worker polls: the change is kept in the run's history as a signal (an
// update needs a worker to answer) and applied when a worker comes. A sweep applies it to itself
// and to the points it runs, as it does an answered `set`.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SET_ANSWER_TIMEOUT_MS, setHot } from '../../src/cli/runs.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { SweepProgress, SweepResult } from '../../src/workflows/sweep.js';
import { checkpointsOf } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sweep_small.json');

describe('set without a worker', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a sweep records the change, then applies it to itself and its point once a worker polls', async () => {
    // One point of 4 steps that checkpoints every 2 steps unless the set lands (then at step 3).
    const run = testRun(stack, config, ['grid={"learning_rate": [0.01]}'], 'sweep');
    const handle = await startRun(stack.client, run, stack.taskQueue);
    const started = Date.now();
    const outcome = await setHot(stack.client, run.workflowId, ['save_every=3']);
    // It did not wait for an update's answer first: bounded by that wait, not by a guess at how fast
    // a loaded machine answers a few RPCs.
    expect(Date.now() - started).toBeLessThan(SET_ANSWER_TIMEOUT_MS - 1000);
    expect(outcome).toEqual({ applied: false, recorded: { save_every: 3 }, worker: { kind: 'none', queue: stack.taskQueue } });
    // A bad value is refused here, before anything is recorded.
    await expect(setHot(stack.client, run.workflowId, ['save_every=-1'])).rejects.toThrow('save_every must be an integer ≥ 0');

    const result = await withWorker(stack, async () => {
      await waitUntil('the sweep applied the recorded set', async () => ((await handle.query(progressQuery)) as SweepProgress).hotSet.save_every === 3, 120_000);
      return (await handle.result()) as SweepResult;
    });
    expect(result.points.map((p) => p.status)).toEqual(['completed']);
    const names = checkpointsOf(join(result.logPath, result.points[0].name)).map((r) => r.name);
    expect(names).toContain('000003');
    expect(names).not.toContain('000002');
    const history = await stack.client.workflow.getHandle(run.workflowId, handle.firstExecutionRunId).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'set')).toHaveLength(1);
  });
});
