// SDFT under crashes: a worker SIGKILLed while a teacher pass runs, then an engine restart after a
// checkpoint (the model restored and the steps since replayed). The run ends equal to an
// uninterrupted one (rows, checkpoints, final weights), and the replayed steps read the rollouts
// and teacher passes recorded before the restart instead of sampling them again.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { expectSameTraining } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'sdft_small.json');
const OVERRIDES = ['max_steps=2', 'save_every=1', 'dataset.group_size=1'];

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

/** When each recorded file of `dir` (one folder per step) was last written. */
function writtenAt(dir: string): Array<{ step: string; mtimeMs: number }> {
  return readdirSync(dir)
    .sort()
    .flatMap((step) => readdirSync(join(dir, step)).map((f) => ({ step, mtimeMs: statSync(join(dir, step, f)).mtimeMs })));
}

describe('SDFT under crashes', () => {
  it('a worker killed in a teacher pass, then an engine restart: equal to an uninterrupted run, recorded rollouts and teacher passes not redone', async () => {
    let worker = await workerProcess(stack, 'worker-sdft-clean');
    try {
      const clean = testRun(stack, fixture, OVERRIDES, 'sdft');
      const cleanResult = await runToEnd(stack, clean);

      const crashed = testRun(stack, fixture, OVERRIDES, 'sdft');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await untilActivityRunning(handle, 'sdftTeacherGroup');
      await worker.kill();
      worker = await workerProcess(stack, 'worker-sdft-2');
      // Step 1 training, after its rollouts and teacher passes are recorded: restored from the
      // checkpoint after step 0 (000001), step 1 is replayed.
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 20);
      await untilActivityRunning(handle, 'sdftTrain');
      const restartedAt = Date.now();
      await stack.restartEngine();
      const crashedResult = (await handle.result()) as RunResult;

      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1);
      const end = (r: typeof clean, result: RunResult) => ({ logPath: r.run.logPath, samplerPath: result.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl });
      await expectSameTraining(end(crashed, crashedResult), end(clean, cleanResult));
      // Every step's rollouts and teacher passes were recorded before the restart; the replay of
      // step 1 read them back and wrote none again.
      const store = join(crashed.run.logPath, '.cookbook', 'store');
      for (const kind of ['rollouts', 'sdft_teacher']) {
        const files = writtenAt(join(store, kind));
        expect(files.map((f) => f.step)).toEqual(['iteration_000000', 'iteration_000000', 'iteration_000001', 'iteration_000001']);
        for (const f of files) expect(f.mtimeMs).toBeLessThan(restartedAt);
      }
    } finally {
      await worker.stop();
    }
  }, 300_000);
});
