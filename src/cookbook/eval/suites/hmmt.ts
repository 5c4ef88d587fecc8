// HMMT (MathArena/hmmt_feb_2025 and MathArena/hmmt_nov_2025, split "train"): the problem plus the
// reference's HMMT instruction; the first \boxed{} is compared with the LaTeX answer as the
// reference (after MathArena) does: normalised strings, then floats within 1e-6, then sympy's
// parse_latex comparison (latex-equal.ts).
import { pyParseFloat } from '../../rl/grading.js';
import { PY_WS_CLASS, pyStripWs } from '../../renderers/py-whitespace.js';
import { DataFormatError } from '../../errors.js';
import { firstPresent, pyStr } from './aime.js';
import { extractFirstBoxed } from './extract.js';
import { BOXED_SYSTEM_PROMPT, exampleId } from './gsm8k.js';
import { latexEqual } from './latex-equal.js';
import { buildMessages, type Suite } from './types.js';

const HMMT_INSTRUCTION = 'This is an HMMT competition problem. Show your work step by step, then put your final answer in \\boxed{}.';
const PY_SPACES = new RegExp(`[${PY_WS_CLASS}]+`, 'g');

/** The reference's _normalize_latex: no `$`, \text{}/\mathrm{} unwrapped, no \left/\right, spaces collapsed, no trailing dots. */
export function normalizeLatexAnswer(s: string): string {
  let t = pyStripWs(s).replace(/\$/g, '');
  t = t.replace(/\\(?:text|mathrm)\{([^}]*)\}/g, '$1');
  t = t.replace(/\\left/g, '').replace(/\\right/g, '');
  t = pyStripWs(t.replace(PY_SPACES, ' '));
  return t.replace(/\.+$/, '');
}

/** The reference's _check_math_equal. */
export function checkMathEqual(extracted: string, expected: string): boolean {
  const a = normalizeLatexAnswer(extracted);
  const b = normalizeLatexAnswer(expected);
  if (a === b) return true;
  if (!a || !b) return false;
  const fa = pyParseFloat(a);
  const fb = pyParseFloat(b);
  if (fa !== undefined && fb !== undefined && Math.abs(fa - fb) < 1e-6) return true;
  return latexEqual(a, b);
}

function hmmtSuite(name: string, competition: string, title: string): Suite {
  return {
    name,
    description: `HMMT ${title}: LaTeX answers, first \\boxed{} compared as strings, numbers, then symbolically`,
    dataset: { hubId: `MathArena/hmmt_${competition}`, name: null, split: 'train' },
    sample: name,
    recommendedSystemPrompt: BOXED_SYSTEM_PROMPT,
    parseRow(row, at, systemPrompt) {
      const problem = firstPresent(row, ['problem', 'question'], '');
      if (typeof problem !== 'string' || problem === '') throw new DataFormatError(`${at}: "problem" must be a non-empty string`);
      const raw = row.answer ?? '';
      const expected = pyStripWs(pyStr(raw));
      if (expected === '') throw new DataFormatError(`${at}: "answer" must be a non-empty answer`);
      return { id: exampleId(name, problem), messages: buildMessages(`${problem}\n\n${HMMT_INSTRUCTION}`, systemPrompt), target: expected };
    },
    grade(response, item) {
      const extracted = extractFirstBoxed(response) || '';
      return { correct: extracted !== '' && checkMathEqual(extracted, item.target as string), extracted };
    },
    expected: (item) => item.target as string,
  };
}

export const hmmtFeb2025 = hmmtSuite('hmmt_feb_2025', 'feb_2025', 'February 2025');
export const hmmtNov2025 = hmmtSuite('hmmt_nov_2025', 'nov_2025', 'November 2025');
