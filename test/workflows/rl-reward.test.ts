// RL raises the reward: a briefly fine-tuned tiny-qwen3 ends its arithmetic answers with the stop
// token only about half the time (format reward −0.1 otherwise); a few RL steps on the arithmetic
// env make it end them every time. (Two-digit addition itself is beyond this tiny model, so
// `correct` stays 0; the rise is the format term.) Every seed is derived from the run seed, so the
// run is deterministic for a given machine and thread count.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');

describe('RL after a short SFT', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the reward rises', async () => {
    const rows = await withWorker(stack, async () => {
      const sft = testRun(stack, join(fixtures, 'rl_warmup_sft.json'));
      const warm = (await (await startRun(stack.client, sft, stack.taskQueue)).result()) as RunResult;
      const rl = testRun(stack, join(fixtures, 'rl_reward.json'), [`load_checkpoint_path=${warm.finalCheckpoint!.statePath}`], 'rl');
      await (await startRun(stack.client, rl, stack.taskQueue)).result();
      return stepRows(metricsOf(rl.run.logPath));
    });
    const reward = rows.map((r) => r['env/all/reward/total'] as number);
    const format = rows.map((r) => r['env/all/format'] as number);
    expect(rows).toHaveLength(3);
    expect(format[0]).toBeLessThan(0.9); // the warm-up left room to improve
    expect(format[format.length - 1]).toBeGreaterThan(format[0]);
    expect(reward[reward.length - 1]).toBeGreaterThan(reward[0]);
  });
});
