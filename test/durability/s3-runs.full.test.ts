// Runs with their run store in an S3 bucket (a real SeaweedFS server), fuller tier (the gate has
// s3-run-store.test.ts's supervised run):
// - RL: rollout groups sampled in parallel by two worker processes with no shared folder (each
//   pushes its groups' blobs, the train step on either host pulls them), a worker SIGKILLed in the
//   middle of a step's rollouts; the run equals an uninterrupted local run, its rollouts read back.
// - A sweep: its points (child runs nested under the sweep's prefix) on two hosts, the results table
//   built from the points' metrics in the bucket, equal to a local sweep's; its report from the bucket.
// - Failover: the training engine killed after a checkpoint; the checkpoint's archive, mirrored into
//   the bucket by one host, is what another host imports into the failover engine.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRun, startRun } from '../../src/cli/train.js';
import { startEngine, type Service } from '../../src/cli/services.js';
import { onFreePort } from '../support/free-port.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { mountRun, runDir } from '../../src/cookbook/stores/mirror.js';
import { writeReport } from '../../src/report/report.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { s3ServerForFile, useS3Env, type S3Server } from '../support/s3-server.js';
import { runToEnd, startTestStack, testRun, untilActivityRunning, waitUntil, storeHostWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');

let stack: TestStack;
let s3: S3Server;
let restoreEnv = () => {};
beforeAll(async () => {
  [stack, s3] = await Promise.all([startTestStack(), s3ServerForFile({ buckets: ['rl-runs'] })]);
  restoreEnv = useS3Env(s3);
}, 300_000);
afterAll(async () => {
  restoreEnv();
  await Promise.all([stack?.stop(), s3?.close()]);
});

const hostWorker = (name: string): Promise<Service> => storeHostWorker(stack, s3, name);

describe('RL on S3', { timeout: 900_000 }, () => {
  it('two hosts sample and train one run through the bucket; a killed host changes nothing', async () => {
    const workers = await Promise.all([hostWorker('rl-host-a'), hostWorker('rl-host-b')]);
    try {
      const clean = testRun(stack, config, [], 'rl');
      const id = `rl-s3-${Date.now()}`;
      const onS3 = resolveRun('rl', config, [`log_path=s3://rl-runs/${id}`], { workflowId: id });
      const cleanDone = runToEnd(stack, clean);
      const handle = await startRun(stack.client, onS3, stack.taskQueue);
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2, 300_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup');
      await workers[0].kill();
      workers[0] = await hostWorker('rl-host-c');
      const [result, cleanResult] = [(await handle.result()) as RunResult, await cleanDone];
      expect(result.status).toBe('completed');

      await mountRun(onS3.run.logPath);
      expect(metricsOf(onS3.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(checkpointsOf(onS3.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      expect(timingProblems(onS3.run.logPath, [0, 1, 2, 3, 4, 5], { total: true })).toEqual([]);
      expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!));
      // Every step's rollout record, and every group blob it names, read back from the bucket.
      const store = new RunStore(onS3.run.logPath);
      const records = store.readRolloutRecords();
      expect(records.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]);
      for (const r of records) for (const g of r.groups) expect(store.readBlob(g.ref).length).toBeGreaterThan(0);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});

describe('SL failover on S3', { timeout: 900_000 }, () => {
  const slConfig = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
  it('the engine lost after a checkpoint: another host restores it on the failover engine from the bucket', async () => {
    const engines = await Promise.all(['trainer', 'spare'].map(async (name) => (await onFreePort({ dataDir: join(stack.dir, name) }, startEngine)).service));
    const [trainer, spare] = engines;
    let worker = await hostWorker('fo-host-a');
    try {
      const clean = testRun(stack, slConfig);
      const cleanDone = runToEnd(stack, clean);
      const id = `sl-failover-s3-${Date.now()}`;
      const failover = JSON.stringify({ base_urls: [spare.baseUrl], after_s: 2 });
      const onS3 = resolveRun('sl', slConfig, [`log_path=s3://rl-runs/${id}`, `base_url=${trainer.baseUrl}`, `failover=${failover}`], { workflowId: id });
      const handle = await startRun(stack.client, onS3, stack.taskQueue);
      // The first checkpoint in the bucket, and known to the workflow (a step past it has begun).
      await waitUntil('the first checkpoint in the bucket', async () => {
        await mountRun(onS3.run.logPath);
        const first = new RunStore(onS3.run.logPath).readCheckpoints()[0];
        return first !== undefined && (await handle.query(progressQuery)).step > (first.next_step as number);
      }, 300_000, 200);
      // The host that mirrored the checkpoint goes too: the restore is another host's, from the bucket.
      await Promise.all([trainer.kill(), worker.kill()]);
      worker = await hostWorker('fo-host-b');
      const [result, cleanResult] = [(await handle.result()) as RunResult, await cleanDone];
      expect(result.status).toBe('completed');
      await mountRun(onS3.run.logPath);
      const store = new RunStore(onS3.run.logPath);
      const [moved, ...more] = store.readFailovers();
      expect(more).toEqual([]);
      expect(moved).toMatchObject({ from: trainer.baseUrl, to: spare.baseUrl, checkpoint: store.readCheckpoints()[0].name });
      expect(metricsOf(onS3.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(await weightsFingerprint(spare.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!));
    } finally {
      await Promise.all([worker.stop(), ...engines.map((e) => e.stop().catch(() => undefined))]);
    }
  });
});

describe('a sweep on S3', { timeout: 900_000 }, () => {
  const sweepConfig = join(import.meta.dirname, '..', 'fixtures', 'sweep_small.json');
  it('points on two hosts, results from the bucket equal a local sweep', async () => {
    const workers = await Promise.all([hostWorker('sweep-host-a'), hostWorker('sweep-host-b')]);
    try {
      const clean = testRun(stack, sweepConfig, [], 'sweep');
      const id = `sweep-s3-${Date.now()}`;
      const onS3 = resolveRun('sweep', sweepConfig, [`log_path=s3://rl-runs/${id}`], { workflowId: id });
      const [local, remote] = await Promise.all([runToEnd(stack, clean), runToEnd(stack, onS3)]);
      const values = (r: unknown) => (r as { points: Array<{ name: string; status: string; value: number | null }> }).points.map((p) => [p.name, p.status, p.value]);
      expect(values(remote)).toEqual(values(local));
      expect(values(remote).every(([, , v]) => typeof v === 'number')).toBe(true);
      const rows = (dir: string) => readFileSync(join(dir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).map((r) => [r.name, r.value, r.best]);
      const out = await writeReport([onS3.run.logPath], { out: join(stack.dir, 'sweep-s3.html') });
      expect(rows(runDir(onS3.run.logPath))).toEqual(rows(clean.run.logPath));
      expect(readFileSync(out, 'utf8')).toContain('id="sweep"');
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});
