// Sweeps whose points are pipelines (SFT → DPO, the DPO learning rate swept), on the real stack.
// A worker SIGKILLed while both pipelines train leaves exactly the results of an uninterrupted
// sweep: the same table, every stage's metrics and checkpoints, the same final weights. The table
// ranks by the DPO stage's test/nll (the last stage; the SFT stage logs a test/nll too). A `set` on
// the sweep reaches the running point's running stage (its learning_rate halves from the step the
// stage answered), is kept by the sweep, and its save_every goes into the point started later.
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setHot } from '../../src/cli/runs.js';
import { startRun } from '../../src/cli/train.js';
import type { PipelineProgress, PipelineResult } from '../../src/workflows/pipeline.js';
import { pauseSignal, progressQuery, resumeSignal, type Progress } from '../../src/workflows/shared/messages.js';
import type { SweepProgress, SweepResult } from '../../src/workflows/sweep.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sweep_pipeline.json');
const STAGES = ['0-sl', '1-dpo'];

async function observe(stack: TestStack, result: SweepResult) {
  return Promise.all(
    result.points.map(async (p) => {
      const pipeline = (await stack.client.workflow.getHandle(p.workflowId).result()) as PipelineResult;
      return {
        name: p.name,
        status: p.status,
        steps: p.steps,
        value: p.value,
        stages: await Promise.all(
          STAGES.map(async (s, i) => ({
            metrics: metricsOf(join(result.logPath, p.name, s)),
            checkpoints: checkpointsOf(join(result.logPath, p.name, s)),
            fingerprint: await weightsFingerprint(stack.engine.baseUrl, pipeline.stages[i].result.finalCheckpoint!.samplerPath!),
          })),
        ),
      };
    }),
  );
}

const query = <T>(stack: TestStack, id: string) => stack.client.workflow.getHandle(id).query(progressQuery) as Promise<T>;

/** The running stage of a pipeline point, if any. */
async function runningStage(stack: TestStack, pointId: string): Promise<{ id: string; index: number; progress: Progress } | undefined> {
  const stage = (await query<PipelineProgress>(stack, pointId)).stages.find((s) => s.status === 'running');
  return stage && { id: stage.workflowId, index: stage.index, progress: await query<Progress>(stack, stage.workflowId) };
}

