// Reward-model data and preference model: Python random.Random parity (goldens from CPython), the
// reference's comparison rendering token for token (goldens from tinker-cookbook 0.6.1 on the shipped
// Qwen3 tokenizer), the seeded 50% swap by position in the run, and the A/B/Tie score mapping.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Datum, ModelInput, SampleResponse, SamplingParams } from '../../../src/backends/types.js';
import { comparisonGenerationPrompt, comparisonModelInputWeights } from '../../../src/cookbook/preference/comparison-renderer.js';
import { swapComparison, type ComparisonRow, type LabeledComparison } from '../../../src/cookbook/preference/comparisons.js';
import { PreferenceModelFromChatRenderer, preferenceScore } from '../../../src/cookbook/preference/preference-model.js';
import { PythonRandom, PythonRandomStream } from '../../../src/cookbook/python-random.js';
import { RewardModelDataset, rewardModelDatum } from '../../../src/cookbook/preference/reward-model-dataset.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import { buildChatDatasets, ChatDatasetConfigSchema } from '../../../src/cookbook/supervised/dataset.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

const fixtures = path.join(import.meta.dirname, '..', '..', 'fixtures');
const root = path.join(import.meta.dirname, '..', '..', '..');
const rng = JSON.parse(readFileSync(path.join(fixtures, 'python_random_goldens.json'), 'utf8'));
const rm = JSON.parse(readFileSync(path.join(fixtures, 'rm_goldens.json'), 'utf8')) as Array<{
  renderer: string;
  comparison: LabeledComparison['comparison'];
  label: LabeledComparison['label'];
  max_length: number | null;
  tokens: number[];
  weights: number[];
  datum_input: number[];
  datum_targets: number[];
  datum_weights: number[];
  generation_prompt: number[];
}>;

let tok: Tokenizer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
});

describe('Python random.Random', () => {
  it.each(rng.cases.map((c: { seed: number }) => [c.seed, c]) as Array<[number, any]>)('seed %s matches CPython draw for draw', (seed, c) => {
    const r = new PythonRandom(seed);
    const draws = Array.from({ length: 1500 }, () => r.random());
    expect(draws.slice(0, 20)).toEqual(c.first);
    expect(draws[1499]).toBe(c.at_1499);
    expect(draws.reduce((a, b) => a + b, 0)).toBe(c.sum);
  });

  it('the stream gives the k-th draw wherever it is read from', () => {
    const s = new PythonRandomStream(0);
    expect(s.at(63) < 0.5).toBe(rng.swap_first_64[63]);
    expect(Array.from({ length: 64 }, (_, k) => s.at(k) < 0.5)).toEqual(rng.swap_first_64);
  });
});

describe('comparison rendering (reference ComparisonRendererFromChatRenderer)', () => {
  it.each(rm.map((c, i) => [i, c.renderer, c.label, c]))('case %s (%s, label %s): tokens, weights, datum and generation prompt', (_i, name, _l, c: any) => {
    const renderer = getRenderer(name as string, tok);
    const lc: LabeledComparison = { comparison: c.comparison, label: c.label };
    const { modelInput, weights } = comparisonModelInputWeights(renderer, lc);
    expect(modelInputToInts(modelInput)).toEqual(c.tokens);
    expect(weights).toEqual(c.weights);
    const datum = rewardModelDatum(renderer, lc, c.max_length, 'x.jsonl:1');
    expect(modelInputToInts(datum.model_input)).toEqual(c.datum_input);
    expect(datum.loss_fn_inputs.target_tokens.data).toEqual(c.datum_targets);
    expect(datum.loss_fn_inputs.weights.data).toEqual(c.datum_weights);
    expect(modelInputToInts(comparisonGenerationPrompt(renderer, lc.comparison))).toEqual(c.generation_prompt);
  });
});

const u = (content: string) => ({ role: 'user' as const, content });
const a = (content: string) => ({ role: 'assistant' as const, content });
const rows: ComparisonRow[] = Array.from({ length: 10 }, (_, i) => ({
  comparison: { prompt_conversation: [u(`q${i}`)], completion_A: [a(`good ${i}`)], completion_B: [a(`bad ${i}`)] },
  label: 'A',
  line: i + 1,
}));
const labelOf = (_renderer: ReturnType<typeof getRenderer>, d: Datum) => tok.decode([d.loss_fn_inputs.target_tokens.data.at(-1)!]);

