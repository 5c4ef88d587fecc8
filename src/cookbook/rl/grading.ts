// Math answer grading (spec §3.3, the reference's math_grading.py, itself the MATH "mathd"
// normaliser plus the PRM800K grader). The normalisation and string comparisons are ported
// exactly; the final symbolic check (`are_equal_under_sympy`) uses the Compute Engine CAS
// (@cortex-js/compute-engine) in place of sympy, which is the one place verdicts may differ.

import { ComputeEngine } from '@cortex-js/compute-engine';
import { latexToText } from './latex-text.js';

// ---------------------------------------------------------------------------------------------
// extract_boxed

/** The content of the last `\boxed{…}` (brace-matched), else of the first `\boxed X`. */
export function extractBoxed(text: string): string {
  const found: string[] = [];
  const stack: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '{') stack.push(i);
    else if (ch === '}') {
      const start = stack.pop();
      if (start === undefined) throw new Error('Unmatched }');
      if (text.slice(0, start).endsWith('\\boxed')) found.push(text.slice(start + 1, i));
    }
  }
  if (found.length > 0) return found[found.length - 1];
  const m = /\\boxed\s+([a-zA-Z0-9]+)/.exec(text);
  if (m) return m[1];
  throw new Error('No boxed strings found');
}

// ---------------------------------------------------------------------------------------------
// Python helpers

const PY_WS = ' \t\n\r\x0b\x0c';
function pyStrip(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && PY_WS.includes(s[a])) a++;
  while (b > a && PY_WS.includes(s[b - 1])) b--;
  return s.slice(a, b);
}

const DIGITS = String.raw`\d(?:_?\d)*`;
const PY_FLOAT_RE = new RegExp(
  String.raw`^[+-]?(?:(?:${DIGITS}(?:\.(?:${DIGITS})?)?|\.${DIGITS})(?:[eE][+-]?${DIGITS})?|inf(?:inity)?|nan)$`,
  'i',
);

/** Python `float(s)`: undefined where Python raises ValueError. */
export function pyParseFloat(s: string): number | undefined {
  const t = pyStrip(s);
  if (!PY_FLOAT_RE.test(t)) return undefined;
  const lower = t.toLowerCase().replace(/_/g, '');
  if (lower.endsWith('nan')) return NaN;
  if (lower.endsWith('inf') || lower.endsWith('infinity')) return lower.startsWith('-') ? -Infinity : Infinity;
  return Number(lower);
}

/** Python `int(round(x))` as a decimal string; throws like Python on inf/nan. */
function pyIntRound(x: number): string {
  if (!Number.isFinite(x)) throw new Error('cannot convert float to integer');
  // Python rounds half to even; ties cannot occur within the 1e-7 tolerance where this is used
  // except for exact .5 values, which are handled explicitly.
  const r = Math.round(x);
  const v = Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  return BigInt(v).toString();
}

function pyIsInt(x: number): boolean {
  return Math.abs(x - Number(pyIntRound(x))) <= 1e-7;
}

/** Replace a literal substring everywhere (Python str.replace). */
const rep = (s: string, a: string, b: string): string => s.split(a).join(b);

// ---------------------------------------------------------------------------------------------
// normalize_answer (mathd)

function fixFracs(string: string): string {
  const substrs = string.split('\\frac');
  let out = substrs[0];
  for (const substr of substrs.slice(1)) {
    out += '\\frac';
    if (substr[0] === '{') {
      out += substr;
      continue;
    }
    if (substr.length < 2) return string;
    const a = substr[0];
    const b = substr[1];
    const post = substr.slice(2);
    out += b !== '{' ? `{${a}}{${b}}${post}` : `{${a}}${b}${post}`;
  }
  return out;
}

function fixASlashB(string: string): string {
  const parts = string.split('/');
  if (parts.length !== 2) return string;
  // Python: int(a), int(b) and the string must read back exactly as "a/b".
  const canon = /^(?:0|-?[1-9]\d*)$/;
  if (!canon.test(parts[0]) || !canon.test(parts[1])) return string;
  return `\\frac{${parts[0]}}{${parts[1]}}`;
}

function removeRightUnits(string: string): string {
  if (!string.includes('\\text{ ')) return string;
  const splits = string.split('\\text{ ');
  if (splits.length !== 2) throw new Error('unexpected units');
  return splits[0];
}

function fixSqrt(string: string): string {
  if (!string.includes('\\sqrt')) return string;
  const splits = string.split('\\sqrt');
  let out = splits[0];
  for (const split of splits.slice(1)) {
    if (split.length === 0) throw new Error('string index out of range');
    out += split[0] !== '{' ? `\\sqrt{${split[0]}}${split.slice(1)}` : `\\sqrt${split}`;
  }
  return out;
}

