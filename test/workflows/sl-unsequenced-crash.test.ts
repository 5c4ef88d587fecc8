// Exactly-once steps on a server that neither orders nor deduplicates by seq_id: the engine run
// with --ignore-seq-id behaves as SkyRL-tx does (a resent request runs again, requests run as they
// arrive, capabilities say nothing), so the worker probes it at create_model, runs the steps one
// at a time (no submit-ahead) and, when a step's activity is retried after its worker was
// SIGKILLed mid-step, restores the last checkpoint instead of resending (activities/unsequenced.ts).
// The run ends with an uninterrupted run's metrics, checkpoints and weights, and the engine's count
// shows each step's forward_backward and optim_step reaching the model that keeps it once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { inFullTier } from '../support/tier.js';
import { lineageProblems, runModels, trainingRequests } from '../support/training-requests.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true, engineArgs: ['--ignore-seq-id'] });
});
afterAll(async () => {
  await stack?.stop();
});


interface Variant {
  label: string;
  overrides: string[];
  /** Steps reached before each kill (the kill lands while a later step's activity runs). */
  killAt: number[];
}

// Gate: one epoch (5 steps), a checkpoint every 2, one kill after the first checkpoint. Fuller tier:
// two epochs, four kills, the first before any checkpoint (the run restarts from scratch).
const variants = inFullTier<Variant>(
  [{ label: 'one kill', overrides: ['num_epochs=1', 'save_every=2'], killAt: [3] }],
  [{ label: 'four kills', overrides: [], killAt: [1, 3, 6, 8] }],
);

for (const { label, overrides, killAt } of variants) describe(`supervised workflow on a server that ignores seq_id (${label})`, () => {
  it('SIGKILLed workers mid-step: restores instead of resending, and equals an uninterrupted run', async () => {
    let worker = await workerProcess(stack, `worker-${label.replace(' ', '-')}`);
    const clean = testRun(stack, config, overrides);
    const cleanResult = await runToEnd(stack, clean);
    const total = cleanResult.steps;

    const crashed = testRun(stack, config, overrides);
    const handle = await startRun(stack.client, crashed, stack.taskQueue);
    let n = 0;
    for (const step of killAt) {
      await waitUntil(`step ${step}`, async () => (await handle.query(progressQuery)).step >= step, 120_000, 50);
      await untilActivityRunning(handle, 'slStep');
      await worker.kill();
      worker = await workerProcess(stack, `worker-${label.replace(' ', '-')}-${++n}`);
    }
    const crashedResult = (await handle.result()) as RunResult;
    await worker.stop();

    // What the run learned of the server, said in its log, and the loop it chose.
    const log = readFileSync(new RunStore(crashed.run.logPath).logFile, 'utf8');
    expect(log).toContain('training server ignores seq_id');
    expect(log).toContain('"source":"probe"');

    expect(crashedResult.status).toBe('completed');
    expect(crashedResult.steps).toBe(total);
    expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1); // a retried step restores (no dedupe to lean on)
    expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
    expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    const [a, b] = await Promise.all([
      weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!),
    ]);
    expect(b).toBe(a);

    const requests = await trainingRequests(stack.engine.baseUrl);
    // The uninterrupted run: one model, one forward_backward and one optim_step per step.
    expect(runModels(clean.run.logPath)).toHaveLength(1);
    expect(lineageProblems(clean.run.logPath, requests, total)).toEqual([]);
    // The crashed one: no model was sent a step twice, the last one every step since its checkpoint.
    expect(runModels(crashed.run.logPath)).toHaveLength(1 + crashedResult.recoveries);
    expect(lineageProblems(crashed.run.logPath, requests, total)).toEqual([]);
  });
});
