// SDFT on the real stack (Temporal dev server, engine over HTTP, real tokenizer): tiny-qwen3 as
// student and, with its base weights, as teacher, on the shipped SciKnowEval rows. Both modes run
// two steps: top-K forward KL (cross_entropy on (N, K) soft targets) and per-token importance
// sampling (topk = 0); each step's rollouts and teacher passes are in the run store by (step, group)
// and nothing bulky crosses Temporal.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'sdft_small.json');
const evalScience = join(import.meta.dirname, '..', '..', 'data', 'sdft', 'eval_science.jsonl');
const storeFile = (logPath: string, rel: string) => join(logPath, '.cookbook', 'store', rel);

describe('SDFT workflow', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('top-K: cross_entropy on the teacher top-K, sdft/* metrics, the eval, checkpoints at i+1', async () => {
    const evaluators = JSON.stringify([{ kind: 'custom_sampling', name: 'science', file_path: evalScience, grader: 'sdft_science', max_tokens: 4, temperature: 0 }]);
    const run = testRun(stack, fixture, ['eval_every=2', `evaluators=${evaluators}`], 'sdft');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(2);
    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    for (const key of ['progress/batch', 'optim/lr', 'progress/done_frac', 'env/all/total_episodes', 'sdft/num_datums', 'sdft/topk', 'sdft/teacher_truncated_count', 'sdft/total_completion_tokens', 'sdft/mean_teacher_entropy']) {
      expect(rows[0]).toHaveProperty(key);
    }
    expect(rows[0]['env/all/total_episodes']).toBe(4); // 2 groups × 2 samples
    expect(rows[0]['sdft/num_datums']).toBe(4);
    expect(rows[0]['sdft/topk']).toBe(4);
    // Entropy of a renormalised 4-way distribution: in (0, ln 4].
    for (const r of rows) expect(r['sdft/mean_teacher_entropy']).toBeGreaterThan(0);
    for (const r of rows) expect(r['sdft/mean_teacher_entropy']).toBeLessThanOrEqual(Math.log(4) + 1e-6);
    expect(rows.filter((r) => 'test/science/accuracy' in r).map((r) => r.step)).toEqual([0]);
    expect(checkpointsOf(run.run.logPath).map((c) => [c.name, c.batch])).toEqual([['000001', 1], ['000002', 2], ['final', 2]]);
    for (let g = 0; g < 2; g++) {
      const teacher = JSON.parse(readFileSync(storeFile(run.run.logPath, `sdft_teacher/iteration_000001/group_${String(g).padStart(4, '0')}.json`), 'utf8'));
      expect(teacher.topk).toHaveLength(2);
    }
    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  }, 240_000);

  // The fuller tier: the gate has top-K here and in sdft-crash; the advantages are pinned in sdft.parity.
  if (fullTier) it('importance sampling (topk = 0): advantages teacher_lp − student_lp, trained with importance_sampling', async () => {
    const run = testRun(stack, fixture, ['topk=0', 'loss_fn=importance_sampling', 'teacher_sync_every=1'], 'sdft');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    for (const r of rows) {
      expect(r['sdft/num_datums']).toBe(4);
      // Logprobs are ≤ 0 and the advantage is their difference.
      expect(r['sdft/mean_teacher_lp']).toBeLessThan(0);
      expect(r['sdft/mean_student_lp']).toBeLessThan(0);
      expect(r['sdft/mean_advantage']).toBeCloseTo((r['sdft/mean_teacher_lp'] as number) - (r['sdft/mean_student_lp'] as number), 5);
      expect(r).not.toHaveProperty('sdft/topk');
    }
    // The teacher scored with plain logprobs; from step 1 on it has the student's weights after step 0 (teacher_sync_every=1).
    const teacher = JSON.parse(readFileSync(storeFile(run.run.logPath, 'sdft_teacher/iteration_000001/group_0000.json'), 'utf8'));
    expect(teacher.logprobs).toHaveLength(2);
  }, 240_000);
});