describe('sweep of pipelines', { timeout: 1_500_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a worker killed mid-sweep leaves the table, metrics, checkpoints and weights of an uninterrupted sweep', async () => {
    const clean = testRun(stack, config, [], 'sweep');
    const crashed = testRun(stack, config, [], 'sweep');
    let worker = await workerProcess(stack, 'sweep-pipeline-worker-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as SweepResult;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      const point = (i: number) => `${crashed.workflowId}/${cleanResult.points[i].name}`;
      // Both pipelines going: one in its DPO stage past a step, the other at least started.
      await waitUntil(
        'a point in its DPO stage',
        async () => {
          const s = await runningStage(stack, point(0));
          return s !== undefined && s.index === 1 && s.progress.step >= 1 && (await runningStage(stack, point(1))) !== undefined;
        },
        300_000,
        50,
      );
      await worker.kill();
      worker = await workerProcess(stack, 'sweep-pipeline-worker-2');
      const crashedResult = (await handle.result()) as SweepResult;

      expect(cleanResult.status).toBe('completed');
      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.points.map((p) => [p.name, p.status, p.steps])).toEqual([
        ['000-stages.1.learning_rate=0.01', 'completed', 2],
        ['001-stages.1.learning_rate=0.03', 'completed', 2],
      ]);
      const [a, b] = [await observe(stack, cleanResult), await observe(stack, crashedResult)];
      expect(b).toEqual(a);
      for (const p of b) {
        expect(p.stages.map((s) => s.metrics.map((r) => r.step))).toEqual([[0, 1, 2, 3], [0, 1, 2, 3, 4, 5]]);
        // Ranked by the last stage's test/nll, not the SFT stage's.
        expect(p.value).toBe(p.stages[1].metrics.filter((r) => typeof r['test/nll'] === 'number').at(-1)!['test/nll']);
        expect(p.value).not.toBe(p.stages[0].metrics.filter((r) => typeof r['test/nll'] === 'number').at(-1)!['test/nll']);
      }
      // The swept value reached the DPO stage only.
      expect(b.map((p) => p.stages[1].metrics[0].learning_rate)).toEqual([0.01, 0.03]);
      expect(b[0].stages[0].metrics).toEqual(b[1].stages[0].metrics);
      expect(crashedResult.best).toBe(cleanResult.best);
      for (const p of crashedResult.points) {
        const desc = await stack.client.workflow.getHandle(p.workflowId).describe();
        expect(desc.type).toBe('pipelineWorkflow');
        expect(desc.parentExecution?.workflowId).toBe(crashed.workflowId);
      }
      const stats = await checkHistories(stack.client, crashed.workflowId, []);
      expect(stats.maxPayloadBytes).toBeLessThan(16 * 1024);
      const rows = readFileSync(join(crashed.run.logPath, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(rows.map((r) => [r.name, r.value, r.metrics_log_path])).toEqual(crashedResult.points.map((p) => [p.name, p.value, join(crashed.run.logPath, p.name, '1-dpo')]));
    } finally {
      await worker.stop();
    }
  });

  it('set on a sweep reaches the running stage of the running point, is kept, and carries save_every to the point started later', async () => {
    const run = testRun(stack, config, ['max_concurrent=1'], 'sweep');
    await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      const first = `${run.workflowId}/000-stages.1.learning_rate=0.01`;
      await waitUntil('point 0 in its DPO stage', async () => {
        const s = await runningStage(stack, first);
        return s !== undefined && s.index === 1 && s.progress.step >= 1;
      }, 300_000, 50);
      // Paused (reaching the pipeline's running stage), so the set lands before the stage ends.
      await handle.signal(pauseSignal);
      const stageId = `${first}/1-dpo`;
      await waitUntil('the DPO stage paused', async () => (await query<Progress>(stack, stageId)).status === 'paused', 60_000, 100);
      const answer = await setHot(stack.client, run.workflowId, ['lr_multiplier=0.5', 'save_every=3']);
      if (!answer.applied) throw new Error(`the sweep did not answer the set: ${JSON.stringify(answer)}`);
      expect(answer.forwarded).toHaveLength(1);
      expect(answer.forwarded![0].workflowId).toBe(first);
      const stageAnswer = answer.forwarded![0].forwarded!;
      expect(stageAnswer.map((f) => f.workflowId)).toEqual([stageId]);
      const fromStep = stageAnswer[0].fromStep!;
      expect(fromStep).toBeGreaterThan(0);
      expect(fromStep).toBeLessThan(6);
      expect((await query<SweepProgress>(stack, run.workflowId)).hotSet).toEqual({ lr_multiplier: 0.5, save_every: 3 });
      await handle.signal(resumeSignal);
      const result = (await handle.result()) as SweepResult;
      expect(result.points.map((p) => p.status)).toEqual(['completed', 'completed']);

      // Point 0's DPO stage: learning rate halved from the step it answered (constant schedule).
      const lr = metricsOf(join(run.run.logPath, result.points[0].name, '1-dpo')).map((r) => r.learning_rate);
      expect(lr).toEqual([0, 1, 2, 3, 4, 5].map((s) => (s < fromStep ? 0.01 : 0.005)));
      // Point 1 started after the set: its stages save every 3 steps; its learning rate is the swept one.
      const later = join(run.run.logPath, result.points[1].name);
      for (const s of STAGES) expect(JSON.parse(readFileSync(join(later, s, 'config.json'), 'utf8')).save_every).toBe(3);
      expect(metricsOf(join(later, '1-dpo')).map((r) => r.learning_rate)).toEqual(Array(6).fill(0.03));
    });
  });
});
