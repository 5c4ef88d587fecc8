// SDFT's reverse-KL mode (`reverse: true`) on the real stack: the teacher's top-K datums trained
// through the client-side custom loss (forward on the (N, K) targets, then forward_backward with the
// loss's gradient as weights); its metrics beside the top-K ones, and the weights move.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'sdft_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

describe('SDFT reverse KL', () => {
  it('trains through the custom loss: sdft/reverse_kl_* metrics, positions counted, weights changed', async () => {
    const run = testRun(stack, fixture, ['reverse=true', 'save_every=0'], 'sdft');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    for (const r of rows) {
      expect(r['sdft/total_completion_positions']).toBeGreaterThan(0);
      expect(r['sdft/reverse_kl_positions']).toBe(r['sdft/total_completion_positions']);
      // A KL over renormalised distributions is ≥ 0; the student's entropy over K = 4 is ≤ ln 4.
      expect(r['sdft/reverse_kl_mean']).toBeGreaterThanOrEqual(0);
      expect(r['sdft/student_entropy_mean']).toBeLessThanOrEqual(Math.log(4) + 1e-6);
      expect(r).not.toHaveProperty('sdft/total_completion_tokens');
    }
    const base = await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!.replace(/\/final$/, '/sampler_000000'));
    const trained = await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!);
    expect(trained).not.toBe(base);
  }, 300_000);
});
