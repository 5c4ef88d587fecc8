// A benchmark suite as an in-training evaluator: an SL run with a `benchmark` evaluator entry logs
// `eval/<suite>/…` metrics at its eval steps, sampled from the pre-step snapshot; evaluating that
// same snapshot with `cookbook eval` (same seed and sampling settings) gives the same numbers; a
// judged suite (arena_hard) records each judge reply in the run's store, and its judge replies the
// same to the same answers as `cookbook eval`'s.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { loadBenchmark } from '../../src/cookbook/eval/benchmark-data.js';
import { RunStore } from '../../src/cookbook/run-store.js';
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

  // One run for all three entries (a run costs more than its evals).
  it('with num_samples 3 logs eval/gsm8k/pass@k; arena_hard judged by the snapshot itself, each judge reply recorded once; both equal to `cookbook eval` of the same snapshot; a row the port cannot check is logged as eval/ifbench/num_skipped, out of the score', async () => {
    await withWorker(stack, async () => {
      const gsm8k = { kind: 'benchmark', suite: 'gsm8k', max_tokens: 16, temperature: 1.0, limit: 3, num_samples: 3, pass_at_k: [1, 3] };
      const arena = { kind: 'benchmark', suite: 'arena_hard', max_tokens: 8, temperature: 1.0, limit: 2, judge: { max_tokens: 8 } };
      // test/fixtures/ifbench_skip: its first 3 rows hold one asking for words:start_verb (no POS tagger weights here).
      const ifbench = { kind: 'benchmark', suite: 'ifbench', data_path: join(import.meta.dirname, '..', 'fixtures', 'ifbench_skip'), max_tokens: 8, temperature: 1.0, limit: 3 };
      const run = testRun(stack, config, [`evaluators=${JSON.stringify([gsm8k, arena, ifbench])}`]);
      const result = (await runToEnd(stack, run)) as RunResult;
      expect(result.status).toBe('completed');
      const rows = metricsOf(run.run.logPath);
      const evalRows = rows.filter((r) => 'eval/gsm8k/score' in r);
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

      // arena_hard (entry 1): logged at the eval steps; each sample's judge reply recorded at
      // (set, evaluator, step, example, sample), asked of the snapshot being evaluated.
      const arenaRows = rows.filter((r) => 'eval/arena_hard/score' in r);
      expect(arenaRows.map((r) => r.step)).toEqual([0, 2]);
      const arenaLast = arenaRows[1]!;
      expect(arenaLast['eval/arena_hard/num_examples']).toBe(2);
      expect(arenaLast['eval/arena_hard/win_rate']).toBe(arenaLast['eval/arena_hard/score']);
      const store = new RunStore(run.run.logPath);
      const { items } = await loadBenchmark({ suite: 'arena_hard', data_path: null, data_name: null, data_split: null, limit: 2, system_prompt: null });
      const replies = items.map((_, i) => JSON.parse(store.readBlob(`side_effects/evaluators_1_2_${i}_0/judge.json`).toString('utf8')) as { request: string; value: string });
      for (const record of replies) expect(record.request.startsWith(`tinker ${snapshot} sha256:`)).toBe(true);
      // The same snapshot through `cookbook eval` (the run's seed, the entry's sampling, self-judged): the same replies and metrics.
      const ra = resolveEval(snapshot, 'arena_hard', { limit: '2', set: ['max_tokens=8', 'temperature=1.0', 'seed=7', 'judge.max_tokens=8'] }, { runsDir: join(stack.dir, 'runs'), workflowId: 'eval-of-snapshot-arena' });
      const arenaAlone = (await (await startEval(stack.client, ra, stack.taskQueue)).result()) as EvalWorkflowResult;
      const alone = new RunStore(arenaAlone.logPath);
      expect(items.map((_, i) => (JSON.parse(alone.readBlob(`side_effects/eval_${i}_0/judge.json`).toString('utf8')) as { value: string }).value)).toEqual(replies.map((x) => x.value));
      for (const [k, v] of Object.entries(arenaAlone.metrics)) expect([k, arenaLast[`eval/arena_hard/${k}`]]).toEqual([k, v]);

      // ifbench (entry 2): 2 rows scored, the start_verb row counted apart; gsm8k's keys hold no num_skipped.
      const ifbenchRows = rows.filter((r) => 'eval/ifbench/score' in r);
      expect(ifbenchRows.map((r) => [r.step, r['eval/ifbench/num_examples'], r['eval/ifbench/num_skipped']])).toEqual([
        [0, 2, 1],
        [2, 2, 1],
      ]);
      expect(last).not.toHaveProperty('eval/gsm8k/num_skipped');
    });
  }, 480_000);
});
