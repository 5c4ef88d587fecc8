// The search_tool recipe's pieces: answer normalisation and grading, the search tool over the
// shipped corpus's BM25 index, an episode stepped with a real renderer (a tool call, its recorded
// result, the graded answer), the dataset builder and the offline eval.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import type { TokenCompleter } from '../../../src/cookbook/rl/completers.js';
import { extractAnswer, normalizeAnswer, textAnswerReward } from '../../../src/cookbook/rl/envs/search-answer.js';
import { searchOfflineEval } from '../../../src/cookbook/rl/envs/search-eval.js';
import { buildSearchToolDatasets, loadSearchCorpus, loadSearchData, SearchEnvGroupBuilder, searchTool, type SearchCorpus } from '../../../src/cookbook/rl/envs/search-tool.js';
import type { RolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import type { Env, InitialObservation, StepResult } from '../../../src/cookbook/rl/types.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
let tok: Tokenizer;
let renderer: Renderer;
let imEnd: number;
let corpus: SearchCorpus;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
  imEnd = tok.tokenToId('<|im_end|>');
  corpus = loadSearchCorpus(join(REPO, 'data/search_tool/corpus.jsonl'), 'corpus.jsonl');
});
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const action = (text: string) => [...tok.encode(`<think>\nx\n</think>\n\n${text}`, { addSpecialTokens: false }), imEnd];
const searchCall = (...queries: string[]) => `<tool_call>\n${JSON.stringify({ name: 'search', arguments: { query_list: queries } })}\n</tool_call>`;

describe('answer grading', () => {
  it('normalises as SQuAD: lowercase, ASCII punctuation and articles out, whitespace collapsed', () => {
    expect(normalizeAnswer('  The  Eiffel-Tower!  ')).toBe('eiffeltower');
    expect(normalizeAnswer('A an THE theatre')).toBe('theatre');
    expect(normalizeAnswer('São\u00a0Paulo\u3000city')).toBe('são paulo city');
    expect(normalizeAnswer('éthe the_x')).toBe('éthe thex'); // punctuation goes before articles: "the_x" → "thex"
  });

  it('the answer is the text after the single "Answer:"', () => {
    expect(extractAnswer('I think.\nAnswer:  Paris \n')).toBe('Paris');
    expect(extractAnswer('Answer: a Answer: b')).toBeNull();
    expect(extractAnswer('answer: Paris')).toBeNull();
  });

  it('reward = format_coef·(format − 1) + correct, on the last assistant message', async () => {
    const reward = textAnswerReward(['Nairobi', 'Nairobi City']);
    expect(await reward([{ role: 'assistant', content: 'Answer: the nairobi.' }])).toEqual([1, { format: 1, correct: 1 }]);
    expect(await reward([{ role: 'assistant', content: 'Answer: Mombasa' }])).toEqual([0, { format: 1, correct: 0 }]);
    const [r, m] = await reward([{ role: 'assistant', content: 'Answer: Nairobi' }, { role: 'user', content: 'more?' }, { role: 'assistant', content: 'Nairobi' }]);
    expect(r).toBeCloseTo(-0.1, 12);
    expect(m).toEqual({ format: 0, correct: 0 });
    expect(await reward([{ role: 'user', content: 'Answer: Nairobi' }])).toEqual([0, { format: 0, correct: 0 }]);
    expect(await textAnswerReward([])([{ role: 'assistant', content: 'Answer: x' }])).toEqual([0, { format: 1, correct: 0 }]);
  });
});

