// sympy's LaTeX parser (parse_latex, non-strict) for what competition answers use, as the HMMT
// grader's symbolic step reads them (latex-equal.ts): numbers with `,ddd` groups and spaced
// digits, letters and unknown commands as symbols (`\pi`, `e` and `i` too: sympy's parser makes
// them plain symbols), + − · × ÷ / :, implicit products, powers, `!`, \frac \sqrt \binom, |·|,
// floor/ceiling, the elementary functions, relations. Like sympy's it stops at the first token
// that cannot extend the expression ("1,2" reads as 1, "2+" as 2), and a character its lexer
// does not know is an error.

export type Node =
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
    } else if ('+-*/()[]{}|!^_=<>,:.'.includes(s[i]) || /[a-zA-Z]/.test(s[i])) {
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
      const at = this.pos++;
      const exp = this.attempt(() => (this.peek() === '{' ? this.braced() : this.atom()));
      if (!exp) {
        this.pos = at; // an exponent that does not parse ends the expression before its `^`
        break;
      }
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
      // One digit of a longer number (`\frac12`): the token is split in place, so a parse that
      // backtracks over it reads the same tokens again.
      const rest = t.slice(1).replace(/^\u0000/, '');
      if (rest) this.toks.splice(this.pos, 1, t[0], rest);
      this.next();
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
