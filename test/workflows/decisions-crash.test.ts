// Exactly-once decision steps under crashes (the Brier loss through forward_backward_custom: a
// forward, then a backward whose weights come from it, then the optim step). A worker process is
// SIGKILLed mid-step and replaced, then the engine is restarted (the run restores its last
// checkpoint and replays, its evals' recorded probabilities read back); the run ends with the
// metrics, checkpoint rows and final weights of an uninterrupted run.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { expectSameTraining, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, uninterruptedRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

// 4 decisions in batches of 2 over 3 epochs: 6 steps, evals at the start and the end, a checkpoint after step 2.
const config = join(import.meta.dirname, '..', 'fixtures', 'decisions_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
});
afterAll(async () => {
  await stack?.stop();
});

const uninterrupted = uninterruptedRun(() => stack, config, 'decisions');
/** Rows without wall-clock readings (metricsOf leaves time/* out; time_total is the step's own). */
const untimed = (logPath: string) => metricsOf(logPath).map(({ time_total: _t, ...row }) => row);

describe('decisions workflow under crashes', { timeout: 600_000 }, () => {
  it('a SIGKILLed worker mid-step, then an engine restart: the run equals an uninterrupted one', async () => {
    let worker = await workerProcess(stack, 'worker-clean');
    try {
      const { clean, cleanResult } = await uninterrupted();
      const crashed = testRun(stack, config, [], 'decisions');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);

      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 50);
      await untilActivityRunning(handle, 'decisionsStep');
      await worker.kill();
      worker = await workerProcess(stack, 'worker-2');

      // After the checkpoint of step 3 and before the end: steps from 3 on are replayed from it.
      await waitUntil('step 4', async () => (await handle.query(progressQuery)).step >= 4, 120_000, 50);
      await stack.restartEngine();
      const crashedResult = (await handle.result()) as RunResult;

      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.steps).toBe(6);
      expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1);
      expect(untimed(clean.run.logPath).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6]);
      const end = (r: typeof clean, result: RunResult) => ({ logPath: r.run.logPath, samplerPath: result.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl });
      await expectSameTraining(end(crashed, crashedResult), end(clean, cleanResult), untimed);
    } finally {
      await worker.stop();
    }
  });
});