function stripString(input: string): string {
  let s = rep(input, '\n', '');
  s = rep(s, '\\!', '');
  s = rep(s, '\\\\', '\\');
  s = rep(s, 'tfrac', 'frac');
  s = rep(s, 'dfrac', 'frac');
  s = rep(s, '\\left', '');
  s = rep(s, '\\right', '');
  s = rep(s, '^{\\circ}', '');
  s = rep(s, '^\\circ', '');
  s = rep(s, '\\$', '');
  s = removeRightUnits(s);
  s = rep(s, '\\%', '');
  s = rep(s, ' .', ' 0.');
  s = rep(s, '{.', '{0.');
  if (s.length === 0) return s;
  if (s[0] === '.') s = '0' + s;
  const eq = s.split('=');
  if (eq.length === 2 && eq[0].length <= 2) s = eq[1];
  s = fixSqrt(s);
  s = rep(s, ' ', '');
  s = fixFracs(s);
  if (s === '0.5') s = '\\frac{1}{2}';
  s = fixASlashB(s);
  return s;
}

/** MATH "mathd" normalisation; any internal failure returns the stripped input. */
export function normalizeAnswer(answer: string): string;
export function normalizeAnswer(answer: string | null | undefined): string | null;
export function normalizeAnswer(answer: string | null | undefined): string | null {
  if (answer === null || answer === undefined) return null;
  let s = pyStrip(answer);
  const stripped = s;
  try {
    const m = /^\\text\{(.+)\}$/.exec(s);
    if (m) s = pyStrip(m[1]);
    return stripString(s);
  } catch {
    return stripped;
  }
}

// ---------------------------------------------------------------------------------------------
// _normalize (PRM800K grader)

const UNITS = ['degree', 'cm', 'centimeter', 'meter', 'mile', 'second', 'minute', 'hour', 'day', 'week', 'month', 'year', 'foot', 'feet', 'inch', 'yard'];

/** Remove commas that separate thousands ("1,000" → "1000"), repeatedly. */
export function stripProperlyFormattedCommas(expr: string): string {
  const re = /(\d)(,)(\d\d\d)($|\D)/g;
  for (;;) {
    const next = expr.replace(re, '$1$3$4');
    if (next === expr) return next;
    expr = next;
  }
}

function strIsInt(x: string): boolean {
  const v = pyParseFloat(stripProperlyFormattedCommas(x));
  if (v === undefined || !Number.isFinite(v)) return false;
  return pyIsInt(v);
}

function strToInt(x: string): string {
  const v = pyParseFloat(rep(x, ',', ''));
  if (v === undefined || !Number.isFinite(v)) throw new Error(`could not convert string to float: '${x}'`);
  return BigInt(Math.trunc(v)).toString();
}

function parseLatex(expr: string): string {
  let s = rep(expr, '\\tfrac', '\\frac');
  s = rep(s, '\\dfrac', '\\frac');
  s = rep(s, '\\frac', ' \\frac'); // keeps mixed numbers like 7\frac34 apart
  s = latexToText(s);
  for (const [a, b] of [['√', 'sqrt'], ['π', 'pi'], ['∞', 'inf'], ['∪', 'U'], ['·', '*'], ['×', '*']]) s = rep(s, a, b);
  return pyStrip(s);
}

/** The grader's second normaliser; throws where the reference raises (inf/nan numbers). */
export function normalizeForGrading(input: string | null | undefined): string | null {
  if (input === null || input === undefined) return null;
  let expr = input;
  const m = /^\\text\{(.+?)\}$/.exec(expr);
  if (m) expr = m[1];
  expr = rep(expr, '\\%', '%');
  expr = rep(expr, '\\$', '$');
  expr = rep(expr, '$', '');
  expr = rep(expr, '%', '');
  expr = rep(expr, ' or ', ' , ');
  expr = rep(expr, ' and ', ' , ');
  expr = rep(expr, 'million', '*10^6');
  expr = rep(expr, 'billion', '*10^9');
  expr = rep(expr, 'trillion', '*10^12');
  for (const unit of UNITS) expr = expr.replace(new RegExp(`${unit}(es)?(s)? *(\\^[0-9]+)?`, 'g'), '');
  expr = expr.replace(/\^ *\\circ/g, '');
  if (expr.length > 0 && expr[0] === '{' && expr[expr.length - 1] === '}') expr = expr.slice(1, -1);
  expr = expr.replace(/,\\! */g, '');
  const f = pyParseFloat(expr);
  if (f !== undefined && pyIsInt(f)) expr = pyIntRound(f);
  if (expr.includes('\\')) {
    try {
      expr = parseLatex(expr);
    } catch {
      // the reference ignores LaTeX conversion failures
    }
  }
  expr = expr.replace(/- */g, '-');
  expr = expr.replace(/([0-9]) +([0-9])/g, '$1+$2');
  expr = rep(expr, ' ', '');
  expr = rep(expr, '{', '');
  expr = rep(expr, '}', '');
  expr = expr.toLowerCase();
  if (strIsInt(expr)) expr = strToInt(expr);
  return expr;
}

const TUPLE_CHARS = '()[]';

