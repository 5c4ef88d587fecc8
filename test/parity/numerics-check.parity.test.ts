// The rl_numerics_check env beside the reference's (tinker-cookbook 0.6.1, run at test time):
// counting, answer parsing, the reward and its metrics, page cutting, prompts, the hidden page
// count, the read_page spec, and whole problems drawn from the same Python Random over one corpus.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PythonRandom } from '../../src/cookbook/python-random.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import {
  buildCountingPrompt,
  closenessReward,
  countingReward,
  CountingTaskSchema,
  countWord,
  hiddenNumPages,
  parseAnswer,
  readPageTool,
  REJECTED_CALL_MESSAGE,
  sampleProblem,
  splitPages,
} from '../../src/cookbook/rl/envs/numerics-check.js';
import { errorToolResult } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const CORPUS = readFileSync(join(import.meta.dirname, '..', '..', 'data', 'rl_numerics_check', 'corpus.txt'), 'utf8');
const COUNTS: Array<[string, string]> = [["Time's time-based TIME, times lifetime 2time", 'time'], ['Über until UNTIL_until', 'until'], ['', 'when']];
const ANSWERS = ['Answer: 3 ... answer : **1,204**', 'ANSWER:-7', 'the answer is 5', 'Answer: ** 12', 'answer:\n\n 1,2,3,'];
const CLOSENESS: Array<[number, number, number]> = [[10, 10, 0.2], [9, 10, 0.2], [13, 10, 0.2], [1, 0, 2], [0, 7, 1]];
const PAGES: Array<[string, number, number, number]> = [['aaa bbb ccc ddd', 0, 3, 5], ['a\u00a0b\u2003c  d\n\ne', 1, 2, 2], [CORPUS.slice(0, 5000), 100, 4, 700]];
const TASKS = [{}, { num_pages_hint: 'range' }, { word_hint: 'first_last' }, { word_hint: 'hidden', words: ['until'], num_pages_hint: 'range', num_pages_min: 3, num_pages_max: 9 }];
const PROMPTS: Array<[Record<string, unknown>, string, number]> = TASKS.map((t, i) => [t, 'until', 30 + i]);
const HIDDEN = [{}, { num_pages_min: 3, num_pages_max: 9 }, { num_pages_min: 5, num_pages_max: 5 }, { secret_num_pages: 30 }];
const PROBLEMS = [
  { seed: 0, task: { num_pages_min: 3, num_pages_max: 4, page_chars: 600 } },
  { seed: 12345, task: { num_pages_min: 2, num_pages_max: 6, page_chars: 1500, words: ['when', 'only', 'after'] } },
  { seed: 7, task: { num_pages_hint: 'range', num_pages_min: 1, num_pages_max: 3, page_chars: 2000 } },
];
const REWARDS: Array<{ num_pages: number; true_count: number; pages_read: number[]; invalid: number; tolerance: number; history: Message[] }> = [
  { num_pages: 2, true_count: 3, pages_read: [1, 2], invalid: 0, tolerance: 0.2, history: [{ role: 'assistant', content: 'Answer: 3' }] },
  { num_pages: 3, true_count: 40, pages_read: [1, 4], invalid: 2, tolerance: 0.2, history: [{ role: 'assistant', content: 'x' }, { role: 'tool', content: errorToolResult(REJECTED_CALL_MESSAGE).messages[0].content }, { role: 'assistant', content: 'Answer: 37' }] },
  { num_pages: 1, true_count: 0, pages_read: [], invalid: 0, tolerance: 1, history: [{ role: 'assistant', content: 'no idea' }] },
];

let reference: Record<string, unknown> & { problems: Array<Record<string, unknown>>; rewards: Array<[number, Record<string, number>]> };

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ counts: COUNTS, answers: ANSWERS, closeness: CLOSENESS, pages: PAGES, prompts: PROMPTS, hidden: HIDDEN, problems: PROBLEMS, corpus: CORPUS, rewards: REWARDS });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'numerics_check_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

describe('rl_numerics_check beside the reference', () => {
  it('count_word, parse_answer, closeness_reward, split_pages', () => {
    expect(COUNTS.map(([t, w]) => countWord(t, w))).toEqual(reference.counts);
    expect(ANSWERS.map(parseAnswer)).toEqual(reference.answers);
    expect(CLOSENESS.map(([p, t, tol]) => closenessReward(p, t, tol))).toEqual(reference.closeness);
    expect(PAGES.map(([c, s, n, k]) => splitPages(c, s, n, k))).toEqual(reference.pages);
  });

  it('prompts, the hidden page count, the read_page spec and the rejection message', () => {
    expect(PROMPTS.map(([t, w, n]) => buildCountingPrompt(CountingTaskSchema.parse(t), w, n))).toEqual(reference.prompts);
    expect(HIDDEN.map((t) => hiddenNumPages(CountingTaskSchema.parse(t)))).toEqual(reference.hidden);
    expect(JSON.stringify(readPageTool([], { pagesRead: new Set(), invalidPageRequests: 0 }).toSpec())).toBe(JSON.stringify(reference.spec));
    expect(errorToolResult(REJECTED_CALL_MESSAGE).messages[0].content).toBe(reference.rejected);
  });

  it('problems drawn from the same Random over the same corpus', () => {
    const ours = PROBLEMS.map(({ seed, task }) => {
      const p = sampleProblem(new PythonRandom(seed), CORPUS, CountingTaskSchema.parse(task));
      return { word: p.word, num_pages: p.numPages, pages: p.pages, prompt: p.prompt, true_count: p.trueCount };
    });
    expect(ours).toEqual(reference.problems);
  });

  it("CountingReward's reward and metrics", async () => {
    const ours = await Promise.all(
      REWARDS.map((r) => {
        const problem = { word: 'x', numPages: r.num_pages, pages: [], prompt: '', trueCount: r.true_count };
        return countingReward(problem, { pagesRead: new Set(r.pages_read), invalidPageRequests: r.invalid }, r.tolerance)(r.history);
      }),
    );
    expect(ours).toEqual(reference.rewards);
  });
});
