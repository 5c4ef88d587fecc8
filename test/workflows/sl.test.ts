// The supervised workflow on the real stack: Temporal dev server, engine over HTTP, real tokenizer.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { lrMultiplier } from '../../src/cookbook/lr-schedule.js';
import { pauseSignal, progressQuery, resumeSignal, setUpdate, stopSignal } from '../../src/workflows/shared/messages.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../../src/workflows/shared/search-attributes.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories, overlappingActivities, PAYLOAD_HARD_CAP } from '../support/history.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('supervised workflow', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('trains: loss falls, files use the reference names, checkpoints name their step', async () => {
    const run = testRun(stack, config);
    const result = await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      return (await handle.result()) as RunResult;
    });
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(10); // 20 train rows / batch 4 = 5 batches × 2 epochs

    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const key of ['epoch', 'progress', 'learning_rate', 'num_sequences', 'num_tokens', 'num_loss_tokens', 'train_mean_nll', 'train_mean_bpb']) {
      expect(rows[0]).toHaveProperty(key);
    }
    expect(rows[0].learning_rate).toBeCloseTo(0.01 * lrMultiplier('linear', 0, 10), 12);
    expect(rows[9].learning_rate).toBeCloseTo(0.01 * lrMultiplier('linear', 9, 10), 12);
    expect(rows[9].progress).toBe(1);
    // Evals run before steps 0, 3, 6, 9 on the pre-step weights.
    expect(rows.filter((r) => 'test/nll' in r).map((r) => r.step)).toEqual([0, 3, 6, 9]);
    const nll = rows.map((r) => r.train_mean_nll as number);
    expect(mean(nll.slice(-3))).toBeLessThan(mean(nll.slice(0, 3)));
    const testNll = rows.filter((r) => 'test/nll' in r).map((r) => r['test/nll'] as number);
    expect(testNll[testNll.length - 1]).toBeLessThan(testNll[0]);

    const ckpts = checkpointsOf(run.run.logPath);
    expect(ckpts.map((c) => c.name)).toEqual(['000004', '000008', 'final']);
    expect(ckpts[0]).toMatchObject({ epoch: 0, batch: 4 });
    expect(ckpts[1]).toMatchObject({ epoch: 1, batch: 3 });
    expect(ckpts[2]).toMatchObject({ epoch: 2, batch: 0 });
    // Token accounting as the reference's: a step trains its batch (tokens/trained = num_tokens) and
    // samples or prefills nothing; the cumulative count is elapsed_tokens after the step, which each
    // checkpoint row records.
    let elapsed = 0;
    for (const row of rows) {
      elapsed += row.num_tokens as number;
      expect(row).toMatchObject({ 'tokens/sampled': 0, 'tokens/prefill_cached': 0, 'tokens/prefill_uncached': 0, 'tokens/trained': row.num_tokens });
      expect(row).toMatchObject({ 'tokens/cumulative/sampled': 0, 'tokens/cumulative/prefill_cached': 0, 'tokens/cumulative/prefill_uncached': 0, 'tokens/cumulative/trained': elapsed });
    }
    expect(ckpts.map((c) => c.elapsed_tokens)).toEqual([4, 8, 9].map((step) => rows[step]['tokens/cumulative/trained']));
    expect(Object.keys(rows[0]).slice(Object.keys(rows[0]).indexOf('train_mean_nll'), Object.keys(rows[0]).indexOf('train_mean_bpb') + 1)).toEqual([
      'train_mean_nll', 'tokens/sampled', 'tokens/prefill_cached', 'tokens/prefill_uncached', 'tokens/trained',
      'tokens/cumulative/sampled', 'tokens/cumulative/prefill_cached', 'tokens/cumulative/prefill_uncached', 'tokens/cumulative/trained', 'train_mean_bpb',
    ]);
    expect(readFileSync(join(run.run.logPath, 'metrics.jsonl'), 'utf8').split('\n')[9]).toContain(`"tokens/cumulative/trained": ${elapsed}, `);
    expect(readFileSync(join(run.run.logPath, 'checkpoints.jsonl'), 'utf8')).not.toMatch(/": \d+\.0[,}]/);
    expect(result.finalCheckpoint?.statePath).toMatch(/^tinker:\/\/.+\/weights\/final$/);
    expect(result.finalCheckpoint?.samplerPath).toMatch(/^tinker:\/\/.+\/sampler_weights\/final$/);

    const savedConfig = readFileSync(join(run.run.logPath, 'config.json'), 'utf8');
    expect(savedConfig).toContain('"learning_rate": 0.01');
    expect(savedConfig).toContain('"model_name": "tiny-qwen3"');
    expect(existsSync(join(run.run.logPath, 'logs.log'))).toBe(true);

    const desc = await stack.client.workflow.getHandle(run.workflowId).describe();
    expect(desc.typedSearchAttributes.get(KindKey)).toBe('sl');
    expect(desc.typedSearchAttributes.get(ModelKey)).toBe('tiny-qwen3');
    expect(desc.typedSearchAttributes.get(StepKey)).toBe(10);
    expect(desc.typedSearchAttributes.get(StatusKey)).toBe('completed');
    expect(((await desc.memo) as { config: { model_name: string } }).config.model_name).toBe('tiny-qwen3');

    // Claim check and secrets: payloads stay far below the cap, the worker's API key is nowhere.
    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
    expect(hygiene.maxPayloadBytes).toBeLessThan(PAYLOAD_HARD_CAP);
    expect(readFileSync(join(run.run.logPath, 'logs.log'), 'utf8')).not.toContain('tml-test');
  });

  it('pipelined steps (submit_ahead 1, the default) equal unpipelined ones; the next step is queued unless an eval or checkpoint comes between', async () => {
    const pipelined = testRun(stack, config);
    const unpipelined = testRun(stack, config, ['submit_ahead=0']);
    const [a, b] = await withWorker(stack, async () => {
      const results: RunResult[] = [];
      for (const run of [pipelined, unpipelined]) results.push((await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
      return results;
    });
    expect(metricsOf(pipelined.run.logPath)).toEqual(metricsOf(unpipelined.run.logPath));
    expect(checkpointsOf(pipelined.run.logPath)).toEqual(checkpointsOf(unpipelined.run.logPath));
    const [fa, fb] = await Promise.all([weightsFingerprint(stack.engine.baseUrl, a.finalCheckpoint!.samplerPath!), weightsFingerprint(stack.engine.baseUrl, b.finalCheckpoint!.samplerPath!)]);
    expect(fa).toBe(fb);
    // Steps 1..9 could go ahead; not before an eval (3, 6, 9) or after a checkpoint (4, 8): 1, 2, 4, 7, 8.
    expect(await overlappingActivities(stack.client, pipelined.workflowId, 'slSubmit', 'slFinish')).toBe(5);
    expect(await overlappingActivities(stack.client, unpipelined.workflowId, 'slSubmit', 'slFinish')).toBe(0);
  });

  it('stop finishes the step, saves a final checkpoint and ends as stopped', async () => {
    const run = testRun(stack, config, ['num_epochs=20']);
    const result = await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2);
      await handle.signal(stopSignal, 'test');
      return (await handle.result()) as RunResult;
    });
    expect(result.status).toBe('stopped');
    expect(result.steps).toBeGreaterThanOrEqual(2);
    expect(result.steps).toBeLessThan(100);
    const ckpts = checkpointsOf(run.run.logPath);
    const final = ckpts[ckpts.length - 1];
    expect(final.name).toBe('final');
    expect(final.stopped_early).toBe(true);
    const last = result.steps - 1;
    expect(final).toMatchObject({ epoch: Math.floor(last / 5), batch: last % 5 });
    expect(metricsOf(run.run.logPath)).toHaveLength(result.steps);
    const desc = await stack.client.workflow.getHandle(run.workflowId).describe();
    expect(desc.typedSearchAttributes.get(StatusKey)).toBe('stopped');
  });

  it('pause holds the run between steps; resume carries on', async () => {
    const run = testRun(stack, config, ['num_epochs=1']);
    const result = await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1);
      await handle.signal(pauseSignal);
      await waitUntil('paused', async () => (await handle.query(progressQuery)).status === 'paused');
      const held = (await handle.query(progressQuery)).step;
      await new Promise((r) => setTimeout(r, 2000));
      expect((await handle.query(progressQuery)).step).toBe(held);
      await handle.signal(resumeSignal);
      return (await handle.result()) as RunResult;
    });
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(5);
  });

  it('set changes the learning rate from the next step and rejects bad values', async () => {
    const run = testRun(stack, config, ['num_epochs=4']);
    const { result, changedAt } = await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      const rejection = (patch: object) => handle.executeUpdate(setUpdate, { args: [patch] }).then(() => '', (err: Error) => String((err.cause as Error)?.message));
      expect(await rejection({ lr_multiplier: -1 })).toMatch(/lr_multiplier must be > 0/);
      expect(await rejection({ learning_rate: 1 })).toMatch(/unknown setting "learning_rate"/);
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2);
      const { settings, fromStep: changedAt } = await handle.executeUpdate(setUpdate, { args: [{ lr_multiplier: 0.5, save_every: 0 }] });
      expect(settings).toEqual({ lr_multiplier: 0.5, eval_every: 3, save_every: 0 });
      return { result: (await handle.result()) as RunResult, changedAt };
    });
    expect(result.status).toBe('completed');
    const rows = metricsOf(run.run.logPath);
    const total = rows.length;
    for (const row of rows) {
      const step = row.step as number;
      const scheduled = 0.01 * lrMultiplier('linear', step, total);
      // Steps started before the update keep their rate; every step from `fromStep` is halved.
      expect(row.learning_rate).toBeCloseTo(step < changedAt ? scheduled : scheduled * 0.5, 12);
    }
    // save_every=0 from then on: no periodic checkpoint after the change.
    const periodic = checkpointsOf(run.run.logPath).filter((c) => c.name !== 'final').map((c) => Number(c.name));
    expect(periodic.every((s) => s < changedAt)).toBe(true);
  });

  it('custom sampling evaluators run before the step, merged ahead of the test NLL, on a sampler snapshot', async () => {
    const run = testRun(stack, config, ['num_epochs=1', 'max_steps=4', 'evaluators=[{"kind":"custom_sampling","name":"probe","file_path":"eval_probe.jsonl","max_tokens":8}]']);
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = metricsOf(run.run.logPath);
    expect(rows.filter((r) => 'probe/accuracy' in r).map((r) => r.step)).toEqual([0, 3]);
    for (const row of rows.filter((r) => 'probe/accuracy' in r)) {
      const keys = Object.keys(row);
      expect(keys.indexOf('probe/accuracy')).toBeLessThan(keys.indexOf('test/nll'));
      const accuracy = row['probe/accuracy'] as number;
      expect(Number.isInteger(accuracy * 8) && accuracy >= 2 / 8 && accuracy <= 6 / 8).toBe(true);
    }
    // The snapshot is sampler weights for the evaluators only, not a checkpoint row.
    expect(checkpointsOf(run.run.logPath).map((c) => c.name)).toEqual(['final']);
  });

  it('continue-as-new carries the run on with the same result', async () => {
    const plain = testRun(stack, config, ['num_epochs=1', 'save_every=2']);
    const chained = testRun(stack, config, ['num_epochs=1', 'save_every=2', 'durability.steps_per_workflow_run=2']);
    const [a, b] = await withWorker(stack, async () => {
      const ha = await startRun(stack.client, plain, stack.taskQueue);
      const ra = (await ha.result()) as RunResult;
      const hb = await startRun(stack.client, chained, stack.taskQueue);
      const rb = (await hb.result()) as RunResult;
      return [ra, rb];
    });
    expect(b.status).toBe('completed');
    expect(b.steps).toBe(a.steps);
    expect(metricsOf(chained.run.logPath)).toEqual(metricsOf(plain.run.logPath));
    expect(checkpointsOf(chained.run.logPath)).toEqual(checkpointsOf(plain.run.logPath));
    // Several workflow runs in the chain, one execution id.
    const stats = await checkHistories(stack.client, chained.workflowId, ['tml-test']);
    expect(stats.runs).toBeGreaterThanOrEqual(2);
    // Bounded: each run's history stays small however long the whole run is.
    const single = await checkHistories(stack.client, plain.workflowId, []);
    expect(stats.maxEvents).toBeLessThan(single.maxEvents);
  });
});
