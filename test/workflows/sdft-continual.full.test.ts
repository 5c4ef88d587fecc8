// The SDFT continual-learning benchmark (configs/sdft_continual.json, the reference's
// run_continual_learning.py on the shipped data): tool use, then science from the tool-use stage's
// final weights, each stage evaluating both tasks. Shortened here (two steps a stage, short
// completions); what it checks is the wiring: the second stage starts from the first's weights and
// its rows carry the first task's accuracy (retention) beside its own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', '..', 'configs', 'sdft_continual.json');
const SHORT = JSON.stringify(['max_steps=2', 'eval_every=1', 'max_tokens=12', 'evaluators.0.max_tokens=12', 'evaluators.1.max_tokens=12']);

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

describe('SDFT continual learning', () => {
  it('tool use then science: the second stage loads the first one’s weights and logs both tasks’ accuracy', async () => {
    const run = testRun(stack, config, [`stages.0.overrides=${SHORT}`, `stages.1.overrides=${SHORT}`], 'pipeline');
    const result = (await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result())) as PipelineResult;
    expect(result.status).toBe('completed');
    expect(result.stages.map((s) => [s.kind, s.result.steps])).toEqual([
      ['sdft', 2],
      ['sdft', 2],
    ]);
    const science = JSON.parse(readFileSync(join(result.stages[1].logPath, 'config.json'), 'utf8'));
    expect(science.dataset.kind).toBe('sciknoweval');
    expect(science.load_checkpoint_path).toBe(result.stages[0].result.finalCheckpoint!.statePath);
    for (const s of result.stages) {
      const rows = metricsOf(s.logPath);
      expect(rows.map((r) => r.step)).toEqual([0, 1]);
      for (const r of rows) {
        for (const key of ['test/tooluse/accuracy', 'test/science/accuracy']) {
          expect(r[key]).toBeGreaterThanOrEqual(0);
          expect(r[key]).toBeLessThanOrEqual(1);
        }
      }
    }
  }, 600_000);
});
