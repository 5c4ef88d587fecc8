// A run whose log_path is in an S3 bucket (a real SeaweedFS server), trained by worker processes
// that share no folder: each keeps its own mirror (COOKBOOK_STORE_CACHE) and sees the others' writes
// only through the bucket. The store goes away for a minute mid-run and a worker is SIGKILLed mid-
// step; the run waits, goes on, and ends equal to an uninterrupted local run, its report rendered
// from the bucket.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRun, startRun } from '../../src/cli/train.js';
import { writeReport } from '../../src/report/report.js';
import { S3Storage } from '../../src/cookbook/stores/s3.js';
import { mountRun } from '../../src/cookbook/stores/mirror.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { startS3Server, useS3Env, type S3Server } from '../support/s3-server.js';
import { runToEnd, startTestStack, testRun, waitUntil, storeHostWorker, type TestStack } from '../support/stack.js';
import type { Service } from '../../src/cli/services.js';
import { cookbookOn } from '../support/cli.js';
import { waitingOn } from '../../src/cli/liveness.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
/**
 * How long the store is away mid-run: several times the run's heartbeat timeout (sl_small.json's
 * 4 s), so the activity must keep heartbeating while it waits instead of being timed out and
 * retried. The fuller tier holds it away a minute, an outage a restarted store can take.
 */
const OUTAGE_MS = fullTier ? 60_000 : 15_000;

let stack: TestStack;
let s3: S3Server;
let restoreEnv = () => {};
beforeAll(async () => {
  [stack, s3] = await Promise.all([startTestStack(), startS3Server({ buckets: ['runs'] })]);
  // This process plays the CLI host: `train` checks the bucket, `report` reads the run from it.
  restoreEnv = useS3Env(s3);
}, 300_000);
afterAll(async () => {
  restoreEnv();
  await Promise.all([stack?.stop(), s3?.close()]);
});

/** The run the first test trains on S3; the CLI test continues it. */
let s3Run = '';

const hostWorker = (name: string): Promise<Service> => storeHostWorker(stack, s3, name);

describe('a run on S3, workers without a shared folder', () => {
  it('survives a store outage and a killed worker, and equals a local run', async () => {
    const workers = await Promise.all([hostWorker('host-a'), hostWorker('host-b')]);
    s3Run = `s3://runs/team/sl-s3-${Date.now()}`;
    const clean = testRun(stack, config);
    const id = s3Run.split('/').at(-1)!;
    const onS3 = resolveRun('sl', config, [`log_path=${s3Run}`], { workflowId: id });
    expect(onS3.run.logPath).toBe(s3Run);

    // The local baseline trains beside it, on the same workers.
    const cleanDone = runToEnd(stack, clean);
    const handle = await startRun(stack.client, onS3, stack.taskQueue);

    await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2, 120_000, 50);
    await s3.stop();
    const down = Date.now();
    // Nothing is lost while the store is away: the run does not get ahead of what it could write.
    const stepWhenDown = (await handle.query(progressQuery)).step;
    // What `cookbook status`/`watch` print: the activity says it waits for the store.
    let said: string[] = [];
    await waitUntil('the wait for the store in a heartbeat', async () => {
      said = waitingOn((await handle.describe()).raw.pendingActivities ?? []);
      return said.some((l) => l.includes('run store unavailable, waiting'));
    }, 60_000, 500);
    expect(said.join('\n')).toContain(onS3.run.logPath.split('/')[2]); // names the bucket
    await new Promise((r) => setTimeout(r, OUTAGE_MS - (Date.now() - down))); // the rest of the outage: its length, not a wait for an event
    expect((await handle.query(progressQuery)).step).toBeLessThanOrEqual(stepWhenDown + 1);
    await s3.start();
    expect(Date.now() - down).toBeGreaterThanOrEqual(OUTAGE_MS);

    const killAt = stepWhenDown + 3;
    await waitUntil(`step ${killAt}`, async () => (await handle.query(progressQuery)).step >= killAt, 180_000, 50);
    await workers[0].kill();
    workers[0] = await hostWorker('host-c');
    const [result, cleanResult] = [(await handle.result()) as RunResult, await cleanDone];
    await Promise.all(workers.map((w) => w.stop()));

    expect(result.status).toBe('completed');
    expect(result.steps).toBe(cleanResult.steps);
    // The bucket holds the run in the reference's layout.
    const keys = (await new S3Storage(onS3.run.logPath).list('')).map((o) => o.path);
    expect(keys).toEqual(expect.arrayContaining(['config.json', 'metrics.jsonl', 'checkpoints.jsonl', 'timing_spans.jsonl', 'logs.log', '.cookbook/run.json']));
    // Read back on a third host (this process's own mirror), equal to the local run.
    const reportPath = await writeReport([onS3.run.logPath], { out: join(stack.dir, 's3-report.html') });
    expect(metricsOf(onS3.run.logPath)).toEqual(metricsOf(clean.run.logPath));
    expect(checkpointsOf(onS3.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    expect(timingProblems(onS3.run.logPath, Array.from({ length: result.steps }, (_, i) => i), { total: false })).toEqual([]);
    const [a, b] = await Promise.all([weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!), weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)]);
    expect(b).toBe(a);
    // Its report renders from the store: the curves of every step.
    const html = readFileSync(reportPath, 'utf8');
    expect(html).toContain(id);
    expect(html).toContain('train_mean_nll');
  }, 600_000);

  it('the CLI: a missing bucket or wrong credentials is one line before anything starts; `continue` and `report` work from the store', async () => {
    const missing = await cookbookOn(stack, ['train', 'sl', config, 'log_path=s3://no-such-bucket/x']);
    expect(missing.code).not.toBe(0);
    expect(missing.err.trim().split('\n')).toEqual([expect.stringMatching(/^error: log_path: s3:\/\/no-such-bucket\/x: the bucket no-such-bucket does not exist/)]);
    const denied = await cookbookOn(stack, ['train', 'sl', config, 'log_path=s3://runs/team/denied'], { AWS_SECRET_ACCESS_KEY: 'not-the-secret' });
    expect(denied.code).not.toBe(0);
    expect(denied.err.trim().split('\n')).toEqual([expect.stringMatching(/^error: log_path: s3:\/\/runs\/team\/denied: access denied/)]);
    expect(await new S3Storage('s3://runs/team/denied').list('')).toEqual([]);

    expect(s3Run).not.toBe(''); // the first test's run
    const worker = await hostWorker('host-d');
    try {
      const continued = await cookbookOn(stack, ['continue', s3Run, 'num_epochs=3', `log_path=${s3Run}-continued`, '--wait']);
      expect(continued.code, continued.err).toBe(0);
      expect(continued.out).toContain(`log dir  ${s3Run}-continued`);
      await mountRun(`${s3Run}-continued`);
      const rows = metricsOf(`${s3Run}-continued`);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows[0].step).toBe(metricsOf(s3Run).at(-1)!.step as number + 1);
    } finally {
      await worker.stop();
    }
    const report = await cookbookOn(stack, ['report', `${s3Run}-continued`, '--out', join(stack.dir, 'continued.html')]);
    expect(report.code, report.err).toBe(0);
    expect(readFileSync(join(stack.dir, 'continued.html'), 'utf8')).toContain('train_mean_nll');
  }, 300_000);
});
