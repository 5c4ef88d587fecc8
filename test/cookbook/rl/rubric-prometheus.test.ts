// The rubric_prometheus environment as a config builds it: the shipped three-row copy of the
// Feedback Collection through the hf layout readers, batched as the reference's RubricGradedDataset,
// each group's envs bound to a grader; and bad rows or arguments refused by name.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RLConfigSchema } from '../../../src/cookbook/config/rl.js';
import { ConfigurationError, DataFormatError } from '../../../src/cookbook/errors.js';
import { buildRLDatasets } from '../../../src/cookbook/rl/datasets.js';
import { RubricGradedDataset, RubricGradedEnv } from '../../../src/cookbook/rl/envs/rubric.js';
import { loadPrometheusDatapoints } from '../../../src/cookbook/rl/envs/rubric-prometheus.js';
import { bindRollout, samplerRolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { sequentialSeeds } from '../../../src/cookbook/rl/seeds.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
const SAMPLE = 'data/rubric/prometheus_sample';
const dir = mkdtempSync(join(tmpdir(), 'h55play-prometheus-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function shippedConfig(args: Record<string, unknown>) {
  const raw = JSON.parse(readFileSync(join(REPO, 'configs/rl_rubric_prometheus.json'), 'utf8'));
  return RLConfigSchema.parse({ ...raw, model_name: 'tiny-qwen3', renderer_name: null, dataset: { ...raw.dataset, args: { ...raw.dataset.args, ...args } } });
}

describe('rubric_prometheus', () => {
  it('configs/rl_rubric_prometheus.json on the local copy: 3 rows in batches of 2, each env asking its instruction', async () => {
    const cfg = shippedConfig({ hf: { path: SAMPLE }, batch_size: 2, grader_llm_name: null });
    const { train, test } = await buildRLDatasets(cfg.dataset, cfg);
    expect(test).toBeUndefined();
    expect(train).toBeInstanceOf(RubricGradedDataset);
    expect(train.length).toBe(1); // len(datapoints) // batch_size
    const builders = train.getBatch(0);
    expect(builders).toHaveLength(2);
    const ctx = samplerRolloutContext({ openSession: async () => Promise.reject(new Error('no grading here')), policyModel: cfg, seeds: (...p) => sequentialSeeds(0, ...p) });
    const envs = await bindRollout(builders[1], ctx, null).makeEnvs();
    expect(envs).toHaveLength(4); // train_group_size
    const env = envs[0] as RubricGradedEnv;
    expect(env.datapoint.convo).toEqual([{ role: 'user', content: 'Explain to a ten-year-old why the sky is blue.' }]);
    const init = await env.initialObservation();
    const text = (await getTokenizer('tiny-qwen3')).decode('ob' in init ? modelInputToInts(init.ob) : []);
    expect(text).toContain('Explain to a ten-year-old why the sky is blue.');
    expect(env.datapoint.rubric_items[0].rubric_str.split('\n').slice(0, 3)).toEqual([
      'Your job is to evaluate the following: Is the explanation accurate and pitched at the level of a ten-year-old. Your response should be a score between 1 to 5.',
      'Here is the calibration for each score:',
      '<score>1.0</score>: The explanation is wrong or incomprehensible to a child.',
    ]);
  });

  it('a row without a column is refused naming the file and row; so are a test split and a batch larger than the data', async () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, 'new_feedback_collection.json'), `${JSON.stringify({ orig_instruction: 'q', orig_criteria: 'c' })}\n`);
    await expect(loadPrometheusDatapoints({ path: bad })).rejects.toThrow(DataFormatError);
    await expect(loadPrometheusDatapoints({ path: bad })).rejects.toThrow(/new_feedback_collection\.json:1: orig_score1_description: expected a string, got no such column/);
    const build = (args: Record<string, unknown>) => {
      const cfg = shippedConfig(args);
      return buildRLDatasets(cfg.dataset, cfg);
    };
    await expect(build({ hf: { path: SAMPLE, test_split: 'test' } })).rejects.toThrow(ConfigurationError);
    await expect(build({ hf: { path: SAMPLE }, batch_size: 4 })).rejects.toThrow(/dataset\.args\.batch_size: 4 exceeds the 3 datapoints of data\/rubric\/prometheus_sample/);
    await expect(build({ hf: { path: SAMPLE }, batch_size: 0 })).rejects.toThrow(/dataset\.args\.batch_size: .*rubric_prometheus/);
  });
});
