// The AIME and HMMT suites on their own (the reference comparison is test/parity/eval-math): the
// shipped samples load and grade their own answers right, bad rows are errors naming the row, and
// the pieces of the graders (Decimal's reading of AIME answers, the LaTeX comparison) on cases
// whose verdicts are fixed by the reference's semantics.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBenchmark } from '../../../src/cookbook/eval/benchmark-data.js';
import { aimeInteger } from '../../../src/cookbook/eval/suites/aime.js';
import { toAsciiDigits } from '../../../src/cookbook/eval/suites/extract.js';
import { checkMathEqual, normalizeLatexAnswer } from '../../../src/cookbook/eval/suites/hmmt.js';
import { NO_EFFECTS, SUITES } from '../../../src/cookbook/eval/suites/index.js';
import { writeParquet } from '../hf-fixtures.js';
import { latexEqual } from '../../../src/cookbook/eval/suites/latex-equal.js';
import { parseLatexAnswer } from '../../../src/cookbook/eval/suites/latex-parse.js';

const MATH_SUITES = ['aime', 'aime_2025', 'aime_2026', 'hmmt_feb_2025', 'hmmt_nov_2025'];
const dir = mkdtempSync(path.join(tmpdir(), 'math-benchmarks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const load = (suite: string) => loadBenchmark({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null });

describe('AIME and HMMT suites', () => {
  it('are registered, read MathArena sets (split "train"), and grade the shipped answers boxed as right, a wrong box as wrong', async () => {
    for (const name of MATH_SUITES) {
      const suite = SUITES[name];
      expect(suite.dataset.hubId).toBe(`MathArena/${name === 'aime' ? 'aime_2025' : name}`);
      const { items } = await load(name);
      expect(items.length).toBe(4);
      for (const item of items) {
        expect(item.id.startsWith(`${name}_`)).toBe(true);
        expect(await suite.grade(`so \\boxed{${suite.expected(item)}}`, item, NO_EFFECTS)).toMatchObject({ correct: true });
        expect(await suite.grade('so \\boxed{1000}', item, NO_EFFECTS)).toMatchObject({ correct: false });
      }
    }
    // `aime` is the reference's alias of aime_2025: the same problems under its own ids.
    const [alias, y2025] = [await load('aime'), await load('aime_2025')];
    expect(alias.items.map((i) => i.target)).toEqual(y2025.items.map((i) => i.target));
    expect(alias.items[0].id.replace('aime_', 'aime_2025_')).toBe(y2025.items[0].id);
  });

  it("take the reference's recommended system prompt when the eval sets none; \"\" is none", async () => {
    for (const name of [...MATH_SUITES, 'gsm8k', 'math500']) {
      expect((await load(name)).items[0].messages[0], name).toEqual({ role: 'system', content: 'Put your final answer in \\boxed{}.' });
      const none = await loadBenchmark({ suite: name, data_path: null, data_name: null, data_split: null, limit: 1, system_prompt: '' });
      expect(none.items[0].messages.map((m) => m.role)).toEqual(['user']);
    }
  });

  it("read MathArena's parquet layout: AIME answers as int64 (beyond 2^53 too), HMMT answers as LaTeX strings", async () => {
    const aimeDir = path.join(dir, 'aime_2026');
    writeParquet(path.join(aimeDir, 'data/train-00000-of-00001.parquet'), [
      { problem_idx: 1, problem: 'P1', answer: 42 },
      { problem_idx: 2, problem: 'P2', answer: 2 ** 60 },
    ], { intColumns: ['problem_idx', 'answer'] });
    const aimeItems = (await loadBenchmark({ suite: 'aime_2026', data_path: aimeDir, data_name: null, data_split: null, limit: null, system_prompt: null })).items;
    expect(aimeItems.map((i) => i.target)).toEqual([42, 2 ** 60]);
    const hmmtDir = path.join(dir, 'hmmt_nov_2025');
    writeParquet(path.join(hmmtDir, 'data/train-00000-of-00001.parquet'), [{ problem_idx: 1, problem: 'Q', answer: '\\frac{1}{2}' }], { intColumns: ['problem_idx'] });
    const [item] = (await loadBenchmark({ suite: 'hmmt_nov_2025', data_path: hmmtDir, data_name: null, data_split: null, limit: null, system_prompt: null })).items;
    expect(item.target).toBe('\\frac{1}{2}');
    expect(await SUITES.hmmt_nov_2025.grade('\\boxed{0.5}', item, NO_EFFECTS)).toEqual({ correct: true, extracted: '0.5' });
  });

  it('a row without a problem or a usable answer is an error naming the row', () => {
    expect(() => SUITES.aime_2025.parseRow({ answer: 5 }, 'f.jsonl:3', null)).toThrow('f.jsonl:3: "problem" must be a non-empty string');
    expect(() => SUITES.aime_2026.parseRow({ problem: 'P', answer: 'none' }, 'f.jsonl:4', null)).toThrow('f.jsonl:4: "answer" must be an integer (got "none")');
    expect(() => SUITES.aime.parseRow({ problem: 'P', answer: null }, 'f.jsonl:5', null)).toThrow('f.jsonl:5: "answer" must be an integer');
    expect(() => SUITES.hmmt_feb_2025.parseRow({ problem: 'P', answer: '  ' }, 'f.jsonl:6', null)).toThrow('f.jsonl:6: "answer" must be a non-empty answer');
    expect(SUITES.aime.parseRow({ Problem: 'P', Answer: ' 042 ' }, 'x', 'S').target).toBe(42);
  });

  it("reads an AIME answer as Python's Decimal does: finite, integral, 0 to 999", () => {
    const cases: Array<[string, number | null]> = [
      ['65', 65], ['065', 65], ['6.000', 6], [' 6 ', 6], ['-0', 0], ['0.00', 0], ['1e2', 100], ['1_0', 10], ['٦٥', 65],
      ['999', 999], ['1000', null], ['-4', null], ['12.5', null], ['inf', null], ['nan', null], ['x', null], ['', null], ['1.2.3', null], ['10e-1', 1], ['1e-1', null],
    ];
    expect(cases.map(([s]) => aimeInteger(s))).toEqual(cases.map(([, v]) => v));
    expect(toAsciiDigits('١٢٣ ۴ ३ 𝟗')).toBe('123 4 3 9');
  });

  it("compares HMMT answers as the reference: normalised strings, floats within 1e-6, then parse_latex's reading", () => {
    expect(normalizeLatexAnswer(' $\\text{5} \\left( x \\right)$.. ')).toBe('5 ( x )');
    expect(checkMathEqual('\\frac{1}{2}', '0.5')).toBe(true);
    expect(checkMathEqual('2\\sqrt{3}', '\\sqrt{12}')).toBe(true);
    expect(checkMathEqual('\\frac{1+\\sqrt{5}}{2}', '1.6180339887')).toBe(true);
    expect(checkMathEqual('\\frac{1+\\sqrt{5}}{2}', '1.618')).toBe(false);
    // sympy's parser makes \pi and e plain symbols, so no decimal equals them.
    expect(checkMathEqual('\\pi', '3.14159265358979')).toBe(false);
    expect(checkMathEqual('2\\pi', '\\pi+\\pi')).toBe(true);
    // Its non-strict parse stops where the expression cannot go on: "1,2" is 1.
    expect(parseLatexAnswer('1,2')).toEqual(parseLatexAnswer('1'));
    expect(checkMathEqual('1, 2', '1,2')).toBe(true);
    expect(checkMathEqual('(1,2)', '(2,1)')).toBe(false);
    expect(latexEqual('.5', '0.5')).toBe(false);
    expect(latexEqual('x^2-1', '(x-1)(x+1)')).toBe(true);
    expect(latexEqual('x^2+1', '(x-1)(x+1)')).toBe(false);
    // Symbols are tried at points of both signs and complex ones: |x| is not x.
    expect(latexEqual('|x|', 'x')).toBe(false);
    expect(latexEqual('\\sin x \\cos x', '\\frac{\\sin(2x)}{2}')).toBe(true);
    expect(latexEqual('a_1+1', '1+a_{1}')).toBe(true);
    // Integers compare exactly, beyond what a double holds.
    expect(latexEqual('2^{100}', '1267650600228229401496703205376')).toBe(true);
    expect(latexEqual('10^{20}+1', '100000000000000000000')).toBe(false);
    // A parse that backtracks over a split `\tfrac12` reads the same digits again.
    expect(latexEqual('|\\sqrt{3}|+\\sqrt{3}/\\sqrt{3}+\\tfrac12', '\\tfrac12+1+\\sqrt{3}')).toBe(true);
    // Sums and products in another order are equal where no value can be computed (sympy's canonical order).
    expect(latexEqual('\\sqrt{5}+\\pi!', '\\pi!+\\sqrt{5}')).toBe(true);
    // …but nothing holding a division by zero equals anything (sympy's zoo).
    expect(latexEqual('\\frac{1}{0}+x', 'x+\\frac{1}{0}')).toBe(false);
    // An exponent that does not parse ends the expression before its `^`, as in sympy's parser.
    expect(latexEqual('2^{1,2}', '2')).toBe(true);
    // Input nested past the stack is unequal (sympy's recursive conversion fails there too), not a crash.
    expect(latexEqual('x'.repeat(20_000), 'x')).toBe(false);
    expect(latexEqual('('.repeat(20_000) + '1', '1')).toBe(false);
  });
});
