// The math-answer suites (aime, aime_2025, aime_2026, hmmt_feb_2025, hmmt_nov_2025, gsm8k, math500)
// beside the reference's benchmarks (tinker-cookbook 0.6.1, run at test time on the same rows, its
// dataset loader replaced by one serving them): the dataset id and split each reads; each example's
// id, prompt messages and expected answer; the extracted answer and reward for the same responses;
// the aggregate; and HMMT's answer comparison (strings, floats, then sympy's parse_latex, for
// which the reference env carries antlr4) and GSM8K's number check on further pairs. The rows are
// the shipped samples plus edge rows in other column layouts.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadBenchmark, samplesDir, suiteNamed } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import { checkGsm8k, extractGsm8kAnswer } from '../../src/cookbook/eval/suites/extract.js';
import { checkMathEqual } from '../../src/cookbook/eval/suites/hmmt.js';
import { NO_EFFECTS, type EvalItem, type ExampleResult } from '../../src/cookbook/eval/suites/index.js';
import { HfSourceSchema } from '../../src/cookbook/hf/config.js';
import { readRows } from '../../src/cookbook/hf/readers.js';
import { splitFiles } from '../../src/cookbook/hf/source.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

type Row = Record<string, unknown>;

const AIME_RESPONSES = [
  'The answer is \\boxed{65}.',
  '\\boxed{065}',
  '\\boxed{6.0}',
  '\\boxed{ 6 }',
  'So **174** is it',
  '\\boxed{\\text{answer } 4}',
  '\\boxed{1,000}',
  '\\boxed{-4}',
  '\\boxed{}',
  '\\boxed{x}',
  '\\boxed{\\infty}',
  '\\boxed{inf}',
  '\\boxed{nan}',
  '\\boxed{\\frac{12}{2}}',
  '\\boxed{0} and then \\boxed{6}',
  '\\boxed{999}',
  '\\boxed{1000}',
  'answer: 12.50.',
  'The answer is 8.000',
  'answer: 0.00',
  'answer: -0',
  'answer: 6.',
  'answer: -.5',
  'answer: 1.2.3',
  'The answer is ٦٥',
  '#### 144',
  '',
  'no number here',
  'first 3 then 864',
];

// Each HMMT sample is graded on responses aimed at its own answers (sympy's check costs ~0.1 s a pair).
const HMMT_FEB_RESPONSES = [
  '\\boxed{6\\sqrt{3}}',
  '\\boxed{6 \\sqrt 3}',
  '\\boxed{\\sqrt{108}}',
  '\\boxed{10.392304845}',
  '\\boxed{10.3923}',
  '\\boxed{0.75}',
  '\\boxed{\\dfrac34}',
  '$\\boxed{\\left(\\frac{3}{4}\\right)}$',
  '\\boxed{\\text{3/4}}',
  '\\boxed{34.}',
  '\\boxed{34, 35}',
  '\\boxed{a = 34}',
  '\\boxed{\\frac{1+\\sqrt5}{2}}',
  '\\boxed{\\frac{2}{\\sqrt{5}-1}}',
  '\\boxed{}',
  'no box: 34',
];
const HMMT_NOV_RESPONSES = [
  '\\boxed{\\frac{5}{\\sqrt{2}}}',
  '\\boxed{3.5355339059}',
  '\\boxed{\\binom{7}{2}}',
  '\\boxed{ 21 }',
  '\\boxed{21.0}',
  '\\boxed{2^{1/2}}',
  '\\boxed{\\sqrt{2}}',
  '\\boxed{3/8}',
  '\\boxed{0.375}',
  '\\boxed{x}',
  '\\boxed{\\frac{3}{8}} or \\boxed{21}',
];

const GSM8K_RESPONSES = ['\\boxed{18}', 'so **$1,125.00** total', 'The answer is ١٨', '#### 3', 'answer: inf', '\\boxed{nan}', '\\boxed{\\infty}', '18 then 7', ''];
const MATH500_RESPONSES = ['\\boxed{\\frac{1}{2}}', '\\boxed{0.5}', '\\boxed{3} and \\boxed{12}', '\\boxed{(1, 2)}', `\\boxed{${'𝟙'.repeat(250)}}`, '', '\\boxed{x}}'];

