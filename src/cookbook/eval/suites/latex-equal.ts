// The symbolic step of the HMMT grader (the reference's `_check_math_equal`, strategy 3): sympy's
// `parse_latex` on both answers, then `equals`, `simplify(a - b) == 0` or |N(a - b)| < 1e-8.
//
// sympy is not available here, so this parses the common subset of sympy's LaTeX grammar itself
// (numbers with 3-digit comma groups, letters and unknown commands as symbols — `\pi`, `e` and `i`
// included, as sympy's parser makes them plain symbols —, + − · × ÷ /, implicit products, powers,
// `!`, \frac \sqrt \binom, |·|, floor/ceiling, the elementary functions) and decides equality
// numerically: answers without symbols within 1e-8; answers with symbols equal at several
// points (sympy proves such identities by simplification; competition answers hardly ever
// carry symbols). Like sympy's non-strict parser it stops at the first token that cannot extend
// the expression ("1,2" reads as 1), and a character its lexer does not know is an error.

type C = { re: number; im: number };
type Node =
  | { k: 'num'; text: string }
  | { k: 'sym'; name: string }
  | { k: 'inf' }
  | { k: 'op'; op: string; args: Node[] }
  | { k: 'rel'; op: string; args: Node[] };

class ParseError extends Error {}

const SPACING = ['\\thinspace', '\\medspace', '\\thickspace', '\\qquad', '\\quad', '\\negthinspace', '\\negmedspace', '\\negthickspace', '\\,', '\\:', '\\;', '\\!', '\\left', '\\right'];
const FUNCS = new Set(['sin', 'cos', 'tan', 'csc', 'sec', 'cot', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'exp', 'ln', 'log', 'lg']);
const RELATIONS = new Set(['=', '<', '>', '\\leq', '\\le', '\\geq', '\\ge', '\\neq', '\\ne']);

/** The index after any whitespace and spacing commands at `i` (sympy's lexer skips them). */
function skip(s: string, i: number): number {
  for (;;) {
    const rest = s.slice(i);
    const ws = /^[ \t\r\n]+/.exec(rest);
    const spacing = ws ? ws[0] : SPACING.find((w) => rest.startsWith(w) && !(/^\\[a-zA-Z]+$/.test(w) && /^[a-zA-Z]/.test(rest.slice(w.length))));
    if (!spacing) return i;
    i += spacing.length;
  }
}

const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';
/** Marks where whitespace split a number's leading digits (see func). */
const GAP = '\u0000';

/**
 * A number at `i`: digits, then groups of `,` and three digits, then `.` and digits, with
 * whitespace allowed between any two of them (sympy's `number` is a parser rule over DIGIT
 * tokens, so "1\,000" and "2 3" are 1000 and 23). Returns its digits and the index after it.
 */
function lexNumber(s: string, i: number): [string, number] {
  let text = '';
  let j = i;
  while (isDigit(s[j])) {
    text += (j > i ? GAP : '') + s[j];
    i = j + 1;
    j = skip(s, i);
  }
  for (;;) {
    if (s[j] !== ',') break;
    let k = skip(s, j + 1);
    let group = '';
    while (group.length < 3 && isDigit(s[k])) {
      group += s[k];
      k = group.length < 3 ? skip(s, k + 1) : k + 1;
    }
    if (group.length < 3) break;
    text += group;
    i = k;
    j = skip(s, i);
  }
  if (s[j] === '.') {
    let k = skip(s, j + 1);
    let frac = '';
    while (isDigit(s[k])) {
      frac += s[k];
      i = k + 1;
      k = skip(s, i);
    }
    if (frac === '') throw new ParseError('a "." must be followed by digits');
    text += `.${frac}`;
  }
  return [text, i];
}

function tokenize(s: string): string[] {
  const out: string[] = [];
  let i = skip(s, 0);
  while (i < s.length) {
    if (isDigit(s[i])) {
      const [num, next] = lexNumber(s, i);
      out.push(num);
      i = skip(s, next);
      continue;
    }
    const cmd = /^\\(?:[a-zA-Z]+|[{}])/.exec(s.slice(i));
    if (cmd) {
      out.push(cmd[0]);
      i += cmd[0].length;
    } else if ('+-*/()[]{}|!^_=<>,:'.includes(s[i]) || /[a-zA-Z]/.test(s[i])) {
      out.push(s[i++]);
    } else {
      throw new ParseError(`unknown character ${JSON.stringify(s[i])}`);
    }
    i = skip(s, i);
  }
  return out;
}

