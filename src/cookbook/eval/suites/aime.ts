// AIME (MathArena/aime_2025 and MathArena/aime_2026, split "train"; `aime` is the reference's
// alias for 2025): the problem plus the reference's AIME instruction; the answer is the first
// \boxed{}'s number (else GSM8K's extraction), correct when it is an integer 0–999 equal to the
// target, read as Python's Decimal reads it.
import { DataFormatError } from '../../errors.js';
import { pyStripWs } from '../../renderers/py-whitespace.js';
import { extractFirstBoxed, extractGsm8kAnswer, extractNumber, toAsciiDigits } from './extract.js';
import { BOXED_SYSTEM_PROMPT, exampleId } from './gsm8k.js';
import { buildMessages, type Suite } from './types.js';

const AIME_INSTRUCTION = 'This is an AIME problem. The answer is an integer from 000 to 999. Show your work step by step, then put your final answer in \\boxed{}.';

const PY_DIGITS = String.raw`\p{Nd}(?:_?\p{Nd})*`;
const PY_DECIMAL = new RegExp(String.raw`^([+-]?)(?:(${PY_DIGITS})(?:\.(${PY_DIGITS})?)?|\.(${PY_DIGITS}))(?:[eE]([+-]?${PY_DIGITS}))?$`, 'u');

/** `Decimal(s)` when Python reads it as a finite integral value in 0..999; else null. */
export function aimeInteger(s: string): number | null {
  const m = PY_DECIMAL.exec(pyStripWs(s));
  if (!m) return null;
  const clean = (x: string | undefined) => toAsciiDigits(x ?? '').replace(/_/g, '');
  const frac = clean(m[3] ?? m[4]);
  let digits = (clean(m[2]) + frac).replace(/^0+/, '');
  if (digits === '') return 0;
  let shift = Number(clean(m[5]) || '0') - frac.length;
  if (shift < 0) {
    if (-shift >= digits.length || !/^0+$/.test(digits.slice(shift))) return null;
    digits = digits.slice(0, shift);
    shift = 0;
  }
  if (m[1] === '-' || digits.length + shift > 3) return null;
  return Number(digits) * 10 ** shift;
}

/** The first present key's value (Python's nested `row.get(a, row.get(b, …))`). */
export function firstPresent(row: Record<string, unknown>, keys: readonly string[], fallback: unknown): unknown {
  const key = keys.find((k) => k in row);
  return key === undefined ? fallback : row[key];
}

/** Python `str(v)` for a cell's value (parquet int64s beyond 2^53 arrive as bigints). */
export const pyStr = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'bigint' ? String(v) : JSON.stringify(v));

/** Python `int(str(raw).strip())`, else the first run of digits, else null. */
function targetInteger(raw: unknown): number | null {
  const s = pyStripWs(pyStr(raw));
  if (new RegExp(`^[+-]?${PY_DIGITS}$`, 'u').test(s)) return Number(toAsciiDigits(s).replace(/_/g, ''));
  const m = /\p{Nd}+/u.exec(s);
  return m ? Number(toAsciiDigits(m[0])) : null;
}

function aimeSuite(name: string, year: string): Suite {
  return {
    name,
    description: `AIME ${year}${name === 'aime' ? ' (alias of aime_2025)' : ''}: integer answers 0–999, first \\boxed{} number`,
    dataset: { hubId: `MathArena/aime_${year}`, name: null, split: 'train' },
    sample: name,
    recommendedSystemPrompt: BOXED_SYSTEM_PROMPT,
    parseRow(row, at, systemPrompt) {
      const problem = firstPresent(row, ['problem', 'question', 'Problem'], '');
      if (typeof problem !== 'string' || problem === '') throw new DataFormatError(`${at}: "problem" must be a non-empty string`);
      const raw = firstPresent(row, ['answer', 'Answer', 'expected_answer'], '');
      const expected = raw === null ? null : targetInteger(raw);
      if (expected === null) throw new DataFormatError(`${at}: "answer" must be an integer (got ${JSON.stringify(pyStr(raw))})`);
      return { id: exampleId(name, problem), messages: buildMessages(`${problem}\n\n${AIME_INSTRUCTION}`, systemPrompt), target: expected };
    },
    grade(response, item) {
      const boxed = extractFirstBoxed(response);
      const extracted = boxed ? extractNumber(boxed) : extractGsm8kAnswer(response);
      const value = aimeInteger(extracted);
      return { correct: value !== null && value === item.target, extracted: value !== null ? String(value) : extracted };
    },
    expected: (item) => String(item.target),
  };
}

export const aime2025 = aimeSuite('aime_2025', '2025');
export const aime2026 = aimeSuite('aime_2026', '2026');
export const aime = aimeSuite('aime', '2025');