const RESPONSES: Record<string, string[]> = {
  aime: AIME_RESPONSES,
  aime_2025: AIME_RESPONSES,
  aime_2026: AIME_RESPONSES,
  hmmt_feb_2025: HMMT_FEB_RESPONSES,
  hmmt_nov_2025: HMMT_NOV_RESPONSES,
  gsm8k: GSM8K_RESPONSES,
  math500: MATH500_RESPONSES,
};

/** Rows the shipped samples do not have (one per case: the reference's Arrow table needs one schema). */
const EDGE: Array<{ suite: string; row: Row }> = [
  { suite: 'aime_2025', row: { question: 'Question column, padded string answer?', answer: ' 042 ' } },
  { suite: 'aime_2025', row: { Problem: 'Capitalised columns, a decimal answer?', Answer: '12.0' } },
  { suite: 'aime_2026', row: { problem: 'expected_answer column?', expected_answer: 7 } },
  { suite: 'aime_2026', row: { problem: 'Answer in words?', answer: 'Answer: 99' } },
  { suite: 'aime', row: { problem: 'Signed answer?', answer: '+5' } },
  { suite: 'hmmt_feb_2025', row: { question: 'Question column, padded answer?', answer: ' \\frac{1}{2} ' } },
  { suite: 'hmmt_nov_2025', row: { problem: 'A numeric answer?', answer: 12 } },
];

const SUITES = ['aime', 'aime_2025', 'aime_2026', 'hmmt_feb_2025', 'hmmt_nov_2025', 'gsm8k', 'math500'] as const;
const SYSTEM = 'You are a careful mathematician.';

