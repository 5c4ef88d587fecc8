// The RLHF recipe on the real stack (configs/pipeline_rlhf.json on the tiny model): SFT from base,
// a reward model from base trained on comparisons, RL from the SFT weights graded by the reward
// model's sampler weights. A worker SIGKILLed mid-RL-stage gives exactly the uninterrupted result.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const config = join(import.meta.dirname, '..', '..', 'configs', 'pipeline_rlhf.json');

describe('RLHF pipeline (SFT → reward model → RL)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('runs end to end, and a worker killed mid-RL gives the uninterrupted result', async () => {
    // The reward model trains 4 of its 12 batches: enough to grade (rewards vary within groups),
    // and the gate's time goes to the RL stage the kill is about. The killed worker's rollout is
    // retried once its heartbeat times out: 5 s, not the default 30 s, as in the other kill tests.
    const short = ['stages.1.config.max_steps=4', 'stages.2.config.durability.heartbeat_timeout_s=5'];
    const clean = testRun(stack, config, short, 'pipeline');
    const crashed = testRun(stack, config, short, 'pipeline');
    let worker = await workerProcess(stack, 'rlhf-worker-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as PipelineResult;
      expect(cleanResult.status).toBe('completed');
      expect(cleanResult.stages.map((s) => [s.kind, s.result.status, s.result.steps])).toEqual([
        ['sl', 'completed', 6],
        ['sl', 'completed', 4],
        ['rl', 'completed', 4],
      ]);
      const [sft, rm, rl] = cleanResult.stages;
      const rlConfig = JSON.parse(readFileSync(join(rl.logPath, 'config.json'), 'utf8'));
      // RL starts from the SFT weights and is graded by the reward model's sampler weights.
      expect(rlConfig.load_checkpoint_path).toBe(sft.result.finalCheckpoint!.statePath);
      expect(rlConfig.dataset.preference_model.rm_weights_path).toBe(rm.result.finalCheckpoint!.samplerPath);
      // Both SFT and the reward model start from the base model.
      for (const s of [sft, rm]) expect(JSON.parse(readFileSync(join(s.logPath, 'config.json'), 'utf8')).load_checkpoint_path ?? null).toBeNull();
      // The reward model grades: rewards vary within groups (win−loss and format), so RL trains.
      const rlMetrics = stepRows(metricsOf(rl.logPath));
      expect(rlMetrics.map((r) => r.step)).toEqual([0, 1, 2, 3]);
      expect(rlMetrics.every((r) => typeof r['env/all/win_minus_loss'] === 'number' && typeof r['env/all/format'] === 'number')).toBe(true);
      expect(rlMetrics.some((r) => Number(r['env/all/by_group/frac_mixed']) > 0)).toBe(true);
      // …and RL moved the weights away from the SFT stage's.
      expect(await weightsFingerprint(stack.engine.baseUrl, rl.result.finalCheckpoint!.samplerPath!)).not.toBe(
        await weightsFingerprint(stack.engine.baseUrl, sft.result.finalCheckpoint!.samplerPath!),
      );

      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      const rlId = `${crashed.workflowId}/2-rl`;
      await waitUntil('RL stage at step 2', async () => (await stack.client.workflow.getHandle(rlId).query(progressQuery)).step >= 2, 600_000, 50);
      await untilActivityRunning(stack.client.workflow.getHandle(rlId), 'rlRolloutGroup'); // into step 2's rollouts and reward-model matchups
      await worker.kill();
      worker = await workerProcess(stack, 'rlhf-worker-2');
      const crashedResult = (await handle.result()) as PipelineResult;
      expect(crashedResult.status).toBe('completed');
      crashedResult.stages.forEach((s, i) => {
        expect(metricsOf(s.logPath)).toEqual(metricsOf(cleanResult.stages[i].logPath));
        expect(checkpointsOf(s.logPath)).toEqual(checkpointsOf(cleanResult.stages[i].logPath));
      });
      for (const i of [1, 2]) {
        expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.stages[i].result.finalCheckpoint!.samplerPath!)).toBe(
          await weightsFingerprint(stack.engine.baseUrl, cleanResult.stages[i].result.finalCheckpoint!.samplerPath!),
        );
      }
    } finally {
      await worker.stop();
    }
  }, 1_200_000);
});
