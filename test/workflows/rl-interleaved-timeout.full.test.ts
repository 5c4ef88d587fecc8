// Issue #54's RL pieces on the real stack (Temporal dev server, the engine over HTTP, the tiny
// model's tokenizer): an `interleaved` mixture of math_rl's Polaris (read from a Hugging Face hub
// cache folder) and an env whose tool never answers in the first env of each group, under
// retry_on_failure with `per_rollout_timeout`. The hung rollout is abandoned at the deadline,
// counted as rollout_errors/TimeoutError and retried in a fresh env, so every group trains; each
// source's groups are logged under its own tag. Full tier: each hung rollout waits out the deadline,
// which must be well above a first sampling call on a loaded 2-core machine. Also a DeepMath run
// whose batches are short (a row without an answer dropped, a partial last batch): each step trains
// the groups its batch has, as the reference's loop does.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { buildRLDatasets } from '../../src/cookbook/rl/datasets.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { writeParquet } from '../cookbook/hf-fixtures.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const dir = mkdtempSync(path.join(tmpdir(), 'rl-interleaved-'));
const cache = path.join(dir, 'hub');
const repo = path.join(cache, 'datasets--POLARIS-Project--Polaris-Dataset-53K');
mkdirSync(path.join(repo, 'refs'), { recursive: true });
writeFileSync(path.join(repo, 'refs', 'main'), 'b'.repeat(40));
writeParquet(
  path.join(repo, 'snapshots', 'b'.repeat(40), 'data', 'train-00000-of-00001.parquet'),
  Array.from({ length: 8 }, (_, i) => ({ problem: `What is ${i} + ${i}?`, answer: String(2 * i) })),
);
const deepmath = path.join(cache, 'datasets--zwhe99--DeepMath-103K');
mkdirSync(path.join(deepmath, 'refs'), { recursive: true });
writeFileSync(path.join(deepmath, 'refs', 'main'), 'd'.repeat(40));
writeParquet(
  path.join(deepmath, 'snapshots', 'd'.repeat(40), 'data', 'train-00000-of-00001.parquet'),
  Array.from({ length: 8 }, (_, i) => ({ question: `What is ${i} + ${i}?`, final_answer: i === 5 ? '' : String(2 * i) })),
);
const dataset = {
  kind: 'interleaved',
  sources: [
    { kind: 'polaris', batch_size: 2, group_size: 2 },
    { kind: 'custom', name: 'flaky_arithmetic', module: path.join(import.meta.dirname, '..', 'fixtures', 'envs', 'flaky-arithmetic.ts'), args: { batch_size: 2, group_size: 2, n_batches: 4, failing_slot: 0, hang: true } },
  ],
  weights: [1, 1],
  groups_per_batch: 4,
  total_batches: 1,
  seed: 3,
};
const config = path.join(dir, 'rl_interleaved_timeout.json');
writeFileSync(
  config,
  JSON.stringify({
    model_name: 'tiny-qwen3',
    dataset,
    max_tokens: 4,
    learning_rate: 0.001,
    lora_rank: 4,
    eval_every: 0,
    save_every: 0,
    rollout_error_tolerance: { kind: 'retry_on_failure', max_retries: 4, per_rollout_timeout: 45 },
  }),
);

describe("issue #54's RL datasets on the real stack", { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    process.env.HF_HUB_CACHE = cache;
    process.env.HF_HUB_OFFLINE = '1';
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('hung rollouts time out into rollout_errors/TimeoutError and are retried; both sources train under their tags', async () => {
    // Which slots the seed gives each source: the flaky source's groups each hang once.
    const { train } = await buildRLDatasets(dataset as never, 'tiny-qwen3');
    const tags = train.getBatch(0).map((b) => b.loggingTags()[0]);
    const flaky = tags.filter((t) => t !== 'polaris').length;
    expect(flaky).toBeGreaterThan(0);
    expect(flaky).toBeLessThan(4);

    const run = testRun(stack, config, [], 'rl');
    const result = await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result());
    expect((result as RunResult).status).toBe('completed');
    const [row] = stepRows(metricsOf(run.run.logPath));
    expect(row['rollout_errors/TimeoutError']).toBe(flaky);
    expect(row['rollout_errors/groups_skipped']).toBe(0);
    expect(row['env/all/total_episodes']).toBe(8);
    expect(row['env/polaris/total_episodes']).toBe(2 * (4 - flaky));
  });

  it('deepmath batches shortened by a dropped row and the last partial batch train the groups they have', async () => {
    // 8 rows, one without an answer, in batches of 3 rows: 3 batches holding 7 groups in all.
    const { train } = await buildRLDatasets({ kind: 'deepmath', batch_size: 3, group_size: 2 }, 'tiny-qwen3');
    const sizes = Array.from({ length: train.length }, (_, i) => train.getBatch(i).length);
    expect(sizes.length).toBe(3);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(7);
    const short = path.join(dir, 'rl_deepmath.json');
    writeFileSync(short, JSON.stringify({ model_name: 'tiny-qwen3', dataset: { kind: 'deepmath', batch_size: 3, group_size: 2 }, max_tokens: 4, learning_rate: 0.001, lora_rank: 4, eval_every: 0, save_every: 0 }));
    const run = testRun(stack, short, [], 'rl');
    const result = await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result());
    expect((result as RunResult).status).toBe('completed');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows.map((r) => r['env/all/total_episodes'])).toEqual(sizes.map((n) => 2 * n));
    expect(rows.every((r) => !('rollout_errors/groups_skipped' in r))).toBe(true);
  });
});