const MATH_EQUAL: Array<[string, string]> = [
  ['\\frac{1}{2}', '0.5'],
  ['\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}'],
  ['2\\sqrt{3}', '\\sqrt{12}'],
  ['\\pi', '3.14159'],
  ['2\\pi', '6.283185307179586'],
  ['\\pi r^2', 'r^2\\pi'],
  ['x+1', '1+x'],
  ['x^2-1', '(x-1)(x+1)'],
  ['xy', 'yx'],
  ['a_1+a_2', 'a_2+a_1'],
  ['1,2', '2,1'],
  ['1, 2', '1,2'],
  ['1,000', '1000'],
  ['1\\,000', '1000'],
  ['1, 000', '1000'],
  ['2 3', '23'],
  ['1 . 5', '1.5'],
  ['\\frac 1 2', '0.5'],
  ['\\frac12 3', '1.5'],
  ['x^2 3', 'x^{23}'],
  ['\\log_2 8 9', '\\log_{28} 9'],
  ['\\frac ab', 'a/b'],
  ['\\{1,2\\}', '\\{2,1\\}'],
  ['(1,2)', '(1,2)'],
  ['(1,2)', '(2,1)'],
  ['\\dfrac{3}{4}', '\\frac34'],
  ['\\tfrac{3}{4}', '0.75'],
  ['2^{10}', '1024'],
  ['2^10', '1024'],
  ['10^{-3}', '0.001'],
  ['\\sqrt[3]{8}', '2'],
  ['\\sqrt2', '2^{1/2}'],
  ['\\sqrt{2}', '2^{1/2}'],
  ['e^{i\\pi}', '-1'],
  ['\\log_2 8', '3'],
  ['\\log_{2}{8}', '3'],
  ['\\ln(e)', '1'],
  ['\\binom{5}{2}', '10'],
  ['5!', '120'],
  ['3!!', '720'],
  ['\\infty', '\\infty'],
  ['\\infty', '-\\infty'],
  ['a=5', '5'],
  ['x=1', 'x = 1'],
  ['3\\cdot 4', '12'],
  ['3\\times 4', '12'],
  ['12 \\div 4', '3'],
  ['\\frac{1}{3}', '0.333333333'],
  ['\\frac{1}{3}', '0.33333'],
  ['12^\\circ', '12'],
  ['\\$5', '5'],
  ['5\\%', '5'],
  ['\\text{five}', 'five'],
  ['\\textbf{5}', '5'],
  ['\\mathrm{cm}', 'cm'],
  ['5 \\text{ cm}', '5'],
  ['2+', '2'],
  ['', '1'],
  ['  ', ' '],
  ['-\\frac{1}{2}', '-0.5'],
  ['\\frac{-1}{2}', '-\\frac12'],
  ['\\sqrt{2}', '1.41421356237'],
  ['\\sqrt{2}', '1.414'],
  ['\\sin(\\pi/6)', '1/2'],
  ['\\sin(30)', '\\sin 30'],
  ['\\cos\\frac{\\pi}{3}', '\\frac12'],
  ['1/2', '0.5'],
  ['\\frac{a}{b}', 'a/b'],
  ['\\left(\\frac{1}{2}\\right)', '0.5'],
  ['\\left[\\frac{1}{2}\\right]', '0.5'],
  ['i^2', '-1'],
  ['\\lfloor 2.5\\rfloor', '2'],
  ['\\lceil 2.5\\rceil', '3'],
  ['|{-3}|', '3'],
  ['|-3|', '3'],
  ['3.', '3'],
  ['3..', '3'],
  ['.5', '0.5'],
  ['1e3', '1000'],
  ['1_000', '1000'],
  ['inf', 'infinity'],
  ['nan', 'nan'],
  ['\\frac{9\\sqrt{3}}{4}', '\\frac{27}{4\\sqrt{3}}'],
  ['\\sqrt{8}-\\sqrt{2}', '\\sqrt{2}'],
  ['\\frac{1+\\sqrt{5}}{2}', '1.6180339887'],
  ['\\frac{1+\\sqrt{5}}{2}', '1.618'],
  ['8\\sqrt{2}', '\\sqrt{128}'],
  ['\\alpha+1', '1+\\alpha'],
  ['{5}', '5'],
  ['\\boxed{5}', '5'],
  ['2\\cdot10^{3}', '2000'],
  ['3(4)', '12'],
  ['\\sqrt{-1}', 'i'],
  ['\\frac{1}{0}', '\\frac{2}{0}'],
  ['0^0', '1'],
  ['2^{3}^{2}', '64'],
  ['1+2)', '3'],
  ['(1+2', '3'],
  ['\\frac{\\pi}{2}', '\\frac{1}{2}\\pi'],
  ['\\frac{2}{3}x', '\\frac{2x}{3}'],
  ['\\tan\\theta', '\\frac{\\sin\\theta}{\\cos\\theta}'],
  ['-5', '−5'],
  ['\u00a05', '5\u3000'],
  ['5.', '5'],
  ['50\\text{ degrees}', '50'],
  ['\\text{(A)}', '(A)'],
  ['\\text{\\{1\\}}', '1'],
  ['\\{5\\}', '5'],
  ['[5]', '5'],
  ['\\langle 5\\rangle', '5'],
  ['5^{2}', '25'],
  ['-5^2', '-25'],
  ['(-5)^2', '25'],
  ['2^-1', '0.5'],
  ['2^{-1}', '0.5'],
  ['\\frac{1}{2}+\\frac{1}{3}', '\\frac{5}{6}'],
  ['\\sqrt{\\frac{1}{4}}', '\\frac12'],
  ['\\sqrt[4]{16}', '2'],
  ['\\cdot 5', '5'],
  ['5\\cdot', '5'],
  ['\\exp(0)', '1'],
  ['\\exp 0', '1'],
  ['\\sin 0', '0'],
  ['\\sin x \\cos x', '\\frac{\\sin(2x)}{2}'],
  ['\\log 100', '2'],
  ['\\lg 100', '2'],
  ['\\ln 1', '0'],
  ['x_1', 'x_{1}'],
  ['x_{1}+1', '1+x_1'],
  ['a^2b', 'ba^2'],
  ['0.1+0.2', '0.3'],
  ['\\frac{22}{7}', '3.142857142857'],
  ['4!', '24'],
  ['(3)!', '6'],
  ['\\binom{10}{3}', '120'],
  ['\\dbinom{10}{3}', '120'],
  ['\\frac{10!}{3!7!}', '120'],
  ['2^{2^{3}}', '256'],
  ['\\sqrt{3}^2', '3'],
  ['|x|', 'x'],
  ['\\lfloor x \\rfloor', 'x'],
  ['3 \\div 4', '0.75'],
  ['3:4', '0.75'],
  ['1 \\times 10^{6}', '1000000'],
  ['\\frac{\\sqrt{6}-\\sqrt{2}}{4}', '\\sin 15'],
  ['2\\sqrt{2}+3', '3+\\sqrt{8}'],
  ['\\frac{1}{\\sqrt{3}}', '\\frac{\\sqrt{3}}{3}'],
  ['2^{100}', '1267650600228229401496703205376'],
  ['10^{20}', '100000000000000000000'],
  ['10^{20}+1', '100000000000000000000'],
  ['\\infty', 'oo'],
  ['-\\infty', '-\\infty'],
  ['x', 'X'],
  ['\\Pi', '\\pi'],
  ['|\\sqrt{3}|+\\sqrt{3}/\\sqrt{3}+\\tfrac12', '\\tfrac12+1+\\sqrt{3}'],
  ['\\tfrac12\\cdot \\sqrt{2}+|(\\frac{3}{4})(i)|', '|(\\frac{3}{4})(i)|+\\tfrac12\\cdot \\sqrt{2}'],
  ['\\sqrt{5}+\\pi!', '\\pi!+\\sqrt{5}'],
  ['\\frac{1}{0}+x', 'x+\\frac{1}{0}'],
  ['\\frac{x}{0}+2', '2+\\frac{x}{0}'],
  ['\\frac{1}{0}', '\\frac{2}{0}'],
  ['\\frac{1}{\\lfloor \\tfrac12 \\rfloor}\\cdot 2', '2 \\cdot \\frac{1}{\\lfloor \\tfrac12 \\rfloor}'],
  ['3!+\\lfloor i \\rfloor', '\\lfloor i \\rfloor+3!'],
  ['\\sqrt{2}/\\sqrt{5}!\\cdot 5\\cdot \\alpha', '5\\cdot \\alpha \\cdot \\sqrt{2}/\\sqrt{5}!'],
  ['\\frac{x \\dfrac{5}{6}}{\\lfloor e \\rfloor}\\cdot x/3', 'x/3 \\cdot \\frac{x \\dfrac{5}{6}}{\\lfloor e \\rfloor}'],
  ['\\frac{1}{2}!', '\\frac{\\sqrt{\\pi}}{2}'],
  ['\\binom{5}{2}', '\\frac{5!}{2!3!}'],
  ['2^{1,2}', '2'],
  ['2^', '2'],
  ['1.5.2', '1.5'],
  ['2 . 5 . 1', '2.5'],
  ['e^{1+}', 'e'],
];

