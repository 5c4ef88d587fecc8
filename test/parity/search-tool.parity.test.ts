// The search_tool recipe beside the reference's (tinker-cookbook 0.6.1, run at test time): answer
// normalisation and the TextAnswerReward on the same strings, the task instructions, the search
// tool's spec, and the tool message for the same retrieved documents (the reference's come from
// Chroma, ours from the BM25 index; the documents our index retrieves are handed to it).
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../../src/cookbook/renderers/types.js';
import { normalizeAnswer, textAnswerReward } from '../../src/cookbook/rl/envs/search-answer.js';
import { loadSearchCorpus, SEARCH_TASK_INSTRUCTIONS, searchTool } from '../../src/cookbook/rl/envs/search-tool.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const corpus = loadSearchCorpus(join(REPO, 'data/search_tool/corpus.jsonl'), 'corpus.jsonl');

const NORMALIZE = [
  'Paris',
  '  The  Eiffel-Tower!  ',
  'A an THE theatre, an apple',
  'theatre-the-end',
  'éthe the_x aé the',
  'São\u00a0Paulo\u3000city\u2028x\u0085y\ufeffz',
  'İstanbul ΣΊΣΥΦΟΣ',
  "rock 'n' roll (1950s) – “quoted”",
  'tab\there\x1cfs\x1fus',
  '',
];
const QUERIES = ['capital of Kenya', 'chemical symbol of the element with atomic number 79', 'currency Japan'];
const REWARDS: Array<{ gold: string[]; format_coef: number; history: Message[] }> = [
  { gold: ['Nairobi'], format_coef: 0.1, history: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'Answer: the Nairobi.' }] },
  { gold: ['Nairobi'], format_coef: 0.1, history: [{ role: 'assistant', content: 'Answer: Mombasa' }] },
  { gold: ['Nairobi'], format_coef: 0.3, history: [{ role: 'assistant', content: 'It is Nairobi' }] },
  { gold: ['x'], format_coef: 0.1, history: [{ role: 'assistant', content: 'Answer: x Answer: x' }] },
  { gold: [], format_coef: 0.1, history: [{ role: 'assistant', content: 'Answer: x' }] },
  { gold: ['y'], format_coef: 0.1, history: [{ role: 'user', content: 'Answer: y' }] },
  { gold: ['New Delhi', 'Delhi'], format_coef: 0.1, history: [{ role: 'assistant', content: 'Answer: Answer' }, { role: 'tool', content: 'r' }, { role: 'assistant', content: 'So:\nAnswer:  delhi\n' }] },
];

let reference: {
  normalized: string[];
  rewards: Array<[number, Record<string, number>]>;
  instructions: string;
  spec: unknown;
  search_messages: unknown[];
};

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ normalize: NORMALIZE, rewards: REWARDS, search: { queries: QUERIES, documents: corpus.query(QUERIES, 3) } });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'search_tool_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

describe('search_tool beside the reference', () => {
  it('normalize_answer: the same strings, Unicode whitespace and word boundaries included', () => {
    expect(NORMALIZE.map(normalizeAnswer)).toEqual(reference.normalized);
  });

  it('TextAnswerReward: the same reward and metrics', async () => {
    const ours = await Promise.all(REWARDS.map((c) => textAnswerReward(c.gold, c.format_coef)(c.history)));
    expect(ours).toEqual(reference.rewards);
  });

  it("the task instructions and the search tool's spec, key order included", () => {
    expect(SEARCH_TASK_INSTRUCTIONS).toBe(reference.instructions);
    expect(JSON.stringify(searchTool(corpus).toSpec())).toBe(JSON.stringify(reference.spec));
  });

  it('the tool message for the same documents', async () => {
    const ours = await searchTool(corpus, 3).run({ arguments: { query_list: QUERIES }, callId: 'c1' });
    expect(ours.messages).toEqual(reference.search_messages);
  });
});
