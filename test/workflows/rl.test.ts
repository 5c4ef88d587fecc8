// The RL workflow on the real stack: Temporal dev server, engine over HTTP, real tokenizer.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { NO_TOKENS } from '../../src/cookbook/token-usage.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';
import { expectRlTokenTotals, stepRows } from '../support/tokens.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');

// RL steps sample many sequences; on a loaded 2-core machine a run takes a minute or two.
describe('RL workflow', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('sync: samples every group, trains, and writes the reference files', async () => {
    const run = testRun(stack, config, [], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(6);

    const all = metricsOf(run.run.logPath);
    // One row per step, then the reference's closing row of token totals at step end_batch.
    expect(all.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const rows = all.slice(0, -1);
    for (const key of [
      'progress/batch', 'optim/lr', 'progress/done_frac', 'env/all/reward/total', 'env/all/format', 'env/all/correct',
      'env/all/total_episodes', 'env/all/by_group/frac_mixed', 'optim/kl_sample_train_v1', 'optim/kl_sample_train_v2', 'optim/entropy',
    ]) {
      expect(rows[0], key).toHaveProperty(key);
    }
    expect(rows[0]['env/all/total_episodes']).toBe(12); // 3 groups × 4 samples
    expect(rows[5]['progress/done_frac']).toBe(1);
    // Sampling and training logprobs of the same tokens agree: the KL estimate is ~0 on-policy.
    for (const row of rows) expect(Math.abs(row['optim/kl_sample_train_v1'] as number)).toBeLessThan(1e-3);

    // Token accounting as the reference's: the rollouts sampled every action token and prefilled
    // every observation (no prefix-cache hits on this engine); training sent each single-turn
    // trajectory's observation and action but the last token. Nothing was dropped.
    for (const row of rows) {
      const [episodes, ac, ob] = ['total_episodes', 'total_ac_tokens', 'total_ob_tokens'].map((k) => row[`env/all/${k}`] as number);
      expect(row['env/all/total_cached_ob_tokens']).toBe(0);
      expect([row['tokens/sampled'], row['tokens/prefill_cached'], row['tokens/prefill_uncached'], row['tokens/trained']]).toEqual([ac, 0, ob, ob + ac - episodes]);
    }
    const totals = expectRlTokenTotals(all, new RunStore(run.run.logPath).readCheckpoints(), 6);
    expect(totals.discarded).toEqual(NO_TOKENS);
    expect(totals.cumulative.trained).toBe(rows.reduce((n, r) => n + (r['tokens/trained'] as number), 0));
    // The reference's ints are ints: progress/batch, trajectory totals, token counts, loop state.
    const metricsText = readFileSync(join(run.run.logPath, 'metrics.jsonl'), 'utf8');
    for (const key of ['progress/batch', 'env/all/total_episodes', 'env/all/total_cached_ob_tokens', 'tokens/trained', 'tokens/cumulative/sampled', 'tokens/discarded/trained']) {
      expect(metricsText, key).toMatch(new RegExp(`"${key}": \\d+[,}]`));
      expect(metricsText, key).not.toMatch(new RegExp(`"${key}": \\d+\\.`));
    }
    expect(readFileSync(join(run.run.logPath, 'checkpoints.jsonl'), 'utf8')).not.toMatch(/": \d+\.0[,}]/);

    expect(checkpointsOf(run.run.logPath).map(({ name, batch }) => ({ name, batch }))).toEqual([
      { name: '000003', batch: 3 },
      { name: '000006', batch: 6 },
      { name: 'final', batch: 6 },
    ]);
    const summaries = readFileSync(join(run.run.logPath, 'iteration_000002', 'train_rollout_summaries.jsonl'), 'utf8').trim().split('\n');
    expect(summaries).toHaveLength(12);
    expect(summaries[0]).toMatch(/^\{"schema_version": 1, "split": "train", "iteration": 2, "group_idx": 0, "traj_idx": 0,/);
    expect(readdirSync(join(run.run.logPath, '.cookbook', 'store', 'rollouts', 'batch_000002'))).toHaveLength(3);

    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  });

  it('sync: a worker killed mid-batch (and mid-evaluation) is replaced and the run equals an uninterrupted one', async () => {
    // Step 2 also runs a custom sampling evaluator, whose accuracy must come out the same too. Every
    // kind of billed request is counted: constant-reward groups dropped (discarded sampling), the
    // reference-KL and post-update KL scoring.
    const evaluated = ['eval_every=2', 'evaluators=[{"kind":"custom_sampling","name":"probe","file_path":"eval_probe.jsonl","max_tokens":8}]'];
    const billed = ['remove_constant_reward_groups=true', 'kl_penalty_coef=0.1', 'kl_reference_config={"base_model":"tiny-qwen3"}', 'compute_post_kl=true'];
    const clean = testRun(stack, config, [...evaluated, ...billed], 'rl');
    const crashed = testRun(stack, config, [...evaluated, ...billed], 'rl');
    let worker = await workerProcess(stack, 'rl-worker-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2, 120_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup'); // into step 2's rollouts
      await worker.kill();
      worker = await workerProcess(stack, 'rl-worker-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(metricsOf(clean.run.logPath).filter((r) => 'probe/accuracy' in r).map((r) => r.step)).toEqual([0, 2, 4]);
      expectBilledTokens(metricsOf(clean.run.logPath), new RunStore(clean.run.logPath).readCheckpoints());
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      // Timings differ between the runs (metricsOf leaves them out); each step has them once.
      expect(timingProblems(crashed.run.logPath, [0, 1, 2, 3, 4, 5], { total: true })).toEqual([]);
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
    } finally {
      await worker.stop();
    }
  });

  it("async, 0.6.1's schedule through a worker kill and continue-as-new: groups_per_batch × (max_steps_off_policy + 1) rollouts in flight, each builder sampled once and trained once, none past end_batch", async () => {
    // max_steps 5 of 6 dataset batches (3 groups each), 3 groups a step: 15 builders, 6 slots.
    const asyncCfg = 'async_config={"max_steps_off_policy":1,"groups_per_batch":3,"loss_fn":"importance_sampling"}';
    const run = testRun(stack, config, [asyncCfg, 'max_steps=5', 'durability.steps_per_workflow_run=3'], 'rl');
    let worker = await workerProcess(stack, 'rl-async-worker-1');
    try {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup');
      await worker.kill();
      worker = await workerProcess(stack, 'rl-async-worker-2');
      const result = (await handle.result()) as RunResult;
      expect(result).toMatchObject({ status: 'completed', steps: 5 });
    } finally {
      await worker.stop();
    }
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r['training_client/step'])).toEqual([0, 1, 2, 3, 4]);
    expect(rows.map((r) => r['progress/done_frac'])).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    expectAsyncRows(rows);
    // Overlap: some step trained on groups sampled before the previous update.
    expect(rows.some((r) => (r['async/staleness_max'] as number) >= 1)).toBe(true);
    // 5 steps × 3 groups: nothing re-sampled (the kill's rollouts were retried, not relaunched), nothing past end_batch.
    const runs = await rolloutActivities(stack.client, run.workflowId);
    expect(runs.reduce((n, r) => n + r.scheduled, 0)).toBe(15);
    expect(runs[0].maxInFlight).toBe(6);
    expect(Math.max(...runs.map((r) => r.maxInFlight))).toBe(6);
    // Timing as the reference's async loop: the train step's spans, and how long its groups took to sample.
    expect(timingProblems(run.run.logPath, [0, 1, 2, 3, 4], { total: true })).toEqual([]);
    for (const row of new RunStore(run.run.logPath).readMetrics().slice(0, 5)) {
      expect(row['time/sampling_time_min']).toBeLessThanOrEqual(row['time/sampling_time_max'] as number);
      expect(row).toHaveProperty('time/train_step');
    }
    // The last step's weights are sampled by nothing (every rollout done, no eval, no periodic save due):
    // as 0.6.1's SamplingClientReuse, it saves no sampler weights.
    // Steps 0-3 each save the next sampler (step 3 refuses reuse: periodic checkpoint 000003 came
    // just before it). That save is timed in the row as time/save_checkpoint, and at step 3, whose row
    // also times 000003 (a checkpoint between two steps is timed in the row after it), as
    // time/save_checkpoint:count 2: no plain key there, and no save skipped.
    const rowsWithTiming = new RunStore(run.run.logPath).readMetrics().slice(0, 5);
    expect(rowsWithTiming.map((r) => r['time/save_checkpoint:count'] ?? ('time/save_checkpoint' in r ? 1 : 0))).toEqual([1, 1, 1, 2, 0]);
    // The token totals went on through the kill and continue-as-new (every 3 steps).
    expectRlTokenTotals(metricsOf(run.run.logPath), new RunStore(run.run.logPath).readCheckpoints(), 5);
    expect(existsSync(join(run.run.logPath, 'iteration_000004', 'train_rollout_summaries.jsonl'))).toBe(true);
  });
});

/** Every async step trained 3 whole groups, its sampler steps and staleness consistent with each other. */
function expectAsyncRows(rows: Array<Record<string, unknown>>): void {
  for (const row of rows) {
    const step = row.step as number;
    const [min, max, mean] = ['step_min', 'step_max', 'step_mean'].map((k) => row[`sampling_client/${k}`] as number);
    expect(max).toBeLessThanOrEqual(step);
    expect([row['async/staleness_max'], row['async/staleness_min']]).toEqual([step - min, step - max]);
    expect(row['async/staleness_mean']).toBeCloseTo(step - mean, 12);
    expect(row['env/all/total_episodes']).toBe(12);
  }
}

/** Per run of a workflow (continue-as-new), oldest first: rlRolloutGroup activities scheduled, and the most running at once. */
async function rolloutActivities(client: TestStack['client'], workflowId: string): Promise<Array<{ scheduled: number; maxInFlight: number }>> {
  const runs: Array<{ start: number; scheduled: number; maxInFlight: number }> = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const history = await client.workflow.getHandle(workflowId, wf.runId).fetchHistory();
    const rollouts = new Set<string>();
    let [scheduled, inFlight, maxInFlight] = [0, 0, 0];
    for (const e of history.events ?? []) {
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'rlRolloutGroup') {
        rollouts.add(String(e.eventId));
        scheduled += 1;
        maxInFlight = Math.max(maxInFlight, ++inFlight);
      }
      const closed = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (closed && rollouts.has(String(closed.scheduledEventId))) inFlight -= 1;
    }
    runs.push({ start: wf.startTime.getTime(), scheduled, maxInFlight });
  }
  return runs.sort((a, b) => a.start - b.start);
}

