// Answer extraction and grading of the benchmark suites (the reference's eval/benchmarks/_common.py
// rules): boxed answers, GSM8K's fallbacks, multiple-choice letters, MATH-500's math grader.
import { describe, expect, it } from 'vitest';
import { checkGsm8k, extractFirstBoxed, extractGsm8kAnswer, extractMcqAnswer, extractNumber } from '../../../src/cookbook/eval/suites/extract.js';
import { SUITES } from '../../../src/cookbook/eval/suites/index.js';

describe('extractFirstBoxed', () => {
  it('takes the first boxed answer with nested braces', () => {
    expect(extractFirstBoxed('so \\boxed{\\frac{1}{2}} and later \\boxed{3}')).toBe('\\frac{1}{2}');
  });
  it('is null without a box or with unbalanced braces', () => {
    expect(extractFirstBoxed('the answer is 4')).toBeNull();
    expect(extractFirstBoxed('\\boxed{\\frac{1}{2}')).toBeNull();
  });
});

describe('GSM8K extraction', () => {
  it('prefers \\boxed, then ####, then "answer is", then bold, then the last number', () => {
    expect(extractGsm8kAnswer('first 3 then \\boxed{\\$1,250} then 7')).toBe('1250');
    expect(extractGsm8kAnswer('work 12 \n#### 42 dollars')).toBe('42');
    expect(extractGsm8kAnswer('so 3 + 4; the answer is $1,000.')).toBe('1000');
    expect(extractGsm8kAnswer('steps 10 and **$25.50** total, 3 cups')).toBe('25.50');
    expect(extractGsm8kAnswer('5 apples and -3 pears')).toBe('-3');
    expect(extractGsm8kAnswer('no numbers here')).toBe('');
  });
  it('extractNumber strips LaTeX text, commands and separators', () => {
    expect(extractNumber('\\text{dollars} 1,234')).toBe('1234');
    expect(extractNumber('\\$ 7.5')).toBe('7.5');
    expect(extractNumber('n/a')).toBe('n/a');
  });
  it('compares numerically within 1e-5, commas in the target ignored', () => {
    expect(checkGsm8k('\\boxed{1125}', '1,125')).toBe(true);
    expect(checkGsm8k('#### 18.000001', '18')).toBe(true);
    expect(checkGsm8k('#### 18.01', '18')).toBe(false);
    expect(checkGsm8k('I cannot tell', '18')).toBe(false);
  });
});

describe('multiple-choice letters', () => {
  it('reads \\boxed{X}, "answer is (X)", then the last standalone letter near the end', () => {
    expect(extractMcqAnswer('\\boxed{c}')).toBe('C');
    expect(extractMcqAnswer('I think the answer is (b).')).toBe('B');
    expect(extractMcqAnswer('Answer: D')).toBe('D');
    expect(extractMcqAnswer('Between A and C, I pick C')).toBe('C');
  });
  it('ignores letters inside words and letters outside the valid set', () => {
    expect(extractMcqAnswer('Because apples are tasty')).toBe('');
    expect(extractMcqAnswer('E is my pick', 'ABCD')).toBe('');
    expect(extractMcqAnswer('\\boxed{E}', 'ABCDE')).toBe('E');
    expect(extractMcqAnswer('Ä B')).toBe('B');
    expect(extractMcqAnswer('ÉA')).toBe('');
  });
});

describe('suite graders', () => {
  const item = (suite: string, row: Record<string, unknown>) => SUITES[suite].parseRow(row, 'x.jsonl:1', null);

  it('gsm8k: the number after #### is the target', async () => {
    const it = item('gsm8k', { question: 'How many?', answer: 'work\n#### 1,125' });
    expect(it.target).toBe('1,125');
    expect(await SUITES.gsm8k.grade('so it is **1125**', it)).toEqual({ correct: true, extracted: '1125' });
  });

  it('math500: the last box of the response against the solution box, by math equivalence', async () => {
    const it = item('math500', { problem: 'Simplify 6/8.', solution: 'It is $\\boxed{\\frac{3}{4}}$.' });
    expect(it.messages[0].content).toBe('Simplify 6/8. Put your final answer in \\boxed{}.');
    expect((await SUITES.math500.grade('maybe \\boxed{1} no: \\boxed{0.75}', it)).correct).toBe(true);
    expect((await SUITES.math500.grade('\\boxed{3/5}', it)).correct).toBe(false);
    expect(await SUITES.math500.grade('three quarters', it)).toEqual({ correct: false, extracted: '' });
  });

  it('mmlu: the reference prompt, the letter of the answer index, accuracy per subject', async () => {
    const it = item('mmlu', { question: 'Q?', subject: 'anatomy', choices: ['a', 'b', 'c', 'd'], answer: 3 });
    expect(it.messages[0].content).toBe('Q?\n\n(A) a\n(B) b\n(C) c\n(D) d\n\nAnswer with just the letter (A, B, C, or D).');
    expect((await SUITES.mmlu.grade('The answer is (D)', it)).correct).toBe(true);
    expect((await SUITES.mmlu.grade('A', it)).correct).toBe(false);
    const r = (group: string, correct: boolean) => ({ index: 0, id: '', group, prompt: '', response: '', expected: '', extracted: '', correct });
    expect(SUITES.mmlu.aggregate!([r('b', true), r('a', false), r('b', false)])).toEqual({ 'a/accuracy': 0, 'b/accuracy': 0.5 });
  });

  it('system prompts come first, as the reference builds messages', () => {
    const it = SUITES.gsm8k.parseRow({ question: 'Q', answer: '#### 1' }, 'x', 'Put your final answer in \\boxed{}.');
    expect(it.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('bad rows are errors naming the row and the field', () => {
    expect(() => item('gsm8k', { question: 'Q', answer: 'no final line' })).toThrow('x.jsonl:1: "answer" has no final answer line');
    expect(() => item('math500', { problem: 'P', solution: 'no box' })).toThrow('x.jsonl:1: "solution" has no \\boxed');
    expect(() => item('mmlu', { question: 'Q', choices: ['a', 'b'], answer: 2 })).toThrow('x.jsonl:1: "answer" must be the index (0-1)');
    expect(() => item('mmlu', { question: 'Q', choices: 'ab', answer: 0 })).toThrow('x.jsonl:1: "choices" must be a list');
    expect(() => item('ifeval', { prompt: 'P', instruction_id_list: ['made:up'], kwargs: [{}] })).toThrow('x.jsonl:1: unknown instruction "made:up"');
    expect(() => item('ifeval', { prompt: 'P', instruction_id_list: ['length_constraints:number_words'], kwargs: [{ relation: 'at least', num_words: null }] })).toThrow(
      'instruction "length_constraints:number_words" needs kwargs "num_words"',
    );
    expect(() => item('ifeval', { prompt: 'P', instruction_id_list: ['length_constraints:number_words'], kwargs: [{ relation: 'about', num_words: 3 }] })).toThrow('"relation" must be one of');
  });
});