describe('reward-model dataset', () => {
  it('swap=false: the row trained k-th in the run is swapped when random.Random(0)\'s k-th draw < 0.5, across batches and epochs', async () => {
    const renderer = getRenderer('qwen3_disable_thinking', tok);
    const ds = new RewardModelDataset(rows, renderer, { batchSize: 4, maxLength: null, swap: false, at: (r) => `f:${r.line}` });
    expect(ds.length).toBe(2);
    const seen: string[] = [];
    const expected: string[] = [];
    let k = 0;
    for (let epoch = 0; epoch < 3; epoch++) {
      for (let b = 0; b < ds.length; b++) {
        const batch = await ds.batchAt(epoch, b);
        expect(batch).toHaveLength(4);
        for (const d of batch) {
          seen.push(labelOf(renderer, d));
          expected.push(rng.swap_first_64[k++] ? 'B' : 'A'); // every row's label is A; a swap flips it
        }
      }
    }
    expect(seen).toEqual(expected);
    // A fresh dataset asked for one batch of a later epoch (a resumed run) swaps the same way.
    const fresh = new RewardModelDataset(rows, renderer, { batchSize: 4, maxLength: null, swap: false, at: (r) => `f:${r.line}` });
    expect((await fresh.batchAt(2, 1)).map((d) => labelOf(renderer, d))).toEqual(expected.slice(20, 24));
  });

  it('swap=true: each row gives [as written, swapped]', async () => {
    const renderer = getRenderer('qwen3_disable_thinking', tok);
    const ds = new RewardModelDataset(rows, renderer, { batchSize: 4, maxLength: null, swap: true, at: (r) => `f:${r.line}` });
    const batch = ds.getBatch(0); // before any setEpoch: the rows in file order
    expect(batch).toHaveLength(8);
    expect(batch.map((d) => labelOf(renderer, d))).toEqual(['A', 'B', 'A', 'B', 'A', 'B', 'A', 'B']);
    expect(batch[0]).toEqual(rewardModelDatum(renderer, rows[0], null, 'f:1'));
    expect(batch[1]).toEqual(rewardModelDatum(renderer, swapComparison(rows[0]), null, 'f:1'));
  });

  it('is an SL dataset source: dataset.comparisons with file_path, shuffled and split like every dataset', async () => {
    const { train, test } = await buildChatDatasets(
      { file_path: 'data/example_preferences.jsonl', comparisons: { swap: false }, batch_size: 8, test_size: 4, renderer_name: 'qwen3_disable_thinking' },
      'tiny-qwen3',
      { baseDir: root },
    );
    expect(train.length).toBe(12); // 96 rows after holding out 4
    expect(test?.getBatch(0)).toHaveLength(4);
    const batch = await train.batchAt(0, 0);
    expect(batch.every((d) => d.loss_fn_inputs.weights.data.filter((w) => w > 0).length === 1)).toBe(true);
  });

  it('reads comparisons from an hf source (a local folder, format "comparison")', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rm-hf-'));
    writeFileSync(path.join(dir, 'train.jsonl'), rows.map((r) => JSON.stringify({ comparison: r.comparison, label: r.label })).join('\n') + '\n');
    const { train } = await buildChatDatasets({ hf: { path: dir }, comparisons: { swap: true }, batch_size: 5, renderer_name: 'qwen3_disable_thinking' }, 'tiny-qwen3');
    expect(train.length).toBe(2);
    const batch = await train.batchAt(0, 1);
    expect(batch).toHaveLength(10);
    expect(batch.map((d) => labelOf(getRenderer('qwen3_disable_thinking', tok), d))).toEqual(['A', 'B', 'A', 'B', 'A', 'B', 'A', 'B', 'A', 'B']);
    expect(ChatDatasetConfigSchema.safeParse({ hf: { path: dir, streaming: true }, comparisons: {}, batch_size: 1 }).error?.issues[0].path).toEqual(['hf', 'streaming']);
  });

  it('config errors name the path', async () => {
    const bad = (extra: Record<string, unknown>) => ChatDatasetConfigSchema.safeParse({ comparisons: {}, batch_size: 2, ...extra });
    expect(bad({ builtin: 'example_chat' }).error?.issues[0]).toMatchObject({ path: ['builtin'], message: expect.stringMatching(/file_path or hf/) });
    expect(bad({ file_path: 'x', train_on_what: 'all_assistant_messages' }).error?.issues[0]).toMatchObject({ path: ['train_on_what'] });
    expect(bad({ file_path: 'x', comparisons: { swap: 'yes' } }).error?.issues[0].path).toEqual(['comparisons', 'swap']);
    const dir = mkdtempSync(path.join(tmpdir(), 'rm-data-'));
    writeFileSync(path.join(dir, 'c.jsonl'), `${JSON.stringify({ comparison: rows[0].comparison, label: 'A' })}\n{"comparison": {}, "label": "A"}\n`);
    await expect(buildChatDatasets({ file_path: 'c.jsonl', comparisons: {}, batch_size: 1 }, 'tiny-qwen3', { baseDir: dir })).rejects.toThrow(/c\.jsonl:2: "comparison" is missing/);
  });
});

