// Rolling resume-only checkpoints (the reference's rolling_save_every / rolling_ttl_seconds) and
// checkpoint TTLs on the real stack: rows and names, the superseded rolling checkpoint deleted on
// the engine (the last one after the final save), TTLs as the engine recorded them, and an engine
// restart recovering from the newest rolling checkpoint with the result of an uninterrupted run.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, parseTinkerPath } from '../../src/backends/index.js';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
const HOUR = 3600_000;

describe('rolling checkpoints', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ own: true });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('are saved between periodic ones with their TTL, the previous deleted, the last one after the final save', async () => {
    const run = testRun(stack, config, ['num_epochs=1', 'rolling_save_every=1', 'rolling_ttl_seconds=7200', 'ttl_seconds=86400']);
    const startedAt = Date.now();
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    // After steps 0-3 (rolling), after step 4 a periodic save falls (save_every 4): no rolling one there.
    const rows = checkpointsOf(run.run.logPath);
    expect(rows.map((r) => r.name)).toEqual(['rolling_000001', 'rolling_000002', 'rolling_000003', 'rolling_000004', '000004', 'final']);
    expect(rows.slice(0, 4).every((r) => r.rolling === true)).toBe(true);

    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      const onEngine = await backend.listCheckpoints(parseTinkerPath(result.finalCheckpoint!.statePath).trainingRunId);
      const ids = onEngine.map((c) => c.checkpoint_id).sort();
      // Rolling ones are state only, and all deleted by now; the periodic and final ones remain.
      expect(ids).toEqual(['sampler_weights/000004', 'sampler_weights/final', 'weights/000004', 'weights/final']);
      const expiry = (id: string) => onEngine.find((c) => c.checkpoint_id === id)!.expires_at;
      expect(expiry('weights/final')).toBeNull();
      const periodic = Date.parse(expiry('weights/000004')!) - startedAt;
      expect(periodic).toBeGreaterThan(23 * HOUR);
      expect(periodic).toBeLessThan(25 * HOUR);
    } finally {
      await backend.close();
    }
  }, 600_000);

  it('an engine restart restores the newest rolling checkpoint and the run equals an uninterrupted one', async () => {
    const clean = testRun(stack, config, ['save_every=0']);
    const rolling = testRun(stack, config, ['save_every=0', 'rolling_save_every=2']);
    const worker = await workerProcess(stack, 'worker-rolling');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, rolling, stack.taskQueue);
      await waitUntil('step 5', async () => (await handle.query(progressQuery)).step >= 5, 120_000, 50);
      await stack.restartEngine();
      const result = (await handle.result()) as RunResult;
      expect(result.status).toBe('completed');
      expect(result.recoveries).toBeGreaterThanOrEqual(1);
      expect(metricsOf(rolling.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
      // Without periodic saves, only a rolling checkpoint could have been restored (not step 0).
      const log = await (await import('node:fs/promises')).readFile(join(rolling.run.logPath, 'logs.log'), 'utf8');
      expect(log).toMatch(/"statePath":"tinker:\/\/[^"]+\/weights\/rolling_0000\d\d"[^\n]*model restored from checkpoint/);
    } finally {
      await worker.stop();
    }
  }, 600_000);
});
