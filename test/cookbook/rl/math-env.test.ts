// §3.1 MathEnv, GSM8K answer extraction and loading, the shipped sample file, and the dataset
// configs / builders.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataFormatError } from '../../../src/cookbook/errors.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { buildRLDatasets, GSM8K_SAMPLE_PATH, RLDatasetConfigSchema, rlRepoRoot } from '../../../src/cookbook/rl/datasets.js';
import { ArithmeticDataset } from '../../../src/cookbook/rl/envs/arithmetic.js';
import { Gsm8kDataset } from '../../../src/cookbook/rl/envs/gsm8k.js';
import { extractGsm8kFinalAnswer, loadGsm8kJsonl, MathEnv, parseGsm8kJsonl, standardFewshotPrefix } from '../../../src/cookbook/rl/envs/math.js';
import { gradeAnswer } from '../../../src/cookbook/rl/grading.js';
import { numpyPermutation } from '../../../src/cookbook/shuffle.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-llama3');
  renderer = getRenderer('role_colon', tok);
});
const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });

describe('extractGsm8kFinalAnswer', () => {
  it.each([
    ['Work...\n#### 1,234', '1234'],
    ['####: 55', '55'],
    ['The total is #### 99 dollars.', '99 dollars.'],
    ['#### 1\nmore\n#### 2\ntrailing', '2'],
    ['  #### -7  ', '-7'],
    ['a #### 1,000 b', '1,000 b'],
  ])('%j → %j', (text, want) => {
    expect(extractGsm8kFinalAnswer(text)).toBe(want);
  });
  it('raises without a final answer', () => {
    expect(() => extractGsm8kFinalAnswer('no answer')).toThrow('No GSM8K final answer found');
  });
});

describe('GSM8K loader', () => {
  it('parses rows and names file and line in errors', () => {
    const rows = parseGsm8kJsonl('{"question": "Q1?", "answer": "x\\n#### 3"}\n\n{"question": "Q2?", "answer": "#### 1,500"}\n', 'f.jsonl');
    expect(rows.map((r) => [r.question, r.answer, r.line])).toEqual([
      ['Q1?', '3', 1],
      ['Q2?', '1500', 3],
    ]);
    expect(() => parseGsm8kJsonl('{"question": "Q"}\n{bad', 'f.jsonl')).toThrow('f.jsonl:1: "answer" must be a string');
    expect(() => parseGsm8kJsonl('\n{bad', 'f.jsonl')).toThrow(/^f\.jsonl:2: invalid JSON/);
    expect(() => parseGsm8kJsonl('{"question": "Q", "answer": "42"}', 'g.jsonl')).toThrow(DataFormatError);
    expect(() => parseGsm8kJsonl('{"question": "Q", "answer": "42"}', 'g.jsonl')).toThrow('g.jsonl:1: "answer" has no final answer line');
    expect(() => parseGsm8kJsonl('[1]', 'g.jsonl')).toThrow('g.jsonl:1: expected a JSON object');
  });

  it('the shipped sample has ~40 problems whose answers are numbers', async () => {
    const rows = await loadGsm8kJsonl(path.join(rlRepoRoot(), GSM8K_SAMPLE_PATH), GSM8K_SAMPLE_PATH);
    expect(rows.length).toBeGreaterThanOrEqual(40);
    for (const r of rows) {
      expect(r.answer).toMatch(/^-?\d+(\.\d+)?$/);
      expect(gradeAnswer(r.answer, r.answer)).toBe(true);
    }
    expect(new Set(rows.map((r) => r.question)).size).toBe(rows.length);
  });

  it('a missing file is reported with its path', async () => {
    await expect(loadGsm8kJsonl('/nonexistent/x.jsonl', 'x.jsonl')).rejects.toThrow(/^x\.jsonl: cannot read/);
  });
});