/**
 * A sync run's tokens with every kind of billed request: a trained single-turn trajectory sampled
 * its action tokens and prefilled its observation; the reference-KL and the post-update KL
 * scoring each prefilled its whole sequence and sampled one token; training sent the sequence but
 * its last token. Groups dropped for a constant reward went to the discarded totals only.
 */
function expectBilledTokens(all: Array<Record<string, unknown>>, checkpoints: Array<Record<string, unknown>>): void {
  const rows = all.slice(0, -1);
  for (const row of rows) {
    const [episodes, ac, ob] = ['total_episodes', 'total_ac_tokens', 'total_ob_tokens'].map((k) => row[`env/all/${k}`] as number);
    expect(row).toHaveProperty('kl_policy_base');
    expect(row).toHaveProperty('kl_pre_post_v1');
    expect([row['tokens/sampled'], row['tokens/prefill_cached'], row['tokens/prefill_uncached'], row['tokens/trained']]).toEqual([
      ac + 2 * episodes, 0, ob + 2 * (ob + ac), ob + ac - episodes,
    ]);
  }
  const totals = expectRlTokenTotals(all, checkpoints, rows.length);
  // The untrained model mostly earns the same reward in a group: groups were dropped (fewer than the
  // batch's 12 episodes trained), and their sampling counted as discarded.
  expect(rows.some((r) => (r['env/all/total_episodes'] as number) < 12)).toBe(true);
  expect(totals.discarded.sampled).toBeGreaterThan(0);
  expect(totals.discarded.prefill_uncached).toBeGreaterThan(0);
}

// The same async run against an engine that decodes concurrent sample requests in one batch
// (`--continuous-batching`): rollouts of different sampler versions share the engine's decode
// step, and the staleness bound and episode counts hold as on the one-request-at-a-time engine.
// Fuller tier: the engine's continuous batching is the engine suite's (engine/tests/test_batching.py).
if (fullTier) describe('RL on a continuously batching engine', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ engineArgs: ['--continuous-batching'] });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('async: completes, every group sampled in full', async () => {
    const run = testRun(stack, config, ['async_config={"max_steps_off_policy":1,"groups_per_batch":3,"loss_fn":"importance_sampling"}'], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r['training_client/step'])).toEqual([0, 1, 2, 3, 4, 5]);
    for (const row of rows) {
      expect(row['env/all/total_episodes']).toBe(12);
      expect(Number.isFinite(row['env/all/reward/total'])).toBe(true);
    }
    expect(readFileSync(join(stack.dir, 'engine', 'engine.log'), 'utf8')).toContain('continuous batching');
  });
});
