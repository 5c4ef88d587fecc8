// The decisions workflow on the real stack (Temporal dev server, engine over HTTP, tiny-qwen3's
// real tokenizer) with the shipped team-routing decisions: hard labels (cross_entropy on the
// answer token) and soft labels (the Brier probability loss through forward_backward_custom) both
// lower the loss of the same batches from one epoch to the next; the held-out decisions are scored
// at the start, every eval_every steps and at the end; sampleDecision gives a distribution.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/tinker-backend.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { loadDecisionsData, sampleDecision } from '../../src/cookbook/supervised/decisions/index.js';
import type { DecisionsConfig } from '../../src/cookbook/config/decisions.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const configs = join(import.meta.dirname, '..', '..', 'configs');
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('decisions workflow', { timeout: 600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function train(config: string, overrides: string[]) {
    const run = testRun(stack, join(configs, config), overrides, 'decisions');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    return { run, result, rows: metricsOf(run.run.logPath) };
  }

  /** Each batch's loss in the last epoch against the same batch's in the first. */
  const lossByEpoch = (rows: Array<Record<string, unknown>>, nBatches: number, epochs: number) =>
    [0, epochs - 1].map((e) => rows.filter((r) => (r.step as number) >= e * nBatches && (r.step as number) < (e + 1) * nBatches).map((r) => r['train/loss'] as number));

  it('hard labels: cross_entropy on the answer token lowers every batch’s loss; evals at the start, every eval_every steps and the end', async () => {
    // The first 4 decisions in batches of 2: 2 steps an epoch.
    const { run, result, rows } = await train('decisions_hard.json', ['max_train_questions=4', 'batch_size=2', 'max_validation_questions=4', 'epochs=3', 'eval_every=3', 'save_every=3']);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(6);
    // One row per step, then the end's scores at step 6 (forecasting.py logs them there).
    expect(rows.map((r) => r.step)).toEqual([...Array(7).keys()]);
    for (const key of ['train/loss', 'learning_rate', 'num_examples', 'progress']) expect(rows[3], key).toHaveProperty(key);
    expect(rows[3]).not.toHaveProperty('train/accuracy'); // cross_entropy sees only the label's token
    expect(rows[2].progress).toBe(3 / 6);
    expect(rows.slice(0, 6).every((r) => r.num_examples === 2 && r.learning_rate === 0.005)).toBe(true);
    const [first, last] = lossByEpoch(rows, 2, 3);
    last.forEach((l, b) => expect(l, `batch ${b}`).toBeLessThan(first[b]));
    expect(rows.filter((r) => 'test/accuracy' in r).map((r) => r.step)).toEqual([0, 3, 6]);
    expect(Object.keys(rows[6]).sort()).toEqual(['step', 'test/accuracy', 'test/brier', 'test/target_prob:mean']);
    // Scored on the same held-out decisions from the trained weights: the targets' probability rose.
    expect(rows[6]['test/target_prob:mean'] as number).toBeGreaterThan(rows[0]['test/target_prob:mean'] as number);
    expect(checkpointsOf(run.run.logPath)).toEqual([
      { name: '000003', step: 3 },
      { name: 'final', step: 6, final: true },
    ]);
    // The probabilities behind each eval, by step: one distribution per held-out decision.
    const store = new RunStore(run.run.logPath);
    for (const step of [0, 3, 6]) {
      const { probabilities, labels } = JSON.parse(store.readBlob(`decisions_eval/step_${String(step).padStart(6, '0')}.json`).toString('utf8'));
      expect(probabilities).toHaveLength(4);
      expect(labels[0]).toEqual(['billing', 'sdk', 'console', 'cookbook']);
      for (const p of probabilities as number[][]) expect(sum(p)).toBeCloseTo(1, 5);
    }
  });

  it('soft labels: the Brier probability loss raises the targets’ probability and lowers every batch’s loss', async () => {
    // The first 4 decisions in batches of 2: 2 steps an epoch.
    const { run, result, rows } = await train('decisions_soft.json', ['max_train_questions=4', 'batch_size=2', 'epochs=3', 'eval_every=0', 'validation_data_path=null']);
    expect(result.status).toBe('completed');
    expect(rows.map((r) => r.step)).toEqual([...Array(6).keys()]); // no validation data: no evals, no closing row
    for (const key of ['train/loss', 'train/target_prob:mean', 'train/accuracy']) expect(rows[0], key).toHaveProperty(key);
    const [first, last] = lossByEpoch(rows, 2, 3);
    last.forEach((l, b) => expect(l, `batch ${b}`).toBeLessThan(first[b]));
    const targetProb = (e: number) => sum(rows.slice(e * 2, e * 2 + 2).map((r) => r['train/target_prob:mean'] as number));
    expect(targetProb(2)).toBeGreaterThan(targetProb(0));
    expect(checkpointsOf(run.run.logPath).map((c) => c.name)).toEqual(['000003', 'final']);

    // The trained weights as a decision model: one probability per team, in choice order, summing to 1.
    const cfg = new RunStore(run.run.logPath).readConfig() as unknown as DecisionsConfig;
    const data = await loadDecisionsData(cfg);
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      const sampler = await backend.createSamplingSession({ modelPath: result.finalCheckpoint!.samplerPath! });
      const probs = await sampleDecision(sampler, data.renderer.render(data.train[0].decision));
      expect([...probs.keys()]).toEqual(['billing', 'sdk', 'console', 'cookbook']);
      expect(sum([...probs.values()])).toBeCloseTo(1, 5);
      for (const p of probs.values()) expect(p).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  });
});
