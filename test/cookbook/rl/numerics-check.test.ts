// The rl_numerics_check env: counting, answer parsing, the closeness reward, page cutting, problem
// sampling, and an episode stepped with a real renderer — one page per turn, extra calls rejected,
// the count graded, the extension rate reported.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { PythonRandom } from '../../../src/cookbook/python-random.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import {
  buildCountingEnv,
  buildNumericsCheckDatasets,
  closenessReward,
  CountingTaskSchema,
  countWord,
  parseAnswer,
  REJECTED_CALL_MESSAGE,
  sampleProblem,
  splitPages,
  type CountingEnvGroupBuilder,
} from '../../../src/cookbook/rl/envs/numerics-check.js';
import { InitialObservationOverflow, type InitialObservation } from '../../../src/cookbook/rl/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
let tok: Tokenizer;
let renderer: Renderer;
let imEnd: number;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
  imEnd = tok.tokenToId('<|im_end|>');
});
const action = (text: string) => [...tok.encode(text, { addSpecialTokens: false }), imEnd];
const readPage = (page: number) => `<tool_call>\n{"name": "read_page", "arguments": {"page": ${page}}}\n</tool_call>`;

describe('counting pieces', () => {
  it('whole words of ASCII letters, any case', () => {
    expect(countWord("Time's time-based TIME, times lifetime 2time", 'time')).toBe(4);
    expect(countWord('', 'time')).toBe(0);
  });

  it('the integer after the last "Answer:"', () => {
    expect(parseAnswer('Answer: 3 ... answer : **1,204**')).toBe(1204);
    expect(parseAnswer('ANSWER:-7')).toBe(-7);
    expect(parseAnswer('the answer is 5')).toBeNull();
  });

  it('closeness: 1 when exact, 0 at the tolerance', () => {
    expect(closenessReward(10, 10, 0.2)).toBe(1);
    expect(closenessReward(9, 10, 0.2)).toBeCloseTo(0.5, 12);
    expect(closenessReward(13, 10, 0.2)).toBe(0);
    expect(closenessReward(1, 0, 2)).toBeCloseTo(0.5, 12); // a true count of 0 divides by 1
  });

  it('pages end at the next whitespace and are stripped', () => {
    expect(splitPages('aaa bbb ccc ddd', 0, 3, 5)).toEqual(['aaa bbb', 'ccc ddd', '']);
  });

  it('task validation names the problem', () => {
    expect(CountingTaskSchema.safeParse({ word_hint: 'first_last', words: ['time', 'twice'] }).error?.issues[0].message).toMatch(/share first and last letters/);
    expect(CountingTaskSchema.safeParse({ word_hint: 'hidden' }).success).toBe(false);
    expect(CountingTaskSchema.safeParse({ words: ['light'] }).success).toBe(false);
    expect(CountingTaskSchema.safeParse({ num_pages_min: 5, num_pages_max: 4 }).success).toBe(false);
  });

  it('a problem: pages up to max_turns, the count over the first num_pages', () => {
    const corpus = Array.from({ length: 400 }, (_, i) => `Line ${i}: after the rain, time ${i % 3 === 0 ? 'after' : 'before'} time.`).join('\n');
    const task = CountingTaskSchema.parse({ num_pages_min: 2, num_pages_max: 3, page_chars: 200, words: ['after', 'time'] });
    const p = sampleProblem(new PythonRandom(7), corpus, task);
    expect(p.pages).toHaveLength(7);
    expect([2, 3]).toContain(p.numPages);
    expect(p.trueCount).toBe(p.pages.slice(0, p.numPages).reduce((n, page) => n + countWord(page, p.word), 0));
    expect(p.trueCount).toBeGreaterThan(0);
    expect(p.prompt).toContain(`count how many times the word "${p.word}" appears`);
    expect(p.prompt).toContain(`The document has ${p.numPages} pages`);
    expect(() => sampleProblem(new PythonRandom(7), corpus.slice(0, 1000), task)).toThrow(/corpus has 1000 characters/);
  });
});

