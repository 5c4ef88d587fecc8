// A flaky network between the worker and its backend (DESIGN §3.1 under transport faults): a
// fault-injecting proxy delays, stalls, resets and truncates the worker's traffic to the engine at
// seeded moments. Retries resend the same sequence ids, so every run must end exactly as an
// uninterrupted one: same metrics, checkpoints and final weights. A backend that stays unreachable
// shows as a reason in `cookbook status` while the run waits, and the run goes on when it is back.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStatus } from '../../src/cli/runs.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

describe('a flaky network between worker and backend', { timeout: 600_000 }, () => {
  let stack: TestStack;
  let proxy: FaultProxy;
  let baseline: { metrics: unknown; checkpoints: unknown; fingerprint: string };
  beforeAll(async () => {
    stack = await startTestStack();
    proxy = await FaultProxy.start(stack.engine.baseUrl);
    const run = testRun(stack, config);
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    baseline = {
      metrics: metricsOf(run.run.logPath),
      checkpoints: checkpointsOf(run.run.logPath),
      fingerprint: await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!),
    };
  });
  afterAll(async () => {
    await proxy?.stop();
    await stack?.stop();
  });

  async function expectBaseline(run: ReturnType<typeof testRun>, result: RunResult): Promise<void> {
    expect(result.status).toBe('completed');
    expect(result.recoveries).toBe(0); // the engine kept the model: retries were deduplicated, nothing restored
    expect(metricsOf(run.run.logPath)).toEqual(baseline.metrics);
    expect(checkpointsOf(run.run.logPath)).toEqual(baseline.checkpoints);
    expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(baseline.fingerprint);
  }

  it('latency, stalls, resets mid-request and mid-response, and truncated responses leave the result of a clean run', async () => {
    proxy.setFaults({ probability: 0.12, seed: 5, kinds: ['latency', 'stall', 'reset-request', 'reset-response', 'truncate-response'], latencyMs: 150, stallMs: 2500 });
    try {
      const run = testRun(stack, config);
      const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult, { tinkerBaseUrl: proxy.url });
      await expectBaseline(run, result);
    } finally {
      proxy.setFaults(undefined);
    }
    // The faults really happened, of every kind.
    for (const kind of ['latency', 'stall', 'reset-request', 'reset-response', 'truncate-response'] as const) expect(proxy.counts[kind], kind).toBeGreaterThan(0);
  });

  it('an unreachable backend shows as a reason in `cookbook status`; the run goes on when it is back', async () => {
    const run = testRun(stack, config);
    const result = await withWorker(
      stack,
      async () => {
        const handle = await startRun(stack.client, run, stack.taskQueue);
        await waitUntil('step 3', async () => (await handle.query(progressQuery)).step >= 3, 120_000, 50);
        proxy.setDown(true);
        let status = '';
        try {
          await waitUntil('status names the backend', async () => /backend unavailable: .*connection/i.test((status = await runStatus(stack.client, run.workflowId))), 60_000, 500);
        } finally {
          proxy.setDown(false);
        }
        console.info(`cookbook status while the backend was down:\n${status}`);
        expect(status).toMatch(/waiting: \w+ attempt \d+/);
        return (await handle.result()) as RunResult;
      },
      { tinkerBaseUrl: proxy.url },
    );
    expect(proxy.counts.refused).toBeGreaterThan(0);
    await expectBaseline(run, result);
  });
});