class Parser {
  pos = 0;
  constructor(private readonly toks: string[]) {}
  peek = () => this.toks[this.pos];
  next = () => this.toks[this.pos++];
  expect(t: string): void {
    if (this.next() !== t) throw new ParseError(`expected ${t}`);
  }
  /** Runs `f`; on a parse error rewinds and returns null (sympy's parser stops there). */
  attempt<T>(f: () => T): T | null {
    const at = this.pos;
    try {
      return f();
    } catch (e) {
      if (!(e instanceof ParseError)) throw e;
      this.pos = at;
      return null;
    }
  }

  relation(): Node {
    const left = this.expr();
    if (this.peek() !== undefined && RELATIONS.has(this.peek())) {
      const op = this.next();
      const right = this.attempt(() => this.expr());
      if (right) return { k: 'rel', op, args: [left, right] };
      this.pos--;
    }
    return left;
  }
  expr(): Node {
    let left = this.mp();
    while (this.peek() === '+' || this.peek() === '-') {
      const op = this.next();
      const right = this.attempt(() => this.mp());
      if (!right) {
        this.pos--;
        break;
      }
      left = { k: 'op', op, args: [left, right] };
    }
    return left;
  }
  mp(): Node {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      const op = t === '*' || t === '\\cdot' || t === '\\times' ? '*' : t === '/' || t === '\\div' || t === ':' ? '/' : null;
      if (!op) return left;
      this.next();
      const right = this.attempt(() => this.unary());
      if (!right) {
        this.pos--;
        return left;
      }
      left = { k: 'op', op, args: [left, right] };
    }
  }
  unary(): Node {
    const t = this.peek();
    if (t === '+' || t === '-') {
      this.next();
      const u = this.unary();
      return t === '-' ? { k: 'op', op: 'neg', args: [u] } : u;
    }
    let left = this.postfix();
    for (;;) {
      const right = this.attempt(() => this.postfix());
      if (!right) return left;
      left = { k: 'op', op: '*', args: [left, right] };
    }
  }
  postfix(): Node {
    let e = this.power();
    while (this.peek() === '!') {
      this.next();
      e = { k: 'op', op: 'fact', args: [e] };
    }
    return e;
  }
  power(): Node {
    let base = this.comp();
    while (this.peek() === '^') {
      this.next();
      const exp = this.peek() === '{' ? this.braced() : this.atom();
      base = { k: 'op', op: '^', args: [base, exp] };
    }
    return base;
  }
  braced(): Node {
    this.expect('{');
    const e = this.expr();
    this.expect('}');
    return e;
  }
  /** A \frac / \binom argument: a braced expression or one digit (`\frac12`). */
  argument(): Node {
    const t = this.peek();
    if (t === '{') return this.braced();
    if (t !== undefined && /^\d/.test(t)) {
      this.next();
      const rest = t.slice(1).replace(/^\u0000/, '');
      if (rest) this.toks.splice(this.pos, 0, rest);
      return { k: 'num', text: t[0] };
    }
    throw new ParseError('expected an argument');
  }
  comp(): Node {
    const t = this.peek();
    if (t === undefined) throw new ParseError('unexpected end');
    const closers: Record<string, string> = { '(': ')', '[': ']', '{': '}', '\\{': '\\}', '|': '|', '\\lfloor': '\\rfloor', '\\lceil': '\\rceil' };
    if (t in closers) {
      this.next();
      const e = this.expr();
      this.expect(closers[t]);
      if (t === '|') return { k: 'op', op: 'abs', args: [e] };
      if (t === '\\lfloor') return { k: 'op', op: 'floor', args: [e] };
      if (t === '\\lceil') return { k: 'op', op: 'ceil', args: [e] };
      return e;
    }
    if (t === '\\frac' || t === '\\dfrac' || t === '\\tfrac') {
      this.next();
      return { k: 'op', op: '/', args: [this.argument(), this.argument()] };
    }
    if (t === '\\binom' || t === '\\dbinom' || t === '\\tbinom') {
      this.next();
      return { k: 'op', op: 'binom', args: [this.argument(), this.argument()] };
    }
    if (t === '\\sqrt') {
      this.next();
      let root: Node = { k: 'num', text: '2' };
      if (this.peek() === '[') {
        this.next();
        root = this.expr();
        this.expect(']');
      }
      return { k: 'op', op: 'root', args: [this.braced(), root] };
    }
    if (t.startsWith('\\') && FUNCS.has(t.slice(1))) return this.func();
    return this.atom();
  }
  func(): Node {
    const name = this.next().slice(1);
    let base: Node | null = null;
    if (name === 'log' && this.peek() === '_') {
      this.next();
      // sympy's number rule eats spaced digits only while the function still gets its argument.
      const t = this.peek();
      if (t !== undefined && t.includes(GAP) && this.pos === this.toks.length - 1) {
        const cut = t.lastIndexOf(GAP);
        this.toks.splice(this.pos, 1, t.slice(0, cut), t.slice(cut + 1));
      }
      base = this.peek() === '{' ? this.braced() : this.atom();
    }
    let arg: Node;
    if (this.peek() === '(') {
      this.next();
      arg = this.expr();
      this.expect(')');
    } else {
      arg = this.mpNoFunc();
    }
    if (name === 'log' || name === 'lg') {
      if (!base && name === 'log') return { k: 'op', op: 'ln', args: [arg] };
      const b: Node = base ?? { k: 'num', text: '10' };
      return { k: 'op', op: '/', args: [{ k: 'op', op: 'ln', args: [arg] }, { k: 'op', op: 'ln', args: [b] }] };
    }
    return { k: 'op', op: name, args: [arg] };
  }
  /** An unparenthesised function argument: a product of powers, stopping at the next function. */
  mpNoFunc(): Node {
    let left = this.power();
    for (;;) {
      const t = this.peek();
      if (t === undefined || (t.startsWith('\\') && FUNCS.has(t.slice(1)))) return left;
      const right = this.attempt(() => this.power());
      if (!right) return left;
      left = { k: 'op', op: '*', args: [left, right] };
    }
  }
  atom(): Node {
    const t = this.next();
    if (t === undefined) throw new ParseError('unexpected end');
    if (/^\d/.test(t)) return { k: 'num', text: t.replaceAll(GAP, '') };
    if (t === '\\infty') return { k: 'inf' };
    if (/^[a-zA-Z]$/.test(t) || (/^\\[a-zA-Z]+$/.test(t) && !FUNCS.has(t.slice(1)) && !RELATIONS.has(t) && !['\\cdot', '\\times', '\\div', '\\rfloor', '\\rceil'].includes(t))) {
      let name = t.replace(/^\\/, '');
      if (this.peek() === '_') {
        this.next();
        // sympy names `a_1` and `a_{1}` alike: a_{1}.
        const from = this.pos;
        const sub = this.peek() === '{' ? this.toks.slice(from + 1, this.skipBraced() - 1).join('') : this.next();
        if (sub === undefined) throw new ParseError('unexpected end');
        name += `_{${sub.replaceAll(GAP, '')}}`;
      }
      return { k: 'sym', name };
    }
    throw new ParseError(`unexpected ${t}`);
  }
  /** Moves past a braced group; returns the position after it. */
  skipBraced(): number {
    let depth = 0;
    do {
      const t = this.next();
      if (t === undefined) throw new ParseError('unclosed {');
      if (t === '{') depth++;
      else if (t === '}') depth--;
    } while (depth > 0);
    return this.pos;
  }
}

