// Checkpoint TTLs on the real stack: a checkpoints.jsonl row records an `expires_at` never later than
// the engine's, and `cookbook continue` of a run killed right after a short-lived rolling checkpoint
// continues from the newest checkpoint that is still there (the rolling one is deleted by the
// engine and refused as expired), and completes.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, parseTinkerPath } from '../../src/backends/index.js';
import { resolveContinuation } from '../../src/cli/continue.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { setUpdate } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

describe('expiring checkpoints and continue', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('rows carry expires_at ≤ the engine\'s; continue skips the expired rolling row and the continued run completes', async () => {
    const parent = testRun(stack, config, ['num_epochs=2', 'save_every=2', 'rolling_save_every=1', 'rolling_ttl_seconds=1', 'ttl_seconds=86400']);
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      await withWorker(stack, async () => {
        const handle = await startRun(stack.client, parent, stack.taskQueue);
        const rows = () => new RunStore(parent.run.logPath).readCheckpoints();
        // Once a periodic row is there, periodic checkpoints stop (a hot `set`): every later step
        // leaves a rolling row, so the newest row stays a rolling one until the final checkpoint,
        // several steps on, instead of for one step's time (which a loaded machine's polling can miss).
        await waitUntil('a periodic row', async () => rows().some((r) => !r.rolling), 120_000, 50);
        await handle.executeUpdate(setUpdate, { args: [{ save_every: 0 }] });
        await waitUntil('a rolling row after it', async () => rows().at(-1)?.rolling === true, 120_000, 50);
        await handle.terminate('killed after a rolling checkpoint'); // no final checkpoint: the last row is the rolling one
      });
      const rows = new RunStore(parent.run.logPath).readCheckpoints();
      const rolling = rows.at(-1)!;
      expect(rolling).toMatchObject({ rolling: true });
      const periodic = rows.filter((r) => !r.rolling).at(-1)!;
      expect(periodic.name).toMatch(/^0000\d\d$/);

      // The row's expiry is taken before the save is sent: at or before the engine's, and close to it.
      const onEngine = await backend.listCheckpoints(parseTinkerPath(periodic.state_path!).trainingRunId);
      const engineExpiry = Date.parse(onEngine.find((c) => c.tinker_path === periodic.state_path)!.expires_at!);
      const rowExpiry = Date.parse(periodic.expires_at as string);
      expect(rowExpiry).toBeLessThanOrEqual(engineExpiry);
      expect(engineExpiry - rowExpiry).toBeLessThan(60_000);

      // The rolling checkpoint's second has passed: the engine refuses it, naming it and saying why.
      await new Promise((r) => setTimeout(r, 1500));
      await expect(backend.weightsInfo(rolling.state_path!)).rejects.toThrow(/expired/);

      const id = `sl-continued-after-expiry-${Date.now()}`;
      const continued = resolveContinuation(parent.run.logPath, [`log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
      expect(continued.config.load_checkpoint_path).toBe(periodic.state_path);
      expect(continued.config.continue_from).toMatchObject({ name: periodic.name, next_step: periodic.next_step });
      const result = await withWorker(stack, async () => (await (await startRun(stack.client, continued, stack.taskQueue)).result()) as RunResult);
      expect(result.status).toBe('completed');
      expect(result.finalCheckpoint?.statePath).toMatch(/\/weights\/final$/);
    } finally {
      await backend.close();
    }
  }, 600_000);
});