describe('MathEnv', () => {
  it('asks with the boxed suffix and grades boxed answers', async () => {
    const env = new MathEnv('What is 1/2 + 1/4?', '\\frac{3}{4}', renderer);
    expect(env.getQuestion()).toBe('What is 1/2 + 1/4? Write your answer in \\boxed{} format.');
    expect(env.checkFormat('so \\boxed{0.75}')).toBe(true);
    expect(env.checkFormat('0.75')).toBe(false);
    expect(env.checkAnswer('so \\boxed{0.75}')).toBe(true);
    expect(env.checkAnswer('so \\boxed{0.7}')).toBe(false);
    expect(env.checkAnswer('0.75')).toBe(false);
    const ok = await env.step(enc(' \\boxed{0.75}\n\nUser:'));
    expect(ok.reward).toBe(1);
    expect(ok.metrics).toEqual({ format: 1, correct: 1 });
    const unboxed = await env.step(enc(' 0.75\n\nUser:'));
    expect(unboxed.metrics).toEqual({ format: 0, correct: 0 });
    expect(unboxed.reward).toBeCloseTo(-0.1, 12);
  });
  it('the standard few-shot prefix', () => {
    const p = standardFewshotPrefix();
    expect(p[0]).toEqual({ role: 'user', content: "How many r's are in strawberry? Write your answer in \\boxed{} format." });
    expect(p[1].content).toMatch(/^Let's spell the word out.*positions 3, 8, and 9\. \\boxed\{3\}$/);
  });
});

describe('datasets', () => {
  it('config schema defaults', () => {
    expect(RLDatasetConfigSchema.parse({ kind: 'arithmetic', batch_size: 4, group_size: 2 })).toEqual({
      kind: 'arithmetic',
      batch_size: 4,
      group_size: 2,
      n_batches: 100,
      include_fewshot: true,
    });
    expect(RLDatasetConfigSchema.parse({ kind: 'gsm8k', batch_size: 4, group_size: 2 })).toEqual({
      kind: 'gsm8k',
      batch_size: 4,
      group_size: 2,
      seed: 0,
      convo_prefix: 'standard',
    });
    const bad = RLDatasetConfigSchema.safeParse({ kind: 'gsm8k', batch_size: 0, group_size: 2 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0].path).toEqual(['batch_size']);
    expect(RLDatasetConfigSchema.safeParse({ kind: 'math', batch_size: 1, group_size: 1 }).success).toBe(false);
  });

  it('arithmetic: no test set, renderer from the model or the override', async () => {
    const built = await buildRLDatasets(
      { kind: 'arithmetic', batch_size: 2, group_size: 3, n_batches: 7 },
      { model_name: 'tiny-llama3', renderer_name: 'role_colon' },
    );
    expect(built.train).toBeInstanceOf(ArithmeticDataset);
    expect(built.train.length).toBe(7);
    expect(built.test).toBeUndefined();
    expect(built.renderer.name).toBe('role_colon');
  });

  it('gsm8k: train shuffled with numpy permutation(seed), ceil batches, test in order with group size 1', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rl-gsm8k-'));
    const lines = Array.from({ length: 5 }, (_, i) => JSON.stringify({ question: `Q${i}?`, answer: `#### ${i}` }));
    writeFileSync(path.join(dir, 'test.jsonl'), lines.join('\n') + '\n');
    const built = await buildRLDatasets(
      { kind: 'gsm8k', batch_size: 2, group_size: 4, seed: 3, test_file_path: 'test.jsonl' },
      { model_name: 'tiny-llama3', renderer_name: 'role_colon' },
      { baseDir: dir },
    );
    const sample = await loadGsm8kJsonl(path.join(rlRepoRoot(), GSM8K_SAMPLE_PATH));
    const train = built.train as Gsm8kDataset;
    expect(train.length).toBe(Math.ceil(sample.length / 2));
    const perm = numpyPermutation(3, sample.length);
    expect(train.problems.map((p) => p.question)).toEqual(perm.map((i) => sample[i].question));
    const envs = await train.getBatch(0)[0].makeEnvs();
    expect(envs).toHaveLength(4);
    expect((envs[0] as MathEnv).convoPrefix).toEqual(standardFewshotPrefix());

    const test = built.test as Gsm8kDataset;
    expect(test.length).toBe(3);
    const last = test.getBatch(2);
    expect(last).toHaveLength(1); // partial last batch
    const testEnvs = await last[0].makeEnvs();
    expect(testEnvs).toHaveLength(1);
    expect((testEnvs[0] as MathEnv).problem).toBe('Q4?');
    expect(() => test.getBatch(3)).toThrow(RangeError);
  });

  it('gsm8k convo_prefix null disables the few-shot prefix', async () => {
    const built = await buildRLDatasets(
      { kind: 'gsm8k', batch_size: 1, group_size: 1, convo_prefix: null },
      { model_name: 'tiny-llama3', renderer_name: 'role_colon' },
    );
    const env = (await built.train.getBatch(0)[0].makeEnvs())[0] as MathEnv;
    expect(env.convoPrefix).toEqual([]);
  });
});
