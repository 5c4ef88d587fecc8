// The vision SFT recipe (configs/vlm_classifier.json) under a worker crash: a worker process is
// SIGKILLed while a step is in flight, once per epoch — its images decoded, resized and flipped
// with the seeded augmentation — a new worker takes over, and the run ends with the metrics,
// checkpoints and final weights of an uninterrupted run.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', '..', 'configs', 'vlm_classifier.json');
// Two epochs of the shipped shapes (18 steps each), no sampling evaluator: the kill is the point.
const overrides = ['num_epochs=2', 'eval_every=0', 'save_every=6', 'evaluators=[]'];

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
});
afterAll(async () => {
  await stack?.stop();
});

describe('vlm_classifier under a worker crash', () => {
  it('a SIGKILLed worker is replaced, in each epoch, and the run equals an uninterrupted one', async () => {
    let worker = await workerProcess(stack, 'worker-clean');
    const clean = testRun(stack, config, overrides);
    const cleanResult = await runToEnd(stack, clean);
    expect(cleanResult.status).toBe('completed');

    const crashed = testRun(stack, config, overrides);
    const handle = await startRun(stack.client, crashed, stack.taskQueue);
    for (const [killAt, name] of [[5, 'worker-2'], [24, 'worker-3']] as const) {
      await waitUntil(`step ${killAt}`, async () => (await handle.query(progressQuery)).step >= killAt, 300_000, 50);
      await worker.kill();
      worker = await workerProcess(stack, name);
    }
    const crashedResult = (await handle.result()) as RunResult;
    await worker.stop();

    expect(crashedResult.status).toBe('completed');
    expect(crashedResult.steps).toBe(cleanResult.steps);
    expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
    expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    const [a, b] = await Promise.all([
      weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!),
    ]);
    expect(b).toBe(a);
  });
});
