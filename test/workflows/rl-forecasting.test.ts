// forecasting (the reference's recipes/forecasting) on the real stack: tiny-qwen3 forecasts the
// shipped synthetic questions for a step, evaluated on the validation split before it; the row
// carries the recipe's metrics under env/all, env/prophet-arena and each category's tag, for
// training and test/, and the rollout summaries keep each forecast's logs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const CONFIG = join(import.meta.dirname, '..', 'fixtures', 'rl_forecasting_small.json');
const summaries = (logPath: string, step: number, file: string) =>
  readFileSync(join(logPath, `iteration_${String(step).padStart(6, '0')}`, file), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('forecasting RL', { timeout: 300_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('trains a step after a validation pass; Brier metrics per tag, forecasts in the rollout logs', async () => {
    const run = testRun(stack, CONFIG, [], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows).toHaveLength(1);
    for (const row of rows) {
      expect(row['env/all/total_episodes']).toBe(6);
      expect(row['test/env/all/total_episodes']).toBe(4);
      for (const prefix of ['env/all', 'env/prophet-arena', 'test/env/all']) {
        for (const k of ['brier_reward', 'accuracy', 'format_valid']) {
          const v = row[`${prefix}/${k}`] as number;
          expect(v, `${prefix}/${k}`).toBeGreaterThanOrEqual(0);
          expect(v, `${prefix}/${k}`).toBeLessThanOrEqual(1);
        }
      }
      // The reward is the Brier reward; the group reward adds nothing.
      expect(row['env/all/reward/total']).toBeCloseTo(row['env/all/brier_reward'] as number, 12);
      // A batch holds several categories, so each has its own tag.
      expect(Object.keys(row).filter((k) => /^env\/(?!all\/|prophet-arena\/)[^/]+\/brier_reward$/.test(k)).length).toBeGreaterThan(1);
    }

    const train = summaries(run.run.logPath, 0, 'train_rollout_summaries.jsonl');
    expect(train).toHaveLength(6);
    for (const r of train) {
      expect(r.tags[0]).toBe('prophet-arena');
      const logs = r.steps[0].logs;
      // A finished answer logs its forecast; a truncated one (max_tokens) logs nothing and scores 0.
      if (Object.keys(logs).length) {
        expect(logs.question_id).toMatch(/^syn-\d+:/);
        expect(logs.forecast === 'invalid' || /^\d\.\d{6}$/.test(logs.forecast)).toBe(true);
      } else expect(r.trajectory_metrics).toEqual({ brier_reward: 0, accuracy: 0, format_valid: 0 });
    }
    expect(summaries(run.run.logPath, 0, 'eval_test_rollout_summaries.jsonl')).toHaveLength(4);
  });
});
