// #41 item 3 for supervised learning (fuller tier; RL's is in the gate, sampler-pool.test.ts): the
// training engine SIGKILLed after a checkpoint, the pipelined SL run moves to its `failover` engine,
// restores the checkpoint there from the run store's mirror, and ends equal to a run on one engine.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngine, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { onFreePort } from '../support/free-port.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

describe('SL failover', { timeout: 600_000 }, () => {
  let stack: TestStack;
  const engines: Array<Service & { baseUrl: string }> = [];
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.stop().catch(() => undefined)));
    await stack?.stop();
  });

  it('the training engine lost after a checkpoint: the run goes on on the failover engine and ends the same', async () => {
    for (const name of ['trainer', 'spare']) engines.push((await onFreePort({ dataDir: join(stack.dir, name) }, startEngine)).service);
    const [trainer, spare] = engines;
    const { clean, crashed, crashedResult, cleanResult } = await withWorker(stack, async () => {
      const clean = testRun(stack, config);
      const cleanResult = await runToEnd(stack, clean);
      const failover = JSON.stringify({ base_urls: [spare.baseUrl], after_s: 2 });
      const crashed = testRun(stack, config, [`base_url=${trainer.baseUrl}`, `failover=${failover}`]);
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      const store = new RunStore(crashed.run.logPath);
      await waitUntil('the first checkpoint', async () => store.readCheckpoints().length >= 1, 300_000, 50);
      await trainer.kill();
      return { clean, cleanResult, crashed, crashedResult: (await handle.result()) as RunResult };
    });
    const [moved, ...more] = new RunStore(crashed.run.logPath).readFailovers();
    expect(more).toEqual([]);
    // The run went on from the first checkpoint, at the step its row names.
    const first = new RunStore(crashed.run.logPath).readCheckpoints()[0];
    expect(moved).toMatchObject({ from: trainer.baseUrl, to: spare.baseUrl, checkpoint: first.name, step: first.next_step });
    expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
    expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    expect(await weightsFingerprint(spare.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
      await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
    );
  });
});
