// Sweeps on the real stack: four tiny SL points (2 learning rates × 2 LoRA ranks), two at a time,
// as child workflows of one parent that continues as new after every two points. A worker
// SIGKILLed mid-sweep (points running, one finished) leaves exactly the results of an uninterrupted
// sweep: the same table, metrics, checkpoints and final weights for every point, no point run
// twice. Pause holds the running points and starts none; stop ends them with final checkpoints.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import { writeReport } from '../../src/report/report.js';
import { pauseSignal, progressQuery, resumeSignal, stopSignal, type Progress } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import type { SweepProgress, SweepResult } from '../../src/workflows/sweep.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sweep_small.json');

/** Everything a point left behind that two equal sweeps share (paths and timings excluded). */
async function observe(stack: TestStack, result: SweepResult) {
  return Promise.all(
    result.points.map(async (p) => {
      const logPath = join(result.logPath, p.name);
      const child = (await stack.client.workflow.getHandle(p.workflowId).result()) as RunResult;
      return {
        name: p.name,
        status: p.status,
        steps: p.steps,
        value: p.value,
        metrics: metricsOf(logPath),
        checkpoints: checkpointsOf(logPath),
        fingerprint: await weightsFingerprint(stack.engine.baseUrl, child.finalCheckpoint!.samplerPath!),
      };
    }),
  );
}

const pointProgress = (stack: TestStack, id: string) => stack.client.workflow.getHandle(id).query(progressQuery) as Promise<Progress>;