const GSM8K_CHECKS: Array<[string, string]> = [
  ['\\boxed{١٨}', '18'],
  ['The answer is 18', '١٨'],
  ['\\boxed{inf}', 'inf'],
  ['\\boxed{nan}', 'nan'],
  ['answer: 1e3', '1000'],
  ['\\boxed{1_000}', '1000'],
  ['**7.**', '7'],
  ['-3 apples', '-3'],
  ['\\boxed{abc}', 'abc'],
  ['\\boxed{abc}', ' abc '],
  ['nothing', ''],
  ['x 2,125 y', '2,125'],
];

interface Case {
  suite: string;
  label: string;
  systemPrompt: string | null;
  graded: boolean;
  rows: Row[];
  items: EvalItem[];
}

interface RefSuite {
  name: string;
  calls: Array<[string, string | null, string]>;
  examples: Array<{ id: string; messages: unknown[]; expected: string; graded: Array<{ reward: number; extracted: string }> }>;
  aggregate: { score: number; num_correct: number; num_examples: number };
}

/** The response example `j` is aggregated on: right, nothing, right, or a wrong box, in turn. */
function assigned(expected: string, j: number): string {
  return [`\\boxed{${expected}}`, 'no idea', `The answer is \\boxed{${expected}}.`, '\\boxed{0}'][j % 4];
}

async function shippedRows(suite: string): Promise<Row[]> {
  const s = suiteNamed(suite);
  const src = HfSourceSchema.parse({ path: join(samplesDir(), s.sample), name: s.dataset.name, split: s.dataset.split });
  const rows: Row[] = [];
  for (const f of await splitFiles(src, s.dataset.split)) for await (const r of readRows(f)) rows.push(r.data);
  return rows;
}

/** The responses a case is graded on: the system prompt does not reach grading, so one case of each sample. */
const gradedOn = (c: Case) => (c.graded ? RESPONSES[c.suite] : []);

let cases: Case[];
let ref: { suites: RefSuite[]; math_equal: boolean[]; gsm8k: Array<[string, boolean]> };

