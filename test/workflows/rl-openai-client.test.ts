// An environment written against an OpenAI client (openai_client_arithmetic, the shipped example)
// trains with the durable RL workflow on the real stack, and a worker killed during its episodes is
// replaced with the run ending as an uninterrupted one does: the episodes ask the policy through the
// adapter, whose samples are seeded from the run's logical position like every other env's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retriedActivities } from '../support/history.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'rl_openai_client_small.json');

describe('RL on an OpenAI-client environment', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });


  it('trains; a worker killed mid-episode is replaced and the run equals an uninterrupted one', async () => {
    const clean = testRun(stack, FIXTURE, [], 'rl');
    const crashed = testRun(stack, FIXTURE, [], 'rl');
    let w = await workerProcess(stack, 'openai-env-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      expect(cleanResult.steps).toBe(2);
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 300_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup');
      await w.kill();
      w = await workerProcess(stack, 'openai-env-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(await retriedActivities(stack.client, crashed.workflowId, 'rlRolloutGroup')).toBeGreaterThan(0);
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      const summaries = (log: string) => readFileSync(join(log, 'iteration_000001', 'train_rollout_summaries.jsonl'), 'utf8');
      expect(summaries(crashed.run.logPath)).toBe(summaries(clean.run.logPath));
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
      // Every episode (2 problems × 2 samples per step) asked the policy twice, the second time with
      // its own first answer in the conversation, even when that answer was cut at max_tokens.
      const rows = metricsOf(clean.run.logPath);
      expect(rows[0]['env/all/total_episodes']).toBe(4);
      expect(rows[0]['env/all/turns_per_episode']).toBe(2);
      for (const line of summaries(clean.run.logPath).trim().split('\n')) {
        const episode = JSON.parse(line) as { steps: Array<{ logs: Record<string, string> }> };
        const logs = episode.steps.at(-1)!.logs;
        expect(logs.question).toMatch(/^\(\d+ \+ \d+\) \* \d+$/);
        expect(typeof logs.first).toBe('string');
      }
    } finally {
      await w.stop();
    }
  });
});
