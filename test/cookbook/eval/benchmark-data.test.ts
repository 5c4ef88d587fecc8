// Benchmark data from local files in the public datasets' layouts: the shipped samples, a full set
// in parquet shards (openai/gsm8k's layout), configs chosen by name (cais/mmlu), `limit`, and bad
// rows or folders refused with errors naming the file and line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBenchmark, type BenchmarkDataOptions } from '../../../src/cookbook/eval/benchmark-data.js';
import { BenchmarkEvaluatorSchema, EvalConfigSchema } from '../../../src/cookbook/eval/benchmark-config.js';
import { EvaluatorsSchema } from '../../../src/cookbook/eval/custom-sampling.js';
import { SUITES } from '../../../src/cookbook/eval/suites/index.js';
import { gsm8kFolder, writeJsonl } from '../hf-fixtures.js';

const dir = mkdtempSync(path.join(tmpdir(), 'benchmark-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opts = (suite: string, more: Partial<BenchmarkDataOptions> = {}): BenchmarkDataOptions => ({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null, ...more });
const mmluRow = (q: string, subject: string) => ({ question: q, subject, choices: ['w', 'x', 'y', 'z'], answer: 1 });

describe('loading benchmark data', () => {
  it('every suite has a shipped sample in its public layout', async () => {
    for (const name of Object.keys(SUITES)) {
      const { items, source } = await loadBenchmark(opts(name));
      expect(items.length).toBeGreaterThanOrEqual(4);
      expect(source).toMatch(new RegExp(`data/eval/${name}($|/)`));
      expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    }
  });

  it('reads a full set in parquet shards (openai/gsm8k: configs main/socratic, split test) and keeps the first `limit` rows', async () => {
    const root = gsm8kFolder(path.join(dir, 'gsm8k'));
    const all = await loadBenchmark(opts('gsm8k', { data_path: root }));
    expect(all.items.map((i) => i.target)).toEqual(['14', '16']);
    expect((await loadBenchmark(opts('gsm8k', { data_path: root, data_split: 'train', limit: 3 }))).items.map((i) => i.target)).toEqual(['2', '4', '6']);
  });

  it('chooses a config by name (cais/mmlu: "all" by default, or one subject)', async () => {
    const root = path.join(dir, 'mmlu');
    writeJsonl(path.join(root, 'all', 'test-00000-of-00001.jsonl'), [mmluRow('Q1', 'anatomy'), mmluRow('Q2', 'virology')]);
    writeJsonl(path.join(root, 'virology', 'test-00000-of-00001.jsonl'), [mmluRow('Q2', 'virology')]);
    expect((await loadBenchmark(opts('mmlu', { data_path: root }))).items.map((i) => i.group)).toEqual(['anatomy', 'virology']);
    expect((await loadBenchmark(opts('mmlu', { data_path: root, data_name: 'virology' }))).items.map((i) => i.group)).toEqual(['virology']);
    await expect(loadBenchmark(opts('mmlu', { data_path: root, data_name: 'law' }))).rejects.toThrow('no config "law"');
  });

  it('a bad row names its file and line; an empty split and an unknown suite are errors too', async () => {
    const root = path.join(dir, 'ifeval');
    writeJsonl(path.join(root, 'ifeval_input_data.jsonl'), [
      { key: 1, prompt: 'P', instruction_id_list: ['punctuation:no_comma'], kwargs: [{}] },
      { key: 2, prompt: 'P', instruction_id_list: ['keywords:existence'], kwargs: [{ keywords: null }] },
    ]);
    await expect(loadBenchmark(opts('ifeval', { data_path: root }))).rejects.toThrow('ifeval_input_data.jsonl:2: instruction "keywords:existence" needs kwargs "keywords"');
    await expect(loadBenchmark(opts('ifeval', { data_path: root, limit: 1 }))).resolves.toMatchObject({ items: [{ id: 'ifeval_1' }] });
    writeJsonl(path.join(dir, 'empty', 'test.jsonl'), []);
    await expect(loadBenchmark(opts('math500', { data_path: path.join(dir, 'empty') }))).rejects.toThrow('no math500 examples in split "test"');
    await expect(loadBenchmark(opts('nosuch'))).rejects.toThrow(`unknown suite "nosuch" (available: ${Object.keys(SUITES).join(', ')})`);
  });
});

describe('configs', () => {
  it('eval config: the reference BenchmarkConfig defaults, errors naming the field', () => {
    const cfg = EvalConfigSchema.parse({ model: 'm', suite: 'gsm8k' });
    expect(cfg).toMatchObject({ max_tokens: 32768, temperature: 0.6, limit: null, data_path: null, system_prompt: null, seed: 0 });
    expect(EvalConfigSchema.safeParse({ model: 'm', suite: 'gsm9k' }).error?.issues[0].path).toEqual(['suite']);
  });

  it('evaluator entries: custom and benchmark side by side; two entries reporting the same metric are refused', () => {
    const parsed = EvaluatorsSchema.parse([{ kind: 'custom_sampling', file_path: 'x.jsonl' }, { kind: 'benchmark', suite: 'gsm8k' }]);
    expect(parsed[1]).toEqual(BenchmarkEvaluatorSchema.parse({ kind: 'benchmark', suite: 'gsm8k' }));
    expect(parsed[1]).toMatchObject({ limit: 100, name: null });
    const dup = EvaluatorsSchema.safeParse([{ kind: 'benchmark', suite: 'gsm8k' }, { kind: 'benchmark', suite: 'gsm8k', limit: 5 }]);
    expect(dup.error?.issues[0]).toMatchObject({ path: [1, 'name'], message: expect.stringContaining('eval/gsm8k/score') });
    expect(EvaluatorsSchema.safeParse([{ kind: 'benchmark', suite: 'gsm8k' }, { kind: 'benchmark', suite: 'gsm8k', name: 'gsm8k_small' }]).success).toBe(true);
  });
});