beforeAll(async () => {
  cases = [];
  for (const suite of SUITES) {
    // null: the suite's recommended system prompt (the reference's runner); "": none.
    for (const systemPrompt of [null, '', SYSTEM]) {
      const { items } = await loadBenchmark({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: systemPrompt });
      cases.push({ suite, label: `${suite} sample, system prompt ${JSON.stringify(systemPrompt)}`, systemPrompt, graded: systemPrompt === null, rows: await shippedRows(suite), items });
    }
  }
  for (const [i, { suite, row }] of EDGE.entries()) {
    cases.push({ suite, label: `${suite} edge row ${i}`, systemPrompt: '', graded: true, rows: [row], items: [suiteNamed(suite).parseRow(row, `edge:${i}`, '')] });
  }
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    suites: cases.map((c) => ({
      name: c.suite,
      rows: { [suiteNamed(c.suite).dataset.split]: c.rows },
      system_prompt: c.systemPrompt,
      responses: gradedOn(c),
      assigned: c.items.map((it, j) => assigned(suiteNamed(c.suite).expected(it), j)),
    })),
    math_equal: MATH_EQUAL,
    gsm8k: GSM8K_CHECKS,
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_math_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  ref = JSON.parse(child.stdout);
}, 600_000);

describe('math-answer suites beside the reference', () => {
  it('each reads the dataset id and split the reference ends up loading (MathArena sets hold one split, "train")', () => {
    for (const [i, c] of cases.entries()) {
      const s = suiteNamed(c.suite).dataset;
      expect(ref.suites[i].calls.at(-1), c.label).toEqual([s.hubId, s.name, s.split]);
    }
  });

  it("the same examples: id, prompt messages (system prompt or not), expected answer", () => {
    for (const [i, c] of cases.entries()) {
      const theirs = ref.suites[i].examples;
      expect(theirs.length, c.label).toBe(c.items.length);
      for (const [j, item] of c.items.entries()) {
        expect({ id: item.id, messages: item.messages, expected: suiteNamed(c.suite).expected(item) }, `${c.label} #${j}`).toEqual({
          id: theirs[j].id,
          messages: theirs[j].messages,
          expected: theirs[j].expected,
        });
      }
    }
  });

  it('the same extracted answer and reward for every response', async () => {
    for (const [i, c] of cases.entries()) {
      const suite = suiteNamed(c.suite);
      for (const [j, item] of c.items.entries()) {
        for (const [k, response] of gradedOn(c).entries()) {
          const g = await suite.grade(response, item, NO_EFFECTS);
          const theirs = ref.suites[i].examples[j].graded[k];
          expect({ extracted: g.extracted, reward: g.correct ? 1 : 0 }, `${c.label} #${j} on ${JSON.stringify(response)}`).toEqual(theirs);
        }
      }
    }
  });

  it('the same aggregate (score, num_correct, num_examples)', async () => {
    for (const [i, c] of cases.entries()) {
      const suite = suiteNamed(c.suite);
      const results: ExampleResult[] = [];
      for (const [j, item] of c.items.entries()) {
        const response = assigned(suite.expected(item), j);
        const g = await suite.grade(response, item, NO_EFFECTS);
        results.push({ index: j, id: item.id, prompt: '', response, expected: suite.expected(item), ...g });
      }
      const ours = aggregateResults(suite, results);
      expect({ score: ours.score, num_correct: ours.num_correct, num_examples: ours.num_examples }, c.label).toEqual(ref.suites[i].aggregate);
    }
  });

  it("HMMT's answer comparison on further pairs: normalised strings, floats, then parse_latex", () => {
    const ours = MATH_EQUAL.map(([a, b]) => checkMathEqual(a, b));
    const diffs = MATH_EQUAL.flatMap((p, i) => (ours[i] === ref.math_equal[i] ? [] : [{ pair: p, ours: ours[i], reference: ref.math_equal[i] }]));
    expect(diffs).toEqual([]);
    // The cases exercise both verdicts, and the symbolic step (a pair no string or float check settles).
    expect(ref.math_equal.filter(Boolean).length).toBeGreaterThan(20);
    expect(ref.math_equal.filter((x) => !x).length).toBeGreaterThan(20);
  });

  it("GSM8K's extraction and check on further pairs (digits of other scripts, inf/nan, exponents)", () => {
    expect(GSM8K_CHECKS.map(([r, e]) => [extractGsm8kAnswer(r), checkGsm8k(r, e)])).toEqual(ref.gsm8k);
  });
});