describe('the search tool', () => {
  it('ranks the shipped corpus: the passage that answers comes first', async () => {
    expect(corpus.documents.length).toBeGreaterThanOrEqual(200);
    expect(corpus.query(['capital of Kenya'], 3)[0][0]).toContain('Nairobi');
    expect(corpus.query(['chemical symbol of gold'], 3)[0][0]).toContain('symbol Au');
  });

  it("answers in the reference's format: each query, then its documents numbered from 1", async () => {
    const result = await searchTool(corpus, 2).run({ arguments: { query_list: ['currency of Japan', 'atomic number 26'] }, callId: 'c1' });
    const text = result.messages[0].content as string;
    const [q1, q2] = text.split(/(?=Query: atomic)/);
    expect(q1).toMatch(/^Query: currency of Japan\nDocument 1:\n"Economy of Japan"\nThe official currency of Japan is the yen\..*\nDocument 2:\n/s);
    expect(q2).toMatch(/^Query: atomic number 26\nDocument 1:\n"Iron.*\nDocument 2:\n.*\n$/s);
    expect(result.messages[0]).toMatchObject({ role: 'tool', tool_call_id: 'c1', name: 'search' });
  });

  it('an empty query list or a blank query is an execution error, as the reference\'s embedding call refuses them', async () => {
    for (const query_list of [[], ['ok', '  ']]) {
      const r = await searchTool(corpus).run({ arguments: { query_list } });
      expect(r.metadata.error).toBe('execution_failed');
    }
  });
});

describe('the env', () => {
  async function episode(env: Env, turns: number[][]): Promise<StepResult[]> {
    const out: StepResult[] = [];
    for (const t of turns) out.push(await env.step(t));
    return out;
  }

  it('declares the tool, runs the search once per position (recorded), and grades the answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'search-env-'));
    dirs.push(dir);
    const ctx = { once: runStoreOnce(new RunStore(join(dir, 'run')), [0, 2, 0]) } as RolloutContext;
    const datum = { question: 'What is the capital of Kenya?', answer: ['Nairobi'], data_source: 'single_hop' };
    const opts = { maxTurns: 5, formatCoef: 0.1, maxTrajectoryTokens: 32768, maxGenerationTokens: null, contextOverflowReward: -0.1, nResults: 3 };
    const builder = new SearchEnvGroupBuilder(renderer, corpus, datum, 2, opts).withContext(ctx);
    expect(builder.loggingTags()).toEqual(['single_hop']);
    const [first, second] = await builder.makeEnvs();
    const prompt = tok.decode(modelInputToInts(((await first.initialObservation()) as InitialObservation).ob));
    expect(prompt).toContain('You are an expert assistant who solves tasks using a Wikipedia search tool.');
    expect(prompt).toContain('"name": "search"');
    expect(prompt).toContain('What is the capital of Kenya?');

    const steps = await episode(first, [action(searchCall('capital of Kenya')), action('It is Nairobi.\nAnswer: Nairobi')]);
    expect(steps[0]).toMatchObject({ reward: 0, episodeDone: false });
    expect(steps[0].logs!.tool_call_0).toMatch(/^search\(\{"query_list": ?\["capital of Kenya"\]\}\)$/);
    expect(steps[0].logs!.tool_result_0).toMatch(/^Query: capital of Kenya\nDocument 1:\n.*Nairobi/s);
    expect(tok.decode(modelInputToInts(steps[0].nextObservation))).toContain('<tool_response>\nQuery: capital of Kenya');
    expect(steps[1]).toMatchObject({ reward: 1, episodeDone: true, metrics: { format: 1, correct: 1, 'stop/completed': 1 } });
    // The second episode answers without searching and wrongly: format only.
    await second.initialObservation();
    const [wrong] = await episode(second, [action('Answer: Mombasa')]);
    expect(wrong).toMatchObject({ reward: 0, metrics: { format: 1, correct: 0 } });
    expect(readdirSync(join(dir, 'run', '.cookbook', 'store', 'side_effects', '0_2_0')).filter((f) => f.endsWith('.json'))).toEqual(['tool_episode_0_turn_1_call_0.json']);
  });

  it('the dataset: shuffled training questions in batches, tagged by source; a test sample per source', () => {
    const { train, test } = buildSearchToolDatasets({ batch_size: 4, group_size: 2, max_eval_samples: 3 }, renderer, REPO);
    const all = loadSearchData(join(REPO, 'data/search_tool/train.jsonl'), 'train.jsonl');
    expect(train.length).toBe(Math.floor(all.length / 4));
    const batch = train.getBatch(0) as SearchEnvGroupBuilder[];
    expect(batch).toHaveLength(4);
    expect(batch.map((b) => b.datum)).not.toEqual(all.slice(0, 4)); // shuffled with the seed
    expect(train.getBatch(0).map((b) => (b as SearchEnvGroupBuilder).datum)).toEqual(batch.map((b) => b.datum)); // deterministically
    const tags = test!.getBatch(0).map((b) => b.loggingTags()[0]);
    expect(tags).toEqual(['single_hop', 'single_hop', 'single_hop', 'multi_hop', 'multi_hop', 'multi_hop']);
    expect(() => buildSearchToolDatasets({ batch_size: 4, group_size: 2, n_results: 0 }, renderer, REPO)).toThrow(/dataset\.args\.n_results/);
  });

  it('the offline eval: accuracy per source of the last turn\'s correct', async () => {
    // A policy that always answers "Europe": right exactly on the questions whose gold is Europe.
    const policy: TokenCompleter = async () => ({ tokens: action('Answer: Europe'), maybeLogprobs: null, stopReason: 'stop' });
    const data = loadSearchData(join(REPO, 'data/search_tool/test.jsonl'), 'test.jsonl');
    const result = await searchOfflineEval(policy, renderer, corpus, data, { maxEvalSamples: 1000 });
    for (const source of ['single_hop', 'multi_hop']) {
      const items = data.filter((d) => d.data_source === source);
      const europe = items.filter((d) => d.answer.includes('Europe')).length;
      expect(result[source]).toEqual({ total_samples: items.length, total_correct: europe, accuracy: europe / items.length });
    }
    expect(result.single_hop.total_correct).toBeGreaterThan(0);
  });
});
