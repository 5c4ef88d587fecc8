// forecasting (the reference's recipes/forecasting) on the real stack: tiny-qwen3 forecasts the
// shipped synthetic questions for a step, evaluated on the validation split before it; the row
// carries the recipe's metrics under env/all, env/prophet-arena and each category's tag, for
// training and test/, and the rollout summaries keep each forecast's logs. The untrained model's
// answers do not parse, so no AUC is defined there; a second run whose envs answer as if they
// knew the outcome (0.8 for YES, 0.3 for NO, whatever was sampled) shows the evaluator's AUC
// (RLDataset.evalSetMetrics) reaching the eval row: 1 for every tag with both outcomes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { modelInputFromInts } from '../../src/cookbook/model-input.js';
import type { Renderer } from '../../src/cookbook/renderers/types.js';
import { loadProphetArenaSplit, type ForecastExample } from '../../src/cookbook/rl/envs/forecasting/data.js';
import { buildForecastingDatasets, ForecastEnv, ForecastGroupBuilder, ForecastRLDataset } from '../../src/cookbook/rl/envs/forecasting/env.js';
import { parseUtcDatetime } from '../../src/cookbook/rl/envs/forecasting/iso-datetime.js';
import { registerRLDataset } from '../../src/cookbook/rl/registry.js';
import type { Env, InitialObservation, StepResult } from '../../src/cookbook/rl/types.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const REPO = join(import.meta.dirname, '..', '..');
const CONFIG = join(REPO, 'test', 'fixtures', 'rl_forecasting_small.json');

/** The forecasting env with the policy's answer replaced by one that knows the outcome. */
class KnowingEnv implements Env {
  constructor(
    readonly renderer: Renderer,
    readonly example: ForecastExample,
  ) {}
  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.renderer.buildGenerationPrompt(await new ForecastEnv(this.example).initialObservation()), stopCondition: this.renderer.getStopSequences() };
  }
  async step(): Promise<StepResult> {
    const result = await new ForecastEnv(this.example).step({ role: 'assistant', content: this.example.outcome ? '0.8' : '0.3' });
    return { reward: result.reward, episodeDone: true, nextObservation: modelInputFromInts([]), nextStopCondition: this.renderer.getStopSequences(), metrics: {}, logs: result.logs };
  }
}
class KnowingGroupBuilder extends ForecastGroupBuilder {
  override async makeEnvs(): Promise<Env[]> {
    return Array.from({ length: this.groupSize }, () => new KnowingEnv(this.renderer, this.example));
  }
}
class KnowingDataset extends ForecastRLDataset {
  override getBatch(index: number): KnowingGroupBuilder[] {
    return super.getBatch(index).map((b) => new KnowingGroupBuilder((b as ForecastGroupBuilder).example, this.renderer, this.groupSize));
  }
}
registerRLDataset('forecasting_knowing', ({ args, renderer }) => {
  const { train, test } = buildForecastingDatasets(args, renderer, REPO);
  const knowing = (d: ForecastRLDataset) => new KnowingDataset(d.examples, d.batchSize, d.groupSize, renderer, d.epochs);
  return { train: knowing(train as ForecastRLDataset), test: knowing(test as ForecastRLDataset) };
});
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

  it("logs the evaluator's AUC per tag when forecasts parse", async () => {
    const validation = 6;
    // What the policy samples is ignored here: one token, one rollout per question.
    const sizes = ['max_tokens=1', 'dataset.args.groups_per_batch=1', 'dataset.args.group_size=1', 'dataset.args.validation_group_size=1'];
    const run = testRun(stack, CONFIG, ['dataset.name=forecasting_knowing', `dataset.args.max_validation_questions=${validation}`, ...sizes], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const [row] = stepRows(metricsOf(run.run.logPath));
    // The validation questions the run drew (cap 6, seed 0 + 1), by tag.
    const split = loadProphetArenaSplit(join(REPO, 'data/forecasting/questions.csv'), { splitTime: parseUtcDatetime('2025-10-20'), maxTrainQuestions: 1024, maxValidationQuestions: validation, seed: 0 });
    const byTag = new Map<string, number[]>();
    for (const e of split.validation) for (const tag of ['all', 'prophet-arena', e.category.toLowerCase().replaceAll(' ', '-')]) byTag.set(tag, [...(byTag.get(tag) ?? []), e.outcome]);
    const expected = Object.fromEntries([...byTag].filter(([, ys]) => ys.includes(0) && ys.includes(1)).map(([tag]) => [`test/env/${tag}/auc`, 1]));
    expect(Object.keys(expected)).toContain('test/env/all/auc');
    expect(Object.fromEntries(Object.entries(row).filter(([k]) => k.endsWith('/auc')))).toEqual(expected);
    const brier = split.validation.map((e) => (e.outcome ? 1 - 0.2 ** 2 : 1 - 0.3 ** 2));
    expect(row['test/env/all/brier_reward']).toBeCloseTo(brier.reduce((a, b) => a + b, 0) / brier.length, 12);
    expect(row['test/env/all/format_valid']).toBe(1);
  });
});