// Real training on a shared 2-core machine: minutes, not the default two.
describe('sweep workflow', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a worker killed mid-sweep leaves the results of an uninterrupted sweep; ≤2 points at once; continue-as-new keeps the table', async () => {
    const clean = testRun(stack, config, [], 'sweep');
    const crashed = testRun(stack, config, [], 'sweep');
    let worker = await workerProcess(stack, 'sweep-worker-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as SweepResult;

      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      let maxRunning = 0;
      await waitUntil(
        'one point finished while others run',
        async () => {
          const p = (await handle.query(progressQuery)) as SweepProgress;
          const running = p.points.filter((r) => r.status === 'running');
          maxRunning = Math.max(maxRunning, running.length);
          if (p.step < 1 || running.length === 0) return false;
          return (await pointProgress(stack, running[0].workflowId)).step >= 1;
        },
        240_000,
        50,
      );
      await worker.kill();
      worker = await workerProcess(stack, 'sweep-worker-2');
      const poll = setInterval(() => {
        handle.query(progressQuery).then((p) => (maxRunning = Math.max(maxRunning, (p as SweepProgress).points.filter((r) => r.status === 'running').length)), () => undefined);
      }, 100);
      const crashedResult = (await handle.result()) as SweepResult;
      clearInterval(poll);

      expect(cleanResult.status).toBe('completed');
      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.points.map((p) => [p.name, p.status, p.steps])).toEqual([
        ['000-learning_rate=0.01_lora_rank=4', 'completed', 4],
        ['001-learning_rate=0.01_lora_rank=8', 'completed', 4],
        ['002-learning_rate=0.03_lora_rank=4', 'completed', 4],
        ['003-learning_rate=0.03_lora_rank=8', 'completed', 4],
      ]);
      const [a, b] = [await observe(stack, cleanResult), await observe(stack, crashedResult)];
      expect(b).toEqual(a);
      // Each point trained each step exactly once, and the ranking metric is its last logged test/nll.
      for (const p of b) {
        expect(p.metrics.map((r) => r.step)).toEqual([0, 1, 2, 3]);
        expect(p.value).toBe(p.metrics.filter((r) => typeof r['test/nll'] === 'number').at(-1)!['test/nll']);
      }
      expect(crashedResult.best).toBe(cleanResult.best);
      const best = crashedResult.points.filter((p) => p.value !== null).sort((x, y) => x.value! - y.value!)[0];
      expect(crashedResult.best).toBe(best.index);
      expect(crashedResult.lastMetrics).toEqual({ 'test/nll': best.value });
      expect(maxRunning).toBeLessThanOrEqual(2);

      // Four points, two per workflow run: the sweep continued as new, its table carried across.
      const desc = await stack.client.workflow.getHandle(crashed.workflowId).describe();
      expect(desc.runId).not.toBe(handle.firstExecutionRunId);
      // Claim check: the parent's payloads carry the table, never data.
      const stats = await checkHistories(stack.client, crashed.workflowId, []);
      expect(stats.runs).toBe(2);
      expect(stats.maxPayloadBytes).toBeLessThan(16 * 1024);
      for (const p of crashedResult.points) {
        const child = await stack.client.workflow.getHandle(p.workflowId).describe();
        expect(child.type).toBe('supervisedWorkflow');
        expect(child.parentExecution?.workflowId).toBe(crashed.workflowId);
      }

      // Files: a results file per point and results.jsonl with the best marked.
      const rows = readFileSync(join(crashed.run.logPath, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(rows.map((r) => [r.name, r.status, r.value, r.best])).toEqual(crashedResult.points.map((p) => [p.name, p.status, p.value, p.index === best.index]));
      expect(rows[0].params).toEqual({ learning_rate: 0.01, lora_rank: 4 });
      expect(JSON.parse(readFileSync(join(crashed.run.logPath, '002-learning_rate=0.03_lora_rank=4', 'config.json'), 'utf8'))).toMatchObject({ learning_rate: 0.03, lora_rank: 4, max_steps: 4 });

      // The sweep's report: every point's curves overlaid and the results table, best marked.
      const out = await writeReport([crashed.run.logPath]);
      const html = readFileSync(out, 'utf8');
      expect(html).toContain('id="sweep"');
      for (const p of crashedResult.points) expect(html).toContain(p.name);
      expect(html).toMatch(/<tr class="best">.*003-learning_rate|<tr class="best">/s);
      expect(html.match(/<figure class="chart" data-key="test\/nll">/g)).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });

  it('pause holds the running points and starts none; resume goes on; stop ends the running points with final checkpoints and starts no more', async () => {
    const run: ResolvedRun = testRun(stack, config, ['max_concurrent=1', 'overrides=["max_steps=8","eval_every=2","save_every=4"]'], 'sweep');
    await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      const first = `${run.workflowId}/000-learning_rate=0.01_lora_rank=4`;
      await waitUntil('point 0 at step 1', async () => (await pointProgress(stack, first)).step >= 1, 120_000, 50);
      await handle.signal(pauseSignal);
      await waitUntil('point 0 paused', async () => (await pointProgress(stack, first)).status === 'paused', 60_000, 100);
      const heldAt = (await pointProgress(stack, first)).step;
      await new Promise((r) => setTimeout(r, 1500));
      expect((await pointProgress(stack, first)).step).toBe(heldAt);
      expect(((await handle.query(progressQuery)) as SweepProgress).paused).toBe(true);

      await handle.signal(resumeSignal);
      const second = `${run.workflowId}/001-learning_rate=0.01_lora_rank=8`;
      await waitUntil('point 1 at step 1', async () => (await pointProgress(stack, second)).step >= 1, 180_000, 50);
      await handle.signal(stopSignal, 'test');
      const result = (await handle.result()) as SweepResult;

      expect(result.status).toBe('stopped');
      expect(result.points.map((p) => p.status)).toEqual(['completed', 'stopped', 'pending', 'pending']);
      expect(result.points[1].steps).toBeLessThan(8);
      const ckpts = checkpointsOf(join(run.run.logPath, result.points[1].name));
      expect(ckpts.at(-1)).toMatchObject({ name: 'final', stopped_early: true });
      await expect(stack.client.workflow.getHandle(result.points[2].workflowId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
      expect(existsSync(join(run.run.logPath, result.points[2].name))).toBe(false);
      const rows = readFileSync(join(run.run.logPath, 'results.jsonl'), 'utf8').trim().split('\n');
      expect(rows).toHaveLength(2);
    });
  });
});
