// which_shape (configs/rl_which_shape.json) on the real stack: RL whose observations are images —
// the policy (tiny-qwen3-vl in the engine) samples from prompts with an image chunk, the step
// trains on them, the rollouts keep the image, and no image bytes go through Temporal.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { deserializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'rl_which_shape.json');

describe('which_shape RL on a vision model', { timeout: 300_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('samples from image prompts and trains a step; rollouts keep the images, payloads carry none', async () => {
    const run = testRun(stack, CONFIG, ['max_steps=1', 'save_every=0', 'eval_every=0', 'dataset.args.batch_size=2', 'dataset.args.group_size=2'], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const [row] = stepRows(metricsOf(run.run.logPath));
    expect(row['env/all/total_episodes']).toBe(4);
    expect(Number.isFinite(row['env/all/reward/total'] as number)).toBe(true);

    const store = new RunStore(run.run.logPath);
    const [record] = store.readRolloutRecords();
    const group = deserializeTrajectoryGroup(store.readBlob(record.groups[0].ref).toString('utf8'));
    const ob = group.trajectoriesG[0].transitions[0].ob;
    expect(ob.chunks.filter((c) => c.type === 'image').map((c) => c.type === 'image' && c.expected_tokens)).toEqual([4]);

    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(32 * 1024);
  });
});
