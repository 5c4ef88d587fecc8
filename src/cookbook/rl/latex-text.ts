// A small LaTeX → plain-text conversion standing in for pylatexenc's `latex_to_text`, used by the
// grader's second normaliser (spec §3.3 `_normalize` step 10). It covers what math answers use:
// fractions, roots, common symbols and functions, text/font wrappers and braces. Unknown macros
// are dropped (pylatexenc does the same), keeping their brace arguments as plain groups.
//
// One deliberate difference: `\frac{A}{B}` becomes `A/B` only when both parts are atoms and
// `(A)/(B)` otherwise, so the CAS comparison that follows sees the intended grouping.

const SYMBOLS: Record<string, string> = {
  pi: 'π',
  infty: '∞',
  cup: '∪',
  cdot: '·',
  times: '×',
  div: '÷',
  pm: '±',
  mp: '∓',
  le: '≤',
  leq: '≤',
  ge: '≥',
  geq: '≥',
  ne: '≠',
  neq: '≠',
  circ: '°',
  degree: '°',
  cap: '∩',
  approx: '≈',
  alpha: 'α',
  beta: 'β',
  gamma: 'γ',
  delta: 'δ',
  theta: 'θ',
  lambda: 'λ',
  mu: 'μ',
  sigma: 'σ',
  phi: 'φ',
  omega: 'ω',
  '%': '%',
  $: '$',
  '{': '{',
  '}': '}',
  '#': '#',
  '&': '&',
  _: '_',
};

const SPACES = new Set([',', ';', ':', ' ', 'quad', 'qquad', '!', 'enspace', 'thinspace']);
const FUNCTIONS = new Set(['sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'log', 'ln', 'exp', 'min', 'max', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'det', 'gcd', 'lim']);
const WRAPPERS = new Set(['text', 'textrm', 'textbf', 'textit', 'mathrm', 'mathbf', 'mathit', 'mathsf', 'operatorname', 'boxed', 'displaystyle', 'textstyle', 'left', 'right', 'big', 'Big', 'bigg', 'Bigg']);

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  /** Text until `stop` (a closing brace/bracket) or the end. */
  seq(stop?: string): string {
    let out = '';
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (stop !== undefined && c === stop) return out;
      out += this.atom();
    }
    return out;
  }

  /** One argument: a brace group or a single character/macro. */
  arg(): string {
    while (this.s[this.i] === ' ') this.i++;
    if (this.s[this.i] === '{') {
      this.i++;
      const inner = this.seq('}');
      this.i++;
      return inner;
    }
    if (this.i >= this.s.length) return '';
    return this.atom();
  }

  optionalArg(): string | null {
    if (this.s[this.i] !== '[') return null;
    this.i++;
    const inner = this.seq(']');
    this.i++;
    return inner;
  }

  atom(): string {
    const c = this.s[this.i];
    if (c === '{') {
      this.i++;
      const inner = this.seq('}');
      this.i++;
      return inner;
    }
    if (c === '}') {
      this.i++;
      return '';
    }
    if (c !== '\\') {
      this.i++;
      return c;
    }
    this.i++;
    let name = '';
    if (/[a-zA-Z]/.test(this.s[this.i] ?? '')) {
      while (/[a-zA-Z]/.test(this.s[this.i] ?? '')) name += this.s[this.i++];
      // LaTeX swallows the spaces after a control word.
      while (this.s[this.i] === ' ') this.i++;
    } else if (this.i < this.s.length) {
      name = this.s[this.i++];
    }
    return this.macro(name);
  }

  macro(name: string): string {
    if (name === 'frac' || name === 'dfrac' || name === 'tfrac') {
      const a = this.arg();
      const b = this.arg();
      const wrap = (x: string) => (/^[A-Za-z0-9.]+$/.test(x.trim()) ? x.trim() : `(${x.trim()})`);
      return `${wrap(a)}/${wrap(b)}`;
    }
    if (name === 'mbox') {
      // pylatexenc's latex2text drops \mbox together with its argument (the parity suite pins it).
      this.arg();
      return '';
    }
    if (name === 'sqrt') {
      const n = this.optionalArg();
      const x = this.arg();
      return n === null ? `√(${x})` : `(${x})^(1/(${n}))`;
    }
    if (name in SYMBOLS) return SYMBOLS[name];
    if (SPACES.has(name)) return name === '!' ? '' : ' ';
    if (FUNCTIONS.has(name)) return name;
    if (WRAPPERS.has(name)) return '';
    return '';
  }
}

export function latexToText(latex: string): string {
  return new Parser(latex).seq();
}
