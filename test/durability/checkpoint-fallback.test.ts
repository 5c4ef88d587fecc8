// Recovery from a damaged checkpoint on the real stack: the engine is killed after the checkpoint
// of step 8 was committed, and that checkpoint's weights file is damaged on disk before it comes
// back. The restore of 000008 is refused (CheckpointDamaged, naming the file), the workflow falls
// back to the checkpoint before it (000004), replays from there, and ends exactly as an
// uninterrupted run: same metrics, checkpoints and final weights. Likewise when the newest
// checkpoint is a short-lived rolling one whose TTL ran out while the engine was down: the engine
// deleted it, the restore is refused as expired, and the run falls back to the periodic one.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTinkerPath } from '../../src/backends/index.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { flipBit } from '../support/damage.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
const overrides = ['num_epochs=3']; // 15 steps, checkpoints after steps 4, 8 and 12

type Ran = { run: ReturnType<typeof testRun>; result: RunResult };

/** Completed after a recovery, with the uninterrupted run's metrics, checkpoints and final weights. */
async function expectRecoveredAsClean(stack: TestStack, clean: Ran, crashed: Ran): Promise<void> {
  expect(crashed.result.status).toBe('completed');
  expect(crashed.result.recoveries).toBeGreaterThanOrEqual(1);
  expect(metricsOf(crashed.run.run.logPath)).toEqual(metricsOf(clean.run.run.logPath));
  expect(checkpointsOf(crashed.run.run.logPath)).toEqual(checkpointsOf(clean.run.run.logPath));
  const [a, b] = await Promise.all([
    weightsFingerprint(stack.engine.baseUrl, clean.result.finalCheckpoint!.samplerPath!),
    weightsFingerprint(stack.engine.baseUrl, crashed.result.finalCheckpoint!.samplerPath!),
  ]);
  expect(b).toBe(a);
}

describe('a damaged checkpoint at recovery', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ own: true });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('falls back to the checkpoint before it and ends as an uninterrupted run', async () => {
    const clean = testRun(stack, config, overrides);
    const crashed = testRun(stack, config, overrides);
    const [cleanResult, crashedResult] = await withWorker(stack, async () => {
      const a = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      let statePath = '';
      await waitUntil('checkpoint 000008', async () => {
        const p = await handle.query(progressQuery);
        statePath = p.lastCheckpoint?.name === '000008' ? p.lastCheckpoint.statePath : '';
        return statePath !== '';
      }, 120_000, 50);
      await stack.engine.kill();
      const { trainingRunId } = parseTinkerPath(statePath);
      flipBit(join(stack.dir, 'engine', 'runs', trainingRunId, 'weights', '000008', 'adapter_model.safetensors'));
      await stack.restartEngine();
      return [a, (await handle.result()) as RunResult];
    });

    await expectRecoveredAsClean(stack, { run: clean, result: cleanResult }, { run: crashed, result: crashedResult });
    // The run's log names the refused checkpoint file.
    const history = JSON.stringify(await stack.client.workflow.getHandle(crashed.workflowId).fetchHistory());
    expect(history).toContain('CheckpointDamaged');
    expect(history).toContain('adapter_model.safetensors');
  });

  it('falls back past a rolling checkpoint that expired while the engine was down', async () => {
    const rollingOverrides = [...overrides, 'rolling_save_every=3', 'rolling_ttl_seconds=2'];
    const clean = testRun(stack, config, rollingOverrides);
    const crashed = testRun(stack, config, rollingOverrides);
    let rollingName = '';
    const [cleanResult, crashedResult] = await withWorker(stack, async () => {
      const a = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      // Rolling saves every 3 steps where no periodic one is due: wait for one after the periodic 000008.
      await waitUntil('a rolling checkpoint after 000008', async () => {
        const p = await handle.query(progressQuery);
        rollingName = p.lastCheckpoint?.name.startsWith('rolling_') && p.step > 9 ? p.lastCheckpoint.name : '';
        return rollingName !== '';
      }, 120_000, 50);
      await stack.engine.kill();
      await new Promise((r) => setTimeout(r, 2_500)); // its two seconds run out while the engine is down
      await stack.restartEngine();
      return [a, (await handle.result()) as RunResult];
    });

    await expectRecoveredAsClean(stack, { run: clean, result: cleanResult }, { run: crashed, result: crashedResult });
    const history = JSON.stringify(await stack.client.workflow.getHandle(crashed.workflowId).fetchHistory());
    expect(history).toContain('CheckpointExpired');
    expect(history).toContain(rollingName);
  }, 600_000);
});
