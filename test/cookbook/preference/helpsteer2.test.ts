// The HelpSteer2 comparison builder against the reference's HelpSteer2ComparisonBuilder
// (goldens: test/fixtures/datasets_gen_goldens.py): the same comparisons in the same train and
// test order, from the rows written as parquet in the Hugging Face hub cache layout.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HfSourceSchema } from '../../../src/cookbook/hf/config.js';
import type { HfRow } from '../../../src/cookbook/hf/source.js';
import type { LabeledComparison } from '../../../src/cookbook/preference/comparisons.js';
import { buildPreferenceDatasets } from '../../../src/cookbook/preference/dataset.js';
import { loadHelpSteer2Splits } from '../../../src/cookbook/preference/helpsteer2.js';
import { buildChatDatasets } from '../../../src/cookbook/supervised/dataset.js';
import { writeParquet } from '../hf-fixtures.js';

const goldens = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'fixtures', 'datasets_goldens.json'), 'utf8')).helpsteer2 as {
  rows: Array<Record<string, unknown>>;
  train: string[][];
  test: string[][];
};
const triple = (r: HfRow<LabeledComparison>) => {
  const c = r.value.comparison;
  expect(r.value.label).toBe('A');
  return [c.prompt_conversation[0].content, c.completion_A[0].content, c.completion_B[0].content];
};

describe('HelpSteer2 comparisons (the reference HelpSteer2ComparisonBuilder)', () => {
  const cache = mkdtempSync(path.join(tmpdir(), 'cookbook-hs2-'));
  beforeAll(() => {
    const repo = path.join(cache, 'datasets--nvidia--HelpSteer2');
    const commit = 'a'.repeat(40);
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', 'main'), commit);
    writeParquet(path.join(repo, 'snapshots', commit, 'train.jsonl.parquet'), goldens.rows, { intColumns: ['helpfulness', 'correctness'] });
    process.env.HF_HUB_CACHE = cache;
    process.env.HF_HUB_OFFLINE = '1';
  });
  const hf = HfSourceSchema.parse({ path: 'nvidia/HelpSteer2', format: 'helpsteer2' });

  it('pairs the best and worst response per prompt, shuffled with seed 0, min(1024, n // 10) held out', async () => {
    const splits = await loadHelpSteer2Splits(hf, { testSize: 0, seed: 0 });
    expect(splits.train.map(triple)).toEqual(goldens.train);
    expect(splits.test?.map(triple)).toEqual(goldens.test);
  });

  it('feeds a reward model too (the reference builder is a ComparisonDatasetBuilder for both)', async () => {
    const built = await buildChatDatasets({ hf: { path: 'nvidia/HelpSteer2', format: 'helpsteer2' }, comparisons: { swap: true }, batch_size: 4 }, 'tiny-qwen3');
    // Batches of 4 comparisons, each trained in both orders.
    expect(built.train.length).toBe(Math.floor(goldens.train.length / 4));
    expect(built.train.getBatch(0)).toHaveLength(8);
    expect(built.test).toBeDefined();
  });

  it('builds DPO batches from them, and names the config path of what it cannot do', async () => {
    const built = await buildPreferenceDatasets({ hf: { path: 'nvidia/HelpSteer2', format: 'helpsteer2' }, batch_size: 4 }, 'tiny-qwen3');
    expect(built.train.length).toBe(Math.floor(goldens.train.length / 4));
    expect(built.test?.length).toBe(1);
    expect(built.train.getBatch(0).datums).toHaveLength(8);
    await expect(buildPreferenceDatasets({ hf: { path: 'nvidia/HelpSteer2', format: 'helpsteer2', streaming: true }, batch_size: 4 }, 'tiny-qwen3')).rejects.toThrow(/dataset\.hf\.streaming: format "helpsteer2"/);
    await expect(buildPreferenceDatasets({ hf: { path: 'nvidia/HelpSteer2', format: 'helpsteer2', columns: { score: 'helpfulness' } }, batch_size: 4 }, 'tiny-qwen3')).rejects.toThrow(
      /dataset\.hf\.columns\.score: format "helpsteer2" has no field "score"/,
    );
  });
});
