// rl_numerics_check (configs/rl_numerics_check.json) on the real stack: the sampler-vs-trainer
// metrics the recipe exists for are logged under the reference's names as finite scalars, and with
// an on-policy sampler (the engine samples and trains the same weights) they are near zero. The
// untrained tiny model rarely ends a turn before max_tokens, so its episodes end there (the
// reference's max_tokens stop) or are graded with the counting metrics; the metrics' names are
// checked against the reference in test/parity/numerics-check.parity.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'rl_numerics_check.json');
const ENDINGS = ['max_tokens_reached', 'answer_parsed', 'parse_error', 'context_overflow'];

describe('rl_numerics_check', { timeout: 300_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('kl_sample_train_v1/_v2: finite scalars near zero on-policy', async () => {
    const run = testRun(stack, CONFIG, ['max_steps=1', 'save_every=0', 'dataset.args.group_size=2'], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows).toHaveLength(1);
    for (const row of rows) {
      const v1 = row['optim/kl_sample_train_v1'];
      const v2 = row['optim/kl_sample_train_v2'];
      expect(typeof v1 === 'number' && Number.isFinite(v1)).toBe(true);
      expect(typeof v2 === 'number' && Number.isFinite(v2)).toBe(true);
      // v1 is the mean of (sampler − trainer) logprobs, v2 half their mean square: same weights, same
      // math, so only float rounding is left (on a 2-core CPU: v1 ≈ −7e−8, v2 ≈ 1e−13).
      expect(Math.abs(v1 as number)).toBeLessThan(1e-4);
      expect(v2 as number).toBeGreaterThanOrEqual(0);
      expect(v2 as number).toBeLessThan(1e-6);
      const entropy = row['optim/entropy'];
      expect(typeof entropy === 'number' && Number.isFinite(entropy) && entropy > 0).toBe(true);
      expect(row['env/all/total_episodes']).toBe(4);
    }
    for (const step of [0]) {
      const file = join(run.run.logPath, `iteration_${String(step).padStart(6, '0')}`, 'train_rollout_summaries.jsonl');
      const episodes = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(episodes).toHaveLength(4);
      for (const e of episodes) {
        const last = e.steps.at(-1).metrics as Record<string, number>;
        expect(ENDINGS.filter((k) => k in last), JSON.stringify(last)).toHaveLength(1);
        if ('answer_parsed' in last) expect([3, 4]).toContain(last.num_pages);
      }
    }
  });
});
