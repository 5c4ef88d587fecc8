// RL parity with cookbook 0.6.1 on the real stack (Temporal dev server, engine over HTTP, real
// tokenizer): the gspo loss, streaming minibatches (several forward_backward per optimizer substep,
// several substeps per step) and num_epochs passes over the dataset, with a worker killed in the
// middle of the second epoch; the crashed run must equal the uninterrupted one.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

// The arithmetic env plus a token-parity reward (test/fixtures/envs/token-parity.ts), so that
// advantages are not all zero; gspo, 2 epochs of 2 batches = 4 steps; each step 2 substeps × 2
// minibatches of 1 group.
const config = join(import.meta.dirname, '..', 'fixtures', 'rl_parity.json');

describe('RL parity: gspo, streaming minibatches, num_epochs', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a worker killed mid-epoch 2 is replaced and the run equals an uninterrupted one', async () => {
    const clean = testRun(stack, config, [], 'rl');
    const crashed = testRun(stack, config, [], 'rl');
    let worker = await workerProcess(stack, 'rl-parity-worker-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      expect(cleanResult.steps).toBe(4);

      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2, 300_000, 50);
      await new Promise((r) => setTimeout(r, 700)); // into step 2's rollouts or its substeps
      await worker.kill();
      worker = await workerProcess(stack, 'rl-parity-worker-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');

      const rows = metricsOf(clean.run.logPath);
      expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3]);
      for (const row of rows) {
        expect(row['env/all/total_episodes']).toBe(16); // every group of the batch trained
        expect(row['sampling_client/step_max']).toBe(row.step);
        expect(row['sampling_client/step_min']).toBe(row.step);
        expect(Number.isFinite(row['optim/kl_sample_train_v1'])).toBe(true);
      }
      expect(rows[3]['progress/done_frac']).toBe(1);
      // Rewards vary within groups, so the steps really move the weights.
      expect(rows.some((r) => (r['env/all/by_group/frac_mixed'] as number) > 0)).toBe(true);
      const [mid, , final] = new RunStore(clean.run.logPath).readCheckpoints();
      expect(await weightsFingerprint(stack.engine.baseUrl, mid.sampler_path!)).not.toBe(await weightsFingerprint(stack.engine.baseUrl, final.sampler_path!));
      // The second epoch samples the same dataset batches again, with fresh seeds.
      const records = new RunStore(clean.run.logPath).readRolloutRecords();
      expect(records.map((r) => r.groups.map((g) => g.batch))).toEqual([[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]]);
      expect(records.map((r) => r.groups.map((g) => g.group))).toEqual(Array(4).fill([0, 1, 2, 3]));

      expect(metricsOf(crashed.run.logPath)).toEqual(rows);
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      expect(checkpointsOf(clean.run.logPath)).toEqual([
        { name: '000002', batch: 2 },
        { name: '000004', batch: 4 },
        { name: 'final', batch: 4 },
      ]);
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
      const hygiene = await checkHistories(stack.client, crashed.workflowId, ['tml-test']);
      expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
    } finally {
      await worker.stop();
    }
  });
});
