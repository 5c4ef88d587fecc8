// Exactly-once steps under a worker crash: a worker process is SIGKILLed in the middle of a run
// (mid-step, so the engine may have applied a step the workflow has not heard of), a new worker
// takes over, and the run ends with the metrics and final weights of an uninterrupted run. One
// uninterrupted run (pipelined: sl.test.ts shows both loops end equal) is the baseline of every test.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, uninterruptedRun, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { inFullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
});
afterAll(async () => {
  await stack?.stop();
});

const uninterrupted = uninterruptedRun(() => stack, config);
const steps = (n: number) => Array.from({ length: n }, (_, i) => i);

// Both loops: pipelined (submit_ahead 1, the default: a kill can land between a step's submission
// and its collection, with the next step already queued) and, in the fuller tier, unpipelined
// (submit_ahead 0), compared with the same pipelined run: sl.test.ts shows the two loops end equal.
for (const [loop, overrides] of inFullTier<[string, string[]]>([['pipelined', []]], [['unpipelined', ['submit_ahead=0']]])) describe(`supervised workflow under a worker crash (${loop})`, () => {
  it('a SIGKILLed worker is replaced and the run equals an uninterrupted one', async () => {
    const crashed = testRun(stack, config, overrides);

    let worker = await workerProcess(stack, 'worker-clean');
    const { clean, cleanResult } = await uninterrupted();

    const handle = await startRun(stack.client, crashed, stack.taskQueue);
    // Kill twice: once in the first epoch and once in the second, each while a step is in flight.
    for (const [killAt, name] of [[3, 'worker-2'], [7, 'worker-3']] as const) {
      await waitUntil(`step ${killAt}`, async () => (await handle.query(progressQuery)).step >= killAt, 120_000, 50);
      await worker.kill();
      worker = await workerProcess(stack, name);
    }
    const crashedResult = (await handle.result()) as RunResult;
    await worker.stop();

    expect(crashedResult.status).toBe('completed');
    expect(crashedResult.steps).toBe(cleanResult.steps);
    expect(crashedResult.recoveries).toBe(0); // the engine kept the model: seq-id dedupe, no restore
    // The engine states its guarantees (no probe), and the run's log says so.
    expect(readFileSync(new RunStore(crashed.run.logPath).logFile, 'utf8')).toContain('"ordered":true,"deduplicated":true,"source":"capabilities"');
    // Equal but for wall-clock timings (metricsOf leaves time/* out), which are there once per step.
    expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
    expect(timingProblems(crashed.run.logPath, steps(cleanResult.steps), { total: false })).toEqual([]);
    expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    const [a, b] = await Promise.all([
      weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!),
    ]);
    expect(b).toBe(a);
  });

  it('an engine restart mid-run restores the last checkpoint, replays, and equals an uninterrupted run', async () => {
    const crashed = testRun(stack, config, overrides);
    const worker = await workerProcess(stack, 'worker-engine-test');
    try {
      const { clean, cleanResult } = await uninterrupted();
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      // After the checkpoint of step 4 and before the next one: steps 5.. are replayed from it.
      await waitUntil('step 6', async () => (await handle.query(progressQuery)).step >= 6, 120_000, 50);
      await stack.restartEngine();
      const crashedResult = (await handle.result()) as RunResult;

      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1);
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      // The replayed steps' timing replaced what their first attempt had: one row per step.
      expect(timingProblems(crashed.run.logPath, steps(cleanResult.steps), { total: false })).toEqual([]);
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