describe('preference model (reference PreferenceModelFromChatRenderer)', () => {
  class ScriptedSampler {
    calls: Array<{ prompt: number[]; params: SamplingParams }> = [];
    constructor(private readonly outputs: number[][]) {}
    async sample(prompt: ModelInput, _n: number, params: SamplingParams): Promise<SampleResponse> {
      this.calls.push({ prompt: modelInputToInts(prompt), params });
      return { sequences: [{ tokens: this.outputs[this.calls.length - 1], logprobs: null, stop_reason: 'length' }] } as unknown as SampleResponse;
    }
  }

  it('maps "A" → −1, "B" → 1, "Tie" → 0, anything else → 0 with a warning; one greedy token on the generation prompt', async () => {
    const renderer = getRenderer('qwen3_disable_thinking', tok);
    const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });
    const sampler = new ScriptedSampler([enc('A'), enc(' B'), enc('Tie'), enc('C')]);
    const warnings: string[] = [];
    let seed = 100;
    const pm = new PreferenceModelFromChatRenderer(renderer, tok, sampler, () => seed++, (m) => warnings.push(m));
    const scores = [];
    for (let i = 0; i < 4; i++) scores.push(await pm.score(rows[i].comparison));
    expect(scores).toEqual([-1, 1, 0, 0]);
    expect(warnings).toEqual(["Invalid output preference model output: 'C'"]);
    expect(sampler.calls[0].prompt).toEqual(modelInputToInts(comparisonGenerationPrompt(renderer, rows[0].comparison)));
    expect(sampler.calls.map((c) => c.params)).toEqual([100, 101, 102, 103].map((s) => ({ temperature: 0, max_tokens: 1, seed: s })));
    expect([preferenceScore('A'), preferenceScore('B'), preferenceScore('Tie'), preferenceScore('a')]).toEqual([-1, 1, 0, null]);
  });
});

describe('comparison win rate (reference ComparisonEvaluator)', () => {
  it('judges reference (A) vs policy (B) both ways; (r_AB − r_BA + 2)/4 per comparison; mean and stderr', async () => {
    const { comparisonWinRate } = await import('../../../src/cookbook/preference/win-rate.js');
    // The policy answers "long answer" to prompt 0, "x" otherwise; the model prefers the longer completion.
    const policyFor = (i: number) => async () => ({ role: 'assistant' as const, content: i === 0 ? 'long answer' : 'x' });
    const calls: string[] = [];
    const model = {
      score: async (c: LabeledComparison['comparison']) => {
        const [la, lb] = [String(c.completion_A[0].content).length, String(c.completion_B[0].content).length];
        calls.push(`${c.completion_A[0].content}|${c.completion_B[0].content}`);
        return Math.sign(lb - la);
      },
    };
    const comparisons = [0, 1, 2].map((i) => ({ prompt_conversation: [u(`q${i}`)], completion_A: [a('ref')], completion_B: [a('ignored')] }));
    const out = await comparisonWinRate(comparisons, policyFor, model);
    // Scores: 1 (policy wins both ways), 0, 0 → mean 1/3, stderr = std([1,0,0], ddof=1)/√3.
    expect(out.win_rate).toBe(1 / 3);
    expect(out.stderr).toBe(Math.sqrt(((1 - 1 / 3) ** 2 + 2 * (1 / 3) ** 2) / 2) / Math.sqrt(3));
    expect(calls.slice(0, 2)).toEqual(['ref|long answer', 'long answer|ref']);
  });
});
