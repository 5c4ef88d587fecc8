// §3.3 grading: extract_boxed, the mathd normaliser, split_tuple, grade_answer verdicts
// (string path exact; symbolic checks through the Compute Engine) and safe_grade.
import { describe, expect, it } from 'vitest';
import {
  areEqualUnderCas,
  extractBoxed,
  gradeAnswer,
  normalizeAnswer,
  normalizeForGrading,
  safeGrade,
  splitTuple,
} from '../../../src/cookbook/rl/grading.js';
import { latexToText } from '../../../src/cookbook/rl/latex-text.js';

describe('extractBoxed', () => {
  it.each([
    ['The answer is \\boxed{42}', '42'],
    ['\\boxed{\\frac{1}{2}}', '\\frac{1}{2}'],
    ['\\boxed{1} and \\boxed{2}', '2'],
    ['\\boxed 7', '7'],
    ['so \\boxed 7 then \\boxed 8', '7'],
    ['\\boxed{}', ''],
    ['{\\boxed{a{b}c}}', 'a{b}c'],
  ])('%s → %s', (text, want) => {
    expect(extractBoxed(text)).toBe(want);
  });
  it('raises on no box and on an unmatched }', () => {
    expect(() => extractBoxed('no boxed answer here')).toThrow('No boxed strings found');
    expect(() => extractBoxed('oops } \\boxed{1}')).toThrow('Unmatched }');
  });
});

describe('normalizeAnswer (mathd)', () => {
  it.each([
    ['  42  ', '42'],
    ['\\text{hello}', 'hello'],
    ['\\frac12', '\\frac{1}{2}'],
    ['\\frac1{72}', '\\frac{1}{72}'],
    ['\\dfrac{3}{4}', '\\frac{3}{4}'],
    ['\\tfrac{3}{4}', '\\frac{3}{4}'],
    ['0.5', '\\frac{1}{2}'],
    ['.5', '\\frac{1}{2}'],
    ['3/4', '\\frac{3}{4}'],
    ['03/4', '03/4'],
    ['\\sqrt2', '\\sqrt{2}'],
    ['\\left( 1, 2 \\right)', '(1,2)'],
    ['90^\\circ', '90'],
    ['90^{\\circ}', '90'],
    ['\\$5', '5'],
    ['50\\%', '50'],
    ['5 \\text{ cm}', '5'],
    ['x = 3', '3'],
    ['abc = 3', 'abc=3'],
    ['1\n2', '12'],
    ['a\\!b', 'ab'],
    ['', ''],
  ])('%j → %j', (input, want) => {
    expect(normalizeAnswer(input)).toBe(want);
  });
  it('returns the stripped input when the pipeline fails, and null for null', () => {
    expect(normalizeAnswer(' 1 \\text{ cm} 2 \\text{ cm} ')).toBe('1 \\text{ cm} 2 \\text{ cm}');
    expect(normalizeAnswer(' x\\sqrt')).toBe('x\\sqrt');
    expect(normalizeAnswer(null)).toBeNull();
  });
});

describe('the second normaliser and split_tuple', () => {
  it.each([
    ['\\text{Yes}', 'yes'],
    ['5.0', '5'],
    ['1,000', '1000'],
    ['10 meters', '10'],
    ['3 hours', '3'],
    ['2 million', '2*10^6'],
    ['{7}', '7'],
    ['7 3/4', '7+3/4'],
    ['\\frac{3}{4}', '3/4'],
    ['\\sqrt{2}', 'sqrt(2)'],
    ['2\\pi', '2pi'],
    ['1 or 2', '1,2'],
  ])('%j → %j', (input, want) => {
    expect(normalizeForGrading(input)).toBe(want);
  });
  it('split_tuple', () => {
    expect(splitTuple('1,000')).toEqual(['1000']);
    expect(splitTuple('(1, 2)')).toEqual(['1', '2']);
    expect(splitTuple('[a,b]')).toEqual(['a', 'b']);
    expect(splitTuple('((1),2)')).toEqual(['((1),2)']);
    expect(splitTuple('')).toEqual([]);
  });
  it('latexToText keeps grouping for compound fractions', () => {
    expect(latexToText('\\frac{1}{2}')).toBe('1/2');
    expect(latexToText('\\frac{a+1}{2}')).toBe('(a+1)/2');
    expect(latexToText('\\text{cm}\\cdot x')).toBe('cm·x');
  });
});

describe('gradeAnswer', () => {
  it.each([
    ['42', '42', true],
    ['43', '42', false],
    ['5.0', '5', true],
    ['5.1', '5', false],
    ['\\frac{1}{2}', '0.5', true],
    ['0.5', '\\frac{1}{2}', true],
    ['\\dfrac{1}{2}', '0.5', true],
    ['\\frac{3}{4}', '0.75', true],
    ['\\frac{2}{4}', '\\frac{1}{2}', false],
    ['(1, 2)', '(2, 1)', false],
    ['(1,2)', '(1, 2)', true],
    ['[1,2]', '(1,2)', false],
    ['(1,2,3)', '(1,2)', false],
    ['\\text{yes}', 'yes', true],
    ['1,000', '1000', true],
    ['1000', '1,000', true],
    ['5 \\text{ cm}', '5', true],
    ['10 meters', '10', true],
    ['\\$18', '18', true], // a dollar sign
    ['25\\%', '25', true],
    ['x = 7', '7', true],
    ['\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}', true],
    ['\\sqrt{8}', '2\\sqrt{2}', true],
    ['2\\pi', '\\pi \\cdot 2', true],
    ['x+1', '1+x', true],
    ['1/3', '0.333', false],
    ['3', '3.5', false],
    ['\\pi', '3.14159', false],
    ['', '5', false],
    ['(x+1)^2', 'x^2+2x+1', true],
    // The reference refuses to evaluate a power of a parenthesised exponent ("^("); so do we.
    ['x^(2)', 'x^2', false],
  ])('grade(%j, %j) = %s', (given, truth, want) => {
    expect(gradeAnswer(given, truth)).toBe(want);
  });
  it('null is wrong', () => {
    expect(gradeAnswer(null, '1')).toBe(false);
  });
  it('CAS check with the eval guard', () => {
    expect(areEqualUnderCas('3/4', '0.75')).toBe(true);
    expect(areEqualUnderCas('a+b+c', 'c+b+a')).toBe(false); // more than 2 letters: not evaluated
    expect(areEqualUnderCas('2^10', '1024')).toBe(false); // multi-digit exponent: not evaluated
    expect(areEqualUnderCas('(', ')')).toBe(false);
  });
});

describe('safeGrade', () => {
  it('grades, and turns errors into false', () => {
    expect(safeGrade('\\frac{1}{2}', '0.5')).toBe(true);
    expect(safeGrade('2', '3')).toBe(false);
    // float("inf") then int(round(...)) raises in the reference grader; safe_grade says false.
    expect(() => gradeAnswer('inf', '5')).toThrow();
    expect(safeGrade('inf', '5')).toBe(false);
  });
  it('rejects unknown graders', () => {
    expect(() => safeGrade('1', '1', 'nope' as never)).toThrow(/Invalid grader/);
  });
});
