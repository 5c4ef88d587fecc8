// Staged pipelines on the real stack: SFT → DPO as child workflows of one parent, surviving a
// SIGKILLed worker mid-stage, and stopped by one signal on the parent.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRun, startRun } from '../../src/cli/train.js';
import { progressQuery, stopSignal } from '../../src/workflows/shared/messages.js';
import type { PipelineProgress, PipelineResult } from '../../src/workflows/pipeline.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const config = join(fixtures, 'pipeline_small.json');

describe('pipeline config', () => {
  const write = (cfg: unknown) => {
    const p = join(mkdtempSync(join(tmpdir(), 'pipeline-cfg-')), 'p.json');
    writeFileSync(p, JSON.stringify(cfg));
    return p;
  };
  const sl = { kind: 'sl', config_file: join(fixtures, 'sl_small.json') };

  it('validates each stage with its own schema; errors name the stage path', () => {
    expect(() => resolveRun('pipeline', write({ stages: [sl, { kind: 'dpo', config_file: join(fixtures, 'dpo_small.json'), overrides: ['learning_rate=-1'] }] }), [])).toThrow(
      /stages\.1\.config\.learning_rate: /,
    );
    expect(() => resolveRun('pipeline', write({ stages: [sl, { kind: 'dpo', config: { model_name: 'tiny-qwen3' } }] }), [])).toThrow(/stages\.1\.config\.dataset: /);
    expect(() => resolveRun('pipeline', write({ stages: [sl, { kind: 'nope', config: {} }] }), [])).toThrow(/stages\.1\.kind: unknown stage kind "nope"/);
    expect(() => resolveRun('pipeline', write({ stages: [sl, { ...sl, overrides: ['model_name=tiny-llama3'] }] }), [])).toThrow(/stages\.1\.config\.model_name: tiny-llama3 differs/);
    expect(() => resolveRun('pipeline', write({ stages: [sl, { ...sl, overrides: ['load_checkpoint_path="tinker://x"'] }] }), [])).toThrow(
      /stages\.1\.config\.load_checkpoint_path: set by the pipeline/,
    );
    expect(() => resolveRun('pipeline', write({ stages: [{ kind: 'sl' }] }), [])).toThrow(/stages\.0\.config: set exactly one of config and config_file/);
  });

  it('resolves stage files, overrides and paths, and takes the model from the stages', () => {
    const r = resolveRun('pipeline', config, [], { runsDir: mkdtempSync(join(tmpdir(), 'pipeline-runs-')) });
    expect(r.config.model_name).toBe('tiny-qwen3');
    expect(r.config.stages.map((s: { kind: string }) => s.kind)).toEqual(['sl', 'dpo']);
    expect(r.config.stages[0].config.max_steps).toBe(4);
    expect(r.config.stages[1].config.dataset.file_path).toBe(join(import.meta.dirname, '..', '..', 'data', 'example_preferences.jsonl'));
  });
});

describe('pipeline workflow', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('SFT → DPO killed mid-stage completes; each stage is a child with its own log dir, starting from the previous checkpoint', async () => {
    const run = testRun(stack, config, [], 'pipeline');
    let worker = await workerProcess(stack, 'pipeline-worker-1');
    try {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      const dpoId = `${run.workflowId}/1-dpo`;
      await waitUntil('DPO stage at step 2', async () => (await stack.client.workflow.getHandle(dpoId).query(progressQuery)).step >= 2, 180_000, 50);
      await worker.kill();
      worker = await workerProcess(stack, 'pipeline-worker-2');
      const result = (await handle.result()) as PipelineResult;

      expect(result.status).toBe('completed');
      expect(result.stages.map((s) => [s.index, s.kind, s.workflowId, s.result.status, s.result.steps])).toEqual([
        [0, 'sl', `${run.workflowId}/0-sl`, 'completed', 4],
        [1, 'dpo', dpoId, 'completed', 6],
      ]);
      const [slDir, dpoDir] = result.stages.map((s) => s.logPath);
      expect(slDir).toBe(join(run.run.logPath, '0-sl'));
      expect(dpoDir).toBe(join(run.run.logPath, '1-dpo'));
      expect(metricsOf(slDir).map((r) => r.step)).toEqual([0, 1, 2, 3]);
      expect(metricsOf(dpoDir).map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]); // each step exactly once
      expect(checkpointsOf(dpoDir).map((c) => c.name)).toEqual(['000004', 'final']);
      // The DPO stage loaded the SFT stage's final weights (weights only: a fresh optimizer).
      const dpoConfig = JSON.parse(readFileSync(join(dpoDir, 'config.json'), 'utf8'));
      expect(dpoConfig.load_checkpoint_path).toBe(result.stages[0].result.finalCheckpoint!.statePath);
      expect(result.finalCheckpoint).toEqual(result.stages[1].result.finalCheckpoint);
      expect(existsSync(join(run.run.logPath, 'config.json'))).toBe(true);

      // The tree: each child names the parent.
      for (const s of result.stages) {
        const desc = await stack.client.workflow.getHandle(s.workflowId).describe();
        expect(desc.parentExecution?.workflowId).toBe(run.workflowId);
        expect(desc.type).toBe(s.kind === 'sl' ? 'supervisedWorkflow' : 'dpoWorkflow');
      }
    } finally {
      await worker.stop();
    }
  });

  it('stop on the parent stops the running stage with a final checkpoint and starts no further stage', async () => {
    const run = testRun(stack, config, [], 'pipeline');
    await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      const slId = `${run.workflowId}/0-sl`;
      await waitUntil('SFT stage at step 1', async () => (await stack.client.workflow.getHandle(slId).query(progressQuery)).step >= 1, 120_000, 50);
      const progress = (await handle.query(progressQuery)) as PipelineProgress;
      expect(progress).toMatchObject({ kind: 'pipeline', step: 0, totalSteps: 2 });
      expect(progress.stages.map((s) => s.status)).toEqual(['running', 'pending']);
      await handle.signal(stopSignal, 'test');
      const result = (await handle.result()) as PipelineResult;

      expect(result.status).toBe('stopped');
      expect(result.stages).toHaveLength(1);
      expect(result.stages[0].result.status).toBe('stopped');
      expect(result.stages[0].result.steps).toBeLessThan(4);
      const ckpts = checkpointsOf(result.stages[0].logPath);
      expect(ckpts[ckpts.length - 1]).toMatchObject({ name: 'final', stopped_early: true });
      expect(result.finalCheckpoint?.statePath).toMatch(/weights\/final$/);
      await expect(stack.client.workflow.getHandle(`${run.workflowId}/1-dpo`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
      expect(existsSync(join(run.run.logPath, '1-dpo'))).toBe(false);
    });
  });
});