/** sympy's non-strict parse_latex: null where it raises. */
export function parseLatexAnswer(s: string): Node | null {
  try {
    const p = new Parser(tokenize(s.trim()));
    return p.relation();
  } catch (e) {
    if (e instanceof ParseError) return null;
    throw e;
  }
}

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
function gamma(x: number): number {
  if (!Number.isInteger(x) || x < 1 || x > 171) return NaN;
  let r = 1;
  for (let i = 2; i < x; i++) r *= i;
  return r;
}

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
    case 'floor': return real(a, Math.floor);
    case 'ceil': return real(a, Math.ceil);
    case 'fact': return real(a, (x) => gamma(x + 1));
    case 'binom': return a.im === 0 && b.im === 0 ? c(gamma(a.re + 1) / (gamma(b.re + 1) * gamma(a.re - b.re + 1))) : c(NaN, NaN);
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

/** Fixed sample points for symbols (deterministic verdicts; of both signs and complex, so |x| is not x nor √(x²)). */
const POINTS = [c(0.5772156649), c(-1.3247179572), c(0.685452001, 0.3183098862), c(-0.2720196495, -1.4142135624)];

/** The reference's `parse_latex` comparison of two (already normalised) answers. */
export function latexEqual(a: string, b: string): boolean {
  const x = parseLatexAnswer(a);
  const y = parseLatexAnswer(b);
  if (!x || !y) return false;
  if (JSON.stringify(x) === JSON.stringify(y)) return true;
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
