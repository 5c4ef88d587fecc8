// Experiment tracking from the worker on the real stack: a run with `wandb_project` is mirrored to
// W&B (a local fake of its HTTP API, from worker processes that get WANDB_API_KEY) with each
// metrics row exactly once although its worker is SIGKILLed and the engine restarts (the run
// restores a checkpoint and replays steps); and to a W&B offline run directory with WANDB_MODE=offline.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { wandbRunId } from '../../src/cookbook/tracking/wandb-format.js';
import { OfflineWandbRun } from '../../src/cookbook/tracking/wandb-offline.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startFakeWandb, type FakeWandb } from '../support/fake-wandb.js';
import { itemsOf, readWandbStream, wandbSyncView } from '../support/wandb-reader.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
const KEY = 'wandb-test-key-0123456789';
const withoutTimings = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('time/')));

describe('experiment tracking of a training run', () => {
  let stack: TestStack;
  let wandb: FakeWandb;
  beforeAll(async () => {
    [stack, wandb] = await Promise.all([startTestStack({ own: true }), startFakeWandb(KEY)]);
  });
  afterAll(async () => {
    await Promise.all([stack?.stop(), wandb?.close()]);
  });

  const worker = (name: string) =>
    startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: join(stack.dir, `${name}.log`),
      env: { TINKER_API_KEY: 'tml-test', WANDB_API_KEY: KEY, WANDB_BASE_URL: wandb.baseUrl },
    });

  it('online: config, every metrics row once and the final checkpoint reach W&B through a worker kill and an engine restart', async () => {
    const run = testRun(stack, config, ['wandb_project=cookbook-tests', 'wandb_name=sl-small']);
    let w = await worker('tracking-1');
    try {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('step 3', async () => (await handle.query(progressQuery)).step >= 3, 120_000, 50);
      await w.kill();
      w = await worker('tracking-2');
      // After the checkpoint of step 4: steps 5.. are replayed from it, their rows rewritten.
      await waitUntil('step 6', async () => (await handle.query(progressQuery)).step >= 6, 120_000, 50);
      await stack.restartEngine();
      const result = (await handle.result()) as RunResult;
      expect(result.status).toBe('completed');
      expect(result.recoveries).toBeGreaterThanOrEqual(1);
    } finally {
      await w.stop();
    }
    const tracked = wandb.runs.get(wandbRunId(run.workflowId))!;
    const rows = new RunStore(run.run.logPath).readMetrics();
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(tracked.history.map((l) => withoutTimings(JSON.parse(l)))).toEqual(rows.map((r) => withoutTimings({ ...r, _step: r.step })));
    expect(tracked.config?.learning_rate).toEqual({ desc: null, value: 0.01 });
    expect(tracked.displayName).toBe('sl-small');
    expect(tracked.complete).toBe(true);
    expect(tracked.summary).toMatchObject({ _step: 9, 'final_checkpoint/name': 'final' });
    // The final checkpoint is the run's "model" artifact, committed once, its checkpoints.jsonl uploaded.
    const artifacts = [...wandb.artifacts.values()].filter((a) => a.runName === wandbRunId(run.workflowId));
    expect(artifacts.map((a) => [a.type, a.collection, a.state, a.commits])).toEqual([['model', `model-${wandbRunId(run.workflowId)}`, 'COMMITTED', 1]]);
    const checkpoints = new RunStore(run.run.logPath).readCheckpoints();
    expect(artifacts[0].files['checkpoints.jsonl']).toBe(checkpoints.map((r) => `${JSON.stringify(r)}\n`).join(''));
    expect(JSON.parse(artifacts[0].files['wandb_manifest.json']).contents.state_path.ref).toBe(checkpoints.at(-1)!.state_path);
    expect(wandb.rejected).toEqual([]);
  }, 600_000);

  it('offline (WANDB_MODE=offline): the run directory holds a W&B offline run with every row once', async () => {
    const run = testRun(stack, config, ['wandb_project=cookbook-tests', 'num_epochs=1']);
    const saved = process.env.WANDB_MODE;
    process.env.WANDB_MODE = 'offline';
    try {
      await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result());
    } finally {
      if (saved === undefined) delete process.env.WANDB_MODE;
      else process.env.WANDB_MODE = saved;
    }
    const [dir] = readdirSync(join(run.run.logPath, 'wandb'));
    expect(dir).toMatch(new RegExp(`^offline-run-\\d{8}_\\d{6}-${wandbRunId(run.workflowId)}$`));
    const offline = new OfflineWandbRun({ workflowId: run.workflowId, logPath: run.run.logPath, project: 'cookbook-tests', name: null, config: {} });
    const rows = new RunStore(run.run.logPath).readMetrics();
    expect(offline.readHistory()).toEqual(rows.map((r) => ({ ...r, _step: r.step })));
    expect(offline.readSummary()).toMatchObject({ _step: 4, 'final_checkpoint/name': 'final' });

    // What `wandb sync` replays, read by wandb itself: the config, each row once, summary, model artifact.
    const records = await readWandbStream(join(offline.location, `run-${wandbRunId(run.workflowId)}.wandb`));
    expect(itemsOf(records[0].body.config.update)).toEqual(new RunStore(run.run.logPath).read().config);
    expect(records.filter((r) => r.type === 'history').map((r) => itemsOf(r.body.item))).toEqual(rows.map((r) => ({ ...r, _step: r.step })));
    expect(itemsOf(records.filter((r) => r.type === 'summary').at(-1)!.body.update)).toEqual(offline.readSummary());
    expect(records.filter((r) => r.type === 'artifact').map((r) => r.body.type)).toEqual(['model']);
    expect(records.slice(-2).map((r) => r.type)).toEqual(['exit', 'final']);
    expect((await wandbSyncView(offline.location)).code).toBe(0);
  }, 600_000);
});
