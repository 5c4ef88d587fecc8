// The symbolic step of the HMMT grader (the reference's `_check_math_equal`, strategy 3): sympy's
// `parse_latex` on both answers (latex-parse.ts), then `equals`, `simplify(a - b) == 0` or
// |N(a - b)| < 1e-8. Without sympy, equality is decided by value: answers of integers alone as
// exact rationals (as sympy's are), other answers without symbols within 1e-8, answers with
// symbols at several points (sympy proves such identities by simplification; competition
// answers hardly ever carry symbols).
import { parseLatexAnswer, type Node } from './latex-parse.js';

type C = { re: number; im: number };

// ------------------------------------------------------------------------------------------
// Complex evaluation

const c = (re: number, im = 0): C => ({ re, im });
const add = (a: C, b: C) => c(a.re + b.re, a.im + b.im);
const sub = (a: C, b: C) => c(a.re - b.re, a.im - b.im);
const mul = (a: C, b: C) => c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
function div(a: C, b: C): C {
  const d = b.re * b.re + b.im * b.im;
  if (d === 0) return c(NaN, NaN);
  return c((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d);
}
const abs = (a: C) => Math.hypot(a.re, a.im);
const log = (a: C) => c(Math.log(abs(a)), Math.atan2(a.im, a.re));
const exp = (a: C) => c(Math.exp(a.re) * Math.cos(a.im), Math.exp(a.re) * Math.sin(a.im));
function pow(a: C, b: C): C {
  if (b.im === 0 && Number.isInteger(b.re) && Math.abs(b.re) <= 64) {
    let r = c(1);
    for (let i = 0; i < Math.abs(b.re); i++) r = mul(r, a);
    return b.re < 0 ? div(c(1), r) : r;
  }
  if (a.re === 0 && a.im === 0) return b.re > 0 ? c(0) : c(NaN, NaN);
  return exp(mul(b, log(a)));
}
const sin = (a: C) => c(Math.sin(a.re) * Math.cosh(a.im), Math.cos(a.re) * Math.sinh(a.im));
const cos = (a: C) => c(Math.cos(a.re) * Math.cosh(a.im), -Math.sin(a.re) * Math.sinh(a.im));
const real = (a: C, f: (x: number) => number): C => (a.im === 0 ? c(f(a.re)) : c(NaN, NaN));
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** Γ(z) for complex z (Lanczos, g = 7; the reflection formula left of 1/2); integers exactly. */
function gamma(z: C): C {
  if (z.im === 0 && Number.isInteger(z.re) && z.re >= 1 && z.re <= 171) {
    let r = 1;
    for (let i = 2; i < z.re; i++) r *= i;
    return c(r);
  }
  if (z.re < 0.5) return div(c(Math.PI), mul(sin(mul(c(Math.PI), z)), gamma(sub(c(1), z))));
  const w = sub(z, c(1));
  let x = c(LANCZOS[0]);
  for (let i = 1; i < LANCZOS.length; i++) x = add(x, div(c(LANCZOS[i]), add(w, c(i))));
  const t = add(w, c(7.5));
  return mul(mul(c(Math.sqrt(2 * Math.PI)), pow(t, add(w, c(0.5)))), mul(exp(c(-t.re, -t.im)), x));
}

/** sympy's floor/ceiling of a complex number: of each part. */
const parts = (a: C, f: (x: number) => number): C => c(f(a.re), f(a.im));

function evaluate(n: Node, env: Map<string, C>): C {
  switch (n.k) {
    case 'num':
      return c(Number(n.text));
    case 'inf':
    case 'rel':
      return c(NaN, NaN);
    case 'sym':
      return env.get(n.name)!;
  }
  const [a, b] = n.args.map((x) => evaluate(x, env));
  switch (n.op) {
    case '+': return add(a, b);
    case '-': return sub(a, b);
    case '*': return mul(a, b);
    case '/': return div(a, b);
    case '^': return pow(a, b);
    case 'neg': return c(-a.re, -a.im);
    case 'root': return pow(a, div(c(1), b));
    case 'abs': return c(abs(a));
    case 'floor': return parts(a, Math.floor);
    case 'ceil': return parts(a, Math.ceil);
    case 'fact': return gamma(add(a, c(1)));
    case 'binom': return div(gamma(add(a, c(1))), mul(gamma(add(b, c(1))), gamma(add(sub(a, b), c(1)))));
    case 'ln': return log(a);
    case 'exp': return exp(a);
    case 'sin': return sin(a);
    case 'cos': return cos(a);
    case 'tan': return div(sin(a), cos(a));
    case 'csc': return div(c(1), sin(a));
    case 'sec': return div(c(1), cos(a));
    case 'cot': return div(cos(a), sin(a));
    case 'arcsin': return real(a, Math.asin);
    case 'arccos': return real(a, Math.acos);
    case 'arctan': return real(a, Math.atan);
    case 'sinh': return mul(c(0, -1), sin(mul(c(0, 1), a)));
    case 'cosh': return cos(mul(c(0, 1), a));
    case 'tanh': return mul(c(0, -1), div(sin(mul(c(0, 1), a)), cos(mul(c(0, 1), a))));
  }
  return c(NaN, NaN);
}

function symbols(n: Node, into: Set<string>): Set<string> {
  if (n.k === 'sym') into.add(n.name);
  if (n.k === 'op' || n.k === 'rel') for (const a of n.args) symbols(a, into);
  return into;
}

const has = (n: Node, k: Node['k']): boolean => n.k === k || ((n.k === 'op' || n.k === 'rel') && n.args.some((a) => has(a, k)));

// ------------------------------------------------------------------------------------------
// Exact rationals, for answers built from integers alone

type Q = { n: bigint; d: bigint };
const MAX_BITS = 100_000;

function q(n: bigint, d: bigint): Q | null {
  if (d === 0n) return null;
  if (d < 0n) [n, d] = [-n, -d];
  let [a, b] = [n < 0n ? -n : n, d];
  while (b) [a, b] = [b, a % b];
  const g = a === 0n ? 1n : a;
  const out = { n: n / g, d: d / g };
  return out.n.toString(2).length + out.d.toString(2).length > MAX_BITS ? null : out;
}

function factorial(x: Q): Q | null {
  if (x.d !== 1n || x.n < 0n || x.n > 2000n) return null;
  let r = 1n;
  for (let i = 2n; i <= x.n; i++) r *= i;
  return q(r, 1n);
}

/** The value of an expression of integer literals under + − × ÷, integer powers, !, binom, |·|, floor, ceil; else null. */
function exact(n: Node): Q | null {
  if (n.k === 'num') return /^\d+$/.test(n.text) ? q(BigInt(n.text), 1n) : null;
  if (n.k !== 'op') return null;
  const args = n.args.map(exact);
  if (args.some((a) => a === null)) return null;
  const [a, b] = args as Q[];
  switch (n.op) {
    case '+': return q(a.n * b.d + b.n * a.d, a.d * b.d);
    case '-': return q(a.n * b.d - b.n * a.d, a.d * b.d);
    case '*': return q(a.n * b.n, a.d * b.d);
    case '/': return q(a.n * b.d, a.d * b.n);
    case 'neg': return q(-a.n, a.d);
    case 'abs': return q(a.n < 0n ? -a.n : a.n, a.d);
    case 'floor': return q(a.n / a.d - (a.n < 0n && a.n % a.d !== 0n ? 1n : 0n), 1n);
    case 'ceil': return q(a.n / a.d + (a.n > 0n && a.n % a.d !== 0n ? 1n : 0n), 1n);
    case 'fact': return factorial(a);
    case '^': {
      if (b.d !== 1n || b.n > 10_000n || b.n < -10_000n) return null;
      const e = b.n < 0n ? -b.n : b.n;
      const bits = Math.max(a.n.toString(2).length, a.d.toString(2).length) * Number(e);
      if (bits > MAX_BITS || (a.n === 0n && b.n < 0n)) return null;
      return b.n < 0n ? q(a.d ** e, a.n ** e) : q(a.n ** e, a.d ** e);
    }
    case 'binom': {
      const [top, k] = [factorial(a), b.d === 1n && b.n >= 0n && b.n <= a.n ? factorial(b) : null];
      const rest = a.d === 1n && b.d === 1n ? factorial(q(a.n - b.n, 1n)!) : null;
      return top && k && rest ? q(top.n, k.n * rest.n) : null;
    }
  }
  return null;
}

/** Fixed sample points for symbols (deterministic verdicts): of both signs and complex, so |x| is not x nor √(x²); no part in (−1, 1), so no floor is 0. */
const POINTS = [c(1.5772156649), c(-1.3247179572), c(1.685452001, 1.3183098862), c(-1.2720196495, -1.4142135624)];

/**
 * Sums and products flattened and their terms sorted, differences as sums of negations: sympy
 * orders Add and Mul arguments canonically, so `a+b` equals `b+a` even where no value can be
 * computed (a factorial of a fraction, the floor of a complex number).
 */
function canonical(n: Node): Node {
  if (n.k !== 'op' && n.k !== 'rel') return n;
  const args = n.args.map(canonical);
  if (n.k === 'op' && (n.op === '+' || n.op === '-' || n.op === '*')) {
    const kind = n.op === '*' ? '*' : '+';
    const flat: Node[] = [];
    args.forEach((a, i) => {
      const term = n.op === '-' && i === 1 ? ({ k: 'op', op: 'neg', args: [a] } as Node) : a;
      if (term.k === 'op' && term.op === kind) flat.push(...term.args);
      else flat.push(term);
    });
    const keyed = flat.map((t) => [JSON.stringify(t), t] as const).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0));
    return { k: 'op', op: kind, args: keyed.map(([, t]) => t) };
  }
  return { ...n, args };
}

