// Answer extraction of the reference's benchmarks (eval/benchmarks/_common.py): the GSM8K number
// and the multiple-choice letter. Note the first `\boxed{…}` is taken here, as _common.py does;
// MATH-500 grades the last one through the math grader (rl/grading.ts), as math500.py does.
import { pyParseFloat } from '../../rl/grading.js';

/** The content of the first `\boxed{…}` (nested braces matched), or null. */
export function extractFirstBoxed(text: string): string | null {
  const idx = text.indexOf('\\boxed{');
  if (idx === -1) return null;
  const start = idx + '\\boxed{'.length;
  let depth = 1;
  let i = start;
  for (; i < text.length && depth > 0; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}') depth--;
  }
  return depth === 0 ? text.slice(start, i - 1) : null;
}

const isDigit = (ch: string) => /^\p{Nd}$/u.test(ch);

/**
 * ASCII digits for the decimal digits of any script (Python's `\d`, `float` and `int` take them
 * all). Unicode lays each script's digits out as runs of ten from its zero, so a digit's value is
 * its distance from the start of its run, modulo 10.
 */
export function toAsciiDigits(s: string): string {
  return s.replace(/\p{Nd}/gu, (ch) => {
    let cp = ch.codePointAt(0)!;
    let start = cp;
    while (isDigit(String.fromCodePoint(start - 1))) start--;
    cp -= start;
    return String(cp % 10);
  });
}

/** The first number of `text` once LaTeX commands, braces, `$`, commas and spaces are removed. */
export function extractNumber(text: string): string {
  const cleaned = text
    .replace(/\\text\{[^}]*\}/g, '')
    .replace(/\\[a-zA-Z]+/g, '')
    .replace(/[{}$, ]/g, '');
  const m = /-?\p{Nd}+\.?\p{Nd}*/u.exec(cleaned);
  return m ? m[0] : cleaned.trim();
}

const lastOf = <T>(xs: T[]): T | undefined => xs[xs.length - 1];

/** GSM8K's answer: `\boxed{}`, `#### x`, `answer is x` / `answer: x`, `**x**`, else the last number; "" if none. */
export function extractGsm8kAnswer(text: string): string {
  const boxed = extractFirstBoxed(text);
  if (boxed) return extractNumber(boxed);
  const hash = /####\s*(.+)/.exec(text);
  if (hash) return extractNumber(hash[1]);
  const answer = /(?:answer is|answer:)\s*\$?([0-9,.-]+)/i.exec(text);
  if (answer) return answer[1].trim().replace(/,/g, '').replace(/\.+$/, '');
  const bold = lastOf([...text.matchAll(/\*\*\$?(-?\p{Nd}+[,\p{Nd}]*\.?\p{Nd}*)/gu)]);
  if (bold) return bold[1].replace(/,/g, '').replace(/\.+$/, '');
  const last = lastOf([...text.matchAll(/-?\p{Nd}+[,\p{Nd}]*\.?\p{Nd}*/gu)]);
  return last ? last[0].replace(/,/g, '') : '';
}

/** The extracted number equals the expected one within 1e-5 (commas in the expected answer ignored). */
export function checkGsm8k(response: string, expected: string): boolean {
  const extracted = extractGsm8kAnswer(response);
  const want = expected.replace(/,/g, '');
  const a = pyParseFloat(toAsciiDigits(extracted));
  const b = pyParseFloat(toAsciiDigits(want));
  if (a === undefined || b === undefined) return extracted.trim() === want.trim();
  return Math.abs(a - b) < 1e-5;
}

/** `(A) first\n(B) second…` */
export function formatMcqChoices(choices: readonly string[]): string {
  return choices.map((c, i) => `(${String.fromCharCode(65 + i)}) ${c}`).join('\n');
}

/** The chosen letter: `\boxed{X}`, `answer is (X)` / `answer: X`, else the last standalone letter of the last 300 characters; "" if none. */
export function extractMcqAnswer(text: string, validLetters = 'ABCD'): string {
  const boxed = extractFirstBoxed(text);
  if (boxed !== null) {
    const upper = boxed.trim().toUpperCase();
    if (upper.length === 1 && validLetters.includes(upper)) return upper;
  }
  const answer = new RegExp(`(?:answer is|answer:)\\s*\\(?([${validLetters}])\\)?`, 'i').exec(text);
  if (answer) return answer[1].toUpperCase();
  // Python's \b is Unicode-aware: a letter next to any word character (é, 1, _) is not standalone.
  const standalone = new RegExp(`(?<![\\p{L}\\p{N}_])([${validLetters}])(?![\\p{L}\\p{N}_])`, 'gu');
  const last = lastOf([...text.slice(-300).matchAll(standalone)]);
  return last ? last[1] : '';
}