/** Split "(a, b)" / "[a, b]" into elements; anything else is one element. */
export function splitTuple(input: string): string[] {
  const expr = stripProperlyFormattedCommas(input);
  if (expr.length === 0) return [];
  const inner = expr.slice(1, -1);
  if (
    expr.length > 2 &&
    TUPLE_CHARS.includes(expr[0]) &&
    TUPLE_CHARS.includes(expr[expr.length - 1]) &&
    ![...TUPLE_CHARS].some((ch) => inner.includes(ch))
  ) {
    return inner.split(',').map(pyStrip);
  }
  return [expr];
}

const isFrac = (expr: string): boolean => /^-?[0-9]+.?\/0*[1-9][0-9]*.?$/.test(expr);

function countUnknownLetters(expr: string): number {
  const e = rep(rep(expr, 'sqrt', ''), 'frac', '');
  return new Set([...e].filter((ch) => /\p{L}/u.test(ch))).size;
}

function shouldAllowEval(expr: string): boolean {
  if (countUnknownLetters(expr) > 2) return false;
  if (expr.includes('^{') || expr.includes('^(')) return false;
  if (/\^[0-9]+\^/.test(expr) || /\^[0-9][0-9]+/.test(expr)) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// The CAS check (sympy substitute)

let engine: ComputeEngine | undefined;
function ce(): ComputeEngine {
  engine ??= new ComputeEngine();
  return engine;
}

/** Replace `name(…)` (balanced parentheses) with `open…close`. */
function rewriteCalls(s: string, name: string, open: string, close: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const j = s.indexOf(name + '(', i);
    if (j < 0) return out + s.slice(i);
    let depth = 0;
    let k = j + name.length;
    for (; k < s.length; k++) {
      if (s[k] === '(') depth++;
      else if (s[k] === ')' && --depth === 0) break;
    }
    if (k >= s.length) return out + s.slice(i); // unbalanced: leave as is
    out += s.slice(i, j) + open + rewriteCalls(s.slice(j + name.length + 1, k), name, open, close) + close;
    i = k + 1;
  }
}

/** The grader's plain-text expression as LaTeX for the Compute Engine. */
export function gradingTextToLatex(text: string): string {
  let s = rewriteCalls(text, 'sqrt', '\\sqrt{', '}');
  s = s.replace(/sqrt([0-9]+|[a-z])/g, '\\sqrt{$1}');
  s = s.replace(/\b(sin|cos|tan|cot|sec|csc|log|ln|exp)\(/g, '\\$1(');
  s = s.replace(/(?<![a-z\\])pi(?![a-z])/g, '\\pi ');
  s = s.replace(/(?<![a-z\\])inf(?![a-z])/g, '\\infty ');
  s = rep(s, '**', '^');
  s = rep(s, '*', '\\cdot ');
  return s;
}

/** `simplify(truth − given) == 0` with the Compute Engine, after the reference's eval guard. */
export function areEqualUnderCas(truth: string, given: string): boolean {
  const expr = `(${truth})-(${given})`;
  if (!shouldAllowEval(expr)) return false;
  try {
    const parsed = ce().parse(gradingTextToLatex(expr));
    if (!parsed.isValid) return false;
    const simplified = parsed.simplify();
    if (simplified.is(0)) return true;
    const n = simplified.N();
    return n.is(0);
  } catch {
    return false;
  }
}

/** The reference's `grade_answer`: mathd match, second-normaliser match, then per-element checks. */
export function gradeAnswer(given: string | null | undefined, truth: string): boolean {
  if (given === null || given === undefined) return false;
  if (normalizeAnswer(truth) === normalizeAnswer(given)) return true;
  const truthN = normalizeForGrading(truth);
  const givenN = normalizeForGrading(given);
  if (truthN === null || givenN === null) return false;
  if (truthN === givenN) return true;
  if (givenN.length === 0) return false;
  const truthElems = splitTuple(truthN);
  const givenElems = splitTuple(givenN);
  if (truthElems.length > 1 && (truthN[0] !== givenN[0] || truthN[truthN.length - 1] !== givenN[givenN.length - 1])) {
    return false;
  }
  if (truthElems.length !== givenElems.length) return false;
  for (let i = 0; i < truthElems.length; i++) {
    const t = truthElems[i];
    const g = givenElems[i];
    let ok: boolean;
    if (isFrac(t) && isFrac(g)) ok = t === g;
    else if (strIsInt(t) !== strIsInt(g)) ok = false;
    else ok = areEqualUnderCas(t, g);
    if (!ok) return false;
  }
  return true;
}

export type Grader = 'sympy' | 'cas';

/**
 * Grade with a time limit; errors and timeouts give false. The CAS runs synchronously, so the
 * limit is enforced cooperatively by the Compute Engine's own deadline (`withTimeLimit`),
 * `ceil(timeoutSeconds)` seconds like the reference's thread-pool timeout.
 */
export function safeGrade(given: string | null | undefined, truth: string, grader: Grader = 'sympy', timeoutSeconds = 1.0): boolean {
  if (grader !== 'sympy' && grader !== 'cas') throw new RangeError(`Invalid grader: ${String(grader)}`);
  const ms = Math.max(1, Math.ceil(timeoutSeconds)) * 1000;
  try {
    return ce().withTimeLimit(ms, () => gradeAnswer(given, truth));
  } catch {
    return false;
  }
}
