// A benchmark suite as an in-training evaluator: an SL run with a `benchmark` evaluator entry logs
// `eval/<suite>/…` metrics at its eval steps, sampled from the pre-step snapshot; evaluating that
// same snapshot with `cookbook eval` (same seed and sampling settings) gives the same numbers.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_benchmark_eval.json');

describe('benchmark suites as in-training evaluators', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('logs eval/ifeval/* at eval steps, equal to `cookbook eval` of the same snapshot', async () => {
    await withWorker(stack, async () => {
      const run = testRun(stack, config);
      const result = (await runToEnd(stack, run)) as RunResult;
      expect(result.status).toBe('completed');
      const rows = metricsOf(run.run.logPath);
      const evalRows = rows.filter((r) => 'eval/ifeval/score' in r);
      expect(evalRows.map((r) => r.step)).toEqual([0, 2]);
      for (const key of ['score', 'num_correct', 'num_examples', 'prompt_level_strict_acc', 'prompt_level_loose_acc', 'inst_level_strict_acc', 'inst_level_loose_acc']) {
        expect(evalRows[1]).toHaveProperty(`eval/ifeval/${key}`);
      }
      expect(evalRows[1]['eval/ifeval/num_examples']).toBe(4);

      // The snapshot the step-2 eval sampled from, evaluated on its own.
      const modelRun = result.finalCheckpoint!.samplerPath!.replace(/^tinker:\/\//, '').split('/')[0];
      const snapshot = `tinker://${modelRun}/sampler_weights/eval_000002`;
      const r = resolveEval(snapshot, 'ifeval', { limit: '4', set: ['max_tokens=16', 'temperature=1.0', 'seed=7'] }, { runsDir: join(stack.dir, 'runs'), workflowId: 'eval-of-snapshot' });
      const standalone = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
      for (const [k, v] of Object.entries(standalone.metrics)) expect([k, evalRows[1][`eval/ifeval/${k}`]]).toEqual([k, v]);
    });
  }, 480_000);

  it('with num_samples 3 logs eval/gsm8k/pass@k, equal to `cookbook eval --samples 3` of the same snapshot', async () => {
    await withWorker(stack, async () => {
      const entry = { kind: 'benchmark', suite: 'gsm8k', max_tokens: 16, temperature: 1.0, limit: 3, num_samples: 3, pass_at_k: [1, 3] };
      const run = testRun(stack, config, [`evaluators=${JSON.stringify([entry])}`]);
      const result = (await runToEnd(stack, run)) as RunResult;
      expect(result.status).toBe('completed');
      const evalRows = metricsOf(run.run.logPath).filter((r) => 'eval/gsm8k/score' in r);
      expect(evalRows.map((r) => r.step)).toEqual([0, 2]);
      const last = evalRows[1]!;
      expect(last['eval/gsm8k/num_examples']).toBe(3);
      expect(last['eval/gsm8k/num_samples']).toBe(9);
      expect(last['eval/gsm8k/pass@1']).toBeCloseTo(last['eval/gsm8k/score'] as number, 12);
      expect(last['eval/gsm8k/pass@3'] as number).toBeGreaterThanOrEqual(last['eval/gsm8k/pass@1'] as number);

      const modelRun = result.finalCheckpoint!.samplerPath!.replace(/^tinker:\/\//, '').split('/')[0];
      const snapshot = `tinker://${modelRun}/sampler_weights/eval_000002`;
      const r = resolveEval(snapshot, 'gsm8k', { limit: '3', samples: '3', passAtK: '1,3', set: ['max_tokens=16', 'temperature=1.0', 'seed=7'] }, { runsDir: join(stack.dir, 'runs'), workflowId: 'eval-of-snapshot-pass-at-k' });
      const standalone = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
      expect(Object.keys(standalone.metrics)).toEqual(expect.arrayContaining(['pass@1', 'pass@3']));
      for (const [k, v] of Object.entries(standalone.metrics)) expect([k, last[`eval/gsm8k/${k}`]]).toEqual([k, v]);
    });
  }, 480_000);
});
