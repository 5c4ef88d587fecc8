// The reference's preference/shorter recipe on the real stack (Temporal dev server, the engine over
// HTTP, the tiny model's tokenizer): groups graded by "shorter is better" tournaments, and a worker
// killed mid-run is replaced with the run ending exactly as an uninterrupted one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'rl_shorter_small.json');
const summaries = (logPath: string, step: number) =>
  readFileSync(join(logPath, `iteration_${String(step).padStart(6, '0')}`, 'train_rollout_summaries.jsonl'), 'utf8');

describe('shorter (pairwise preference RL)', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Activity attempts after the first in the workflow's history: the work the kill interrupted. */
  async function retriedAttempts(workflowId: string): Promise<number> {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length;
  }

  it('rewards are win-minus-loss of length tournaments; a worker killed mid-run leaves the uninterrupted result', async () => {
    const clean = testRun(stack, fixture, [], 'rl');
    const crashed = testRun(stack, fixture, [], 'rl');
    let w = await workerProcess(stack, 'shorter-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 300_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup'); // into step 1's episodes
      await w.kill();
      w = await workerProcess(stack, 'shorter-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(await retriedAttempts(crashed.workflowId)).toBeGreaterThan(0); // the kill landed mid-activity

      const rows = stepRows(metricsOf(clean.run.logPath));
      expect(rows.map((r) => r.step)).toEqual([0, 1, 2]);
      for (const row of rows) {
        // The reference's metric names: the group's win-minus-loss and format, post-update KL.
        expect(row).toHaveProperty('env/all/win_minus_loss');
        expect(row).toHaveProperty('env/all/format');
        expect(row).toHaveProperty(['env/all/ac_tokens_per_turn']);
        expect(row['env/all/total_episodes']).toBe(8); // 2 groups × 4
      }
      expect(rows[0]).toHaveProperty('kl_pre_post_v1'); // compute_post_kl, as the reference's recipe
      // Each group's rewards are tournament results: they sum to −(number without a stop sequence).
      for (const line of summaries(clean.run.logPath, 0).trim().split('\n').map((l) => JSON.parse(l))) {
        expect(line.total_reward).toBeGreaterThanOrEqual(-2);
        expect(line.total_reward).toBeLessThanOrEqual(1);
      }

      // Every row, the closing token totals row (which stepRows leaves out) included.
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      expect(summaries(crashed.run.logPath, 1)).toBe(summaries(clean.run.logPath, 1));
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
    } finally {
      await w.stop();
    }
  });
});