describe('the env', () => {
  it('one page per turn, extra calls rejected, the count graded with the reference metrics', async () => {
    const task = CountingTaskSchema.parse({ num_pages_min: 2, num_pages_max: 2, page_chars: 100, words: ['time'] });
    const pages = ['time one time', 'two time', 'past the end time', 'more', 'more', 'more'];
    const problem = { word: 'time', numPages: 2, pages, prompt: 'Count "time".', trueCount: 3 };
    const env = buildCountingEnv(problem, renderer, task, 8192, 64);
    const first = await env.initialObservation();
    expect(first).not.toBeInstanceOf(InitialObservationOverflow);
    expect(tok.decode(modelInputToInts((first as InitialObservation).ob))).toContain('"name": "read_page"');

    const t1 = await env.step(action(`${readPage(1)}\n${readPage(2)}`));
    expect(t1.episodeDone).toBe(false);
    expect(t1.logs!.tool_result_0).toBe('[Page 1]\ntime one time');
    expect(JSON.parse(t1.logs!.tool_result_1 as string)).toEqual({ error: REJECTED_CALL_MESSAGE });
    const t2 = await env.step(action(readPage(9)));
    expect(JSON.parse(t2.logs!.tool_result_0 as string)).toEqual({ error: 'Page 9 is not available.' });
    await env.step(action(readPage(2)));
    const last = await env.step(action('I counted.\nAnswer: 3'));
    expect(last.episodeDone).toBe(true);
    expect(last.reward).toBe(1);
    expect(last.metrics).toMatchObject({
      answer_parsed: 1,
      true_count: 3,
      num_pages: 2,
      pages_read: 2,
      read_all_pages: 1,
      read_past_end: 0,
      rejected_tool_calls: 1,
      invalid_page_requests: 1,
      exact_match: 1,
      abs_error: 0,
      'stop/completed': 1,
    });
    // qwen3 renders a one-call turn as it was sampled; the two-call turn's "\n" between the calls
    // comes back as text content ahead of both, so 2 of the 3 turns that went on extend.
    expect(last.metrics!.extension_rate).toBeCloseTo(2 / 3, 12);
  });

  it('extension_rate falls to 0 with a renderer that rewrites history', async () => {
    // qwen3_disable_thinking prefills an empty think block that the history then leaves out.
    const task = CountingTaskSchema.parse({ num_pages_min: 2, num_pages_max: 2, page_chars: 100, words: ['time'] });
    const env = buildCountingEnv({ word: 'time', numPages: 2, pages: ['a', 'b'], prompt: 'Count', trueCount: 0 }, getRenderer('qwen3_disable_thinking', tok), task, 8192, 64);
    await env.initialObservation();
    await env.step(action(readPage(1)));
    const last = await env.step(action('Answer: 0'));
    expect(last.metrics).toMatchObject({ extension_rate: 0, exact_match: 1, pages_read: 1, read_all_pages: 0 });
  });

  it('the dataset draws the same problems for the same seed and batch', () => {
    const args = { batch_size: 2, group_size: 3, task: { num_pages_min: 3, num_pages_max: 4, page_chars: 600 } };
    const { train } = buildNumericsCheckDatasets(args, renderer, REPO);
    const again = buildNumericsCheckDatasets(args, renderer, REPO).train;
    const problems = (i: number, d = train) => d.getBatch(i).map((b) => (b as CountingEnvGroupBuilder).problem);
    expect(problems(0)).toEqual(problems(0, again));
    expect(problems(1)).not.toEqual(problems(0));
    expect(train.length).toBe(1000);
    expect(() => buildNumericsCheckDatasets({ ...args, task: { page_chars: 1_000_000 } }, renderer, REPO)).toThrow(/corpus has/);
  });
});