function dividesByZero(n: Node): boolean {
  if (n.k !== 'op' && n.k !== 'rel') return false;
  if (n.k === 'op' && n.op === '/' && exact(n.args[1])?.n === 0n && exact(n.args[0])) return true;
  return n.args.some(dividesByZero);
}

/** The reference's `parse_latex` comparison of two (already normalised) answers. */
export function latexEqual(a: string, b: string): boolean {
  try {
    return compare(a, b);
  } catch (e) {
    // Nesting past the stack (thousands of implicit factors or brackets): sympy's recursive
    // conversion fails on such input too, and the reference counts the exception as unequal.
    if (e instanceof RangeError) return false;
    throw e;
  }
}

function compare(a: string, b: string): boolean {
  const x = parseLatexAnswer(a);
  const y = parseLatexAnswer(b);
  if (!x || !y) return false;
  // sympy's c/0 (c a number) is zoo, and no expression holding it equals another.
  if (dividesByZero(x) || dividesByZero(y)) return false;
  if (JSON.stringify(canonical(x)) === JSON.stringify(canonical(y))) return true;
  if (has(x, 'rel') || has(y, 'rel') || has(x, 'inf') || has(y, 'inf')) return false;
  const [qx, qy] = [exact(x), exact(y)];
  // Integers and fractions compare exactly, as sympy's do (10^{20}+1 is not 10^{20}).
  if (qx && qy) return qx.n * qy.d === qy.n * qx.d;
  const names = [...symbols(y, symbols(x, new Set()))];
  const trials = names.length === 0 ? 1 : 3;
  for (let t = 0; t < trials; t++) {
    const env = new Map(names.map((name, i) => [name, POINTS[(i + t) % POINTS.length]]));
    const d = abs(sub(evaluate(x, env), evaluate(y, env)));
    if (!(d < 1e-8)) return false;
  }
  return true;
}
