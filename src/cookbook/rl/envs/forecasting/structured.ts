// The reference's _parse_structured: `json.loads(value)`, else `ast.literal_eval(value)` (Prophet
// Arena's CSV cells hold either JSON or Python reprs of lists and dicts). Values keep what the
// loader's checks tell apart: ints (bigint) from floats (PyFloat), booleans from numbers, lists
// from tuples, str-keyed dicts from dicts with other keys. literal_eval is covered for the
// literals a cell can hold: str (all quote forms, prefixes, escapes, implicit concatenation),
// int/float in any base with underscores, True/False/None, list, tuple, dict, set, `set()` and
// unary signs; bytes and complex numbers parse to opaque values that no check accepts.
import { PyFloat } from '../../../pyjson.js';
import { pyJsonLoads, type PyJsonValue } from '../../../renderers/py-json.js';

/** A value the reference's checks can only reject (bytes, complex, tuple, set). */
export class OtherPyValue {
  constructor(readonly kind: 'bytes' | 'complex' | 'tuple' | 'set') {}
}

/** A dict: string keys in `map`; `otherKeys` counts the keys that are not str. */
export class PyDict {
  constructor(
    readonly map: Map<string, PyValue>,
    readonly otherKeys: number,
  ) {}
}

export type PyValue = null | boolean | string | bigint | PyFloat | PyValue[] | PyDict | OtherPyValue;

export class StructuredValueError extends Error {
  override name = 'StructuredValueError';
}

function fromJson(v: PyJsonValue): PyValue {
  if (Array.isArray(v)) return v.map(fromJson);
  if (v instanceof Map) return new PyDict(new Map([...v].map(([k, x]) => [k, fromJson(x)])), 0);
  return v;
}

/** `json.loads`, else `ast.literal_eval`; StructuredValueError where both refuse. */
export function parseStructured(text: string): PyValue {
  try {
    return fromJson(pyJsonLoads(text));
  } catch {
    return literalEval(text);
  }
}

const SIMPLE_ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\n': '' };
const NUMBER = /(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?[jJ]?)/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

class LiteralParser {
  pos = 0;
  constructor(private readonly s: string) {}

  fail(what: string): never {
    throw new StructuredValueError(`malformed literal at character ${this.pos}: ${what}`);
  }

  skip(): void {
    for (;;) {
      while (this.pos < this.s.length && ' \t\n\r\f\v'.includes(this.s[this.pos])) this.pos++;
      if (this.s[this.pos] === '\\' && this.s[this.pos + 1] === '\n') this.pos += 2;
      else if (this.s[this.pos] === '#') while (this.pos < this.s.length && this.s[this.pos] !== '\n') this.pos++;
      else return;
    }
  }

  peek(): string | undefined {
    this.skip();
    return this.s[this.pos];
  }

  expect(c: string): void {
    if (this.peek() !== c) this.fail(`expected ${c}`);
    this.pos++;
  }

  value(): PyValue {
    const c = this.peek();
    if (c === '[') return this.sequence(']');
    if (c === '(') return this.sequence(')');
    if (c === '{') return this.braces();
    if (c === '+' || c === '-') {
      // literal_eval takes one sign on a number constant (not on a sign, a name or a bracket).
      this.pos++;
      this.skip();
      NUMBER.lastIndex = this.pos;
      const operand = NUMBER.exec(this.s)?.[0] ?? this.fail('unary sign on a non-number');
      this.pos += operand.length;
      const v = parseNumber(operand) ?? this.fail(`bad number ${operand}`);
      if (typeof v === 'bigint') return c === '-' ? -v : v;
      if (v instanceof PyFloat) return new PyFloat(c === '-' ? -v.value : v.value);
      return v;
    }
    const str = this.strings();
    if (str !== undefined) return str;
    NUMBER.lastIndex = this.pos;
    const num = NUMBER.exec(this.s);
    if (num) {
      this.pos += num[0].length;
      return parseNumber(num[0]) ?? this.fail(`bad number ${num[0]}`);
    }
    NAME.lastIndex = this.pos;
    const name = NAME.exec(this.s)?.[0];
    if (name === 'True' || name === 'False' || name === 'None') {
      this.pos += name.length;
      return name === 'None' ? null : name === 'True';
    }
    if (name === 'set') {
      this.pos += 3;
      this.expect('(');
      this.expect(')');
      return new OtherPyValue('set');
    }
    this.fail('not a literal');
  }

  /** Adjacent string literals concatenate; str and bytes do not mix. */
  strings(): string | OtherPyValue | undefined {
    let out: string | undefined;
    let bytes = false;
    for (;;) {
      const start = this.pos;
      const m = /[rRuUbB]{0,2}(?=['"])/y;
      m.lastIndex = this.pos;
      const prefix = m.exec(this.s)?.[0];
      if (prefix === undefined || !/^(?:[rRuUbB]|[rR][bB]|[bB][rR])?$/.test(prefix)) return out === undefined ? undefined : bytes ? new OtherPyValue('bytes') : out;
      const isBytes = /[bB]/.test(prefix);
      if (out !== undefined && isBytes !== bytes) this.fail('cannot mix bytes and nonbytes literals');
      bytes = isBytes;
      this.pos += prefix.length;
      out = (out ?? '') + this.stringBody(/[rR]/.test(prefix), start);
      this.skip();
    }
  }

  stringBody(raw: boolean, start: number): string {
    const s = this.s;
    const q = s.startsWith(s[this.pos].repeat(3), this.pos) ? s[this.pos].repeat(3) : s[this.pos];
    this.pos += q.length;
    let out = '';
    for (;;) {
      if (this.pos >= s.length) {
        this.pos = start;
        this.fail('unterminated string');
      }
      if (s.startsWith(q, this.pos)) {
        this.pos += q.length;
        return out;
      }
      const c = s[this.pos];
      if (c === '\n' && q.length === 1) this.fail('newline in a single-quoted string');
      if (c !== '\\') {
        out += c;
        this.pos++;
        continue;
      }
      const e = s[this.pos + 1];
      if (e === undefined) this.fail('unterminated string');
      if (raw) {
        out += c + e;
        this.pos += 2;
        continue;
      }
      this.pos += 2;
      if (Object.hasOwn(SIMPLE_ESCAPES, e)) out += SIMPLE_ESCAPES[e];
      else if (e >= '0' && e <= '7') {
        const oct = /[0-7]{1,3}/y;
        oct.lastIndex = this.pos - 1;
        const d = oct.exec(s)![0];
        out += String.fromCodePoint(parseInt(d, 8));
        this.pos += d.length - 1;
      } else if (e === 'x' || e === 'u' || e === 'U') {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = s.slice(this.pos, this.pos + n);
        if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) this.fail(`truncated \\${e} escape`);
        const cp = parseInt(hex, 16);
        if (cp > 0x10ffff) this.fail('illegal Unicode character');
        out += String.fromCodePoint(cp);
        this.pos += n;
      } else if (e === 'N') this.fail('\\N{...} escapes are not supported');
      else out += c + e; // an unknown escape keeps its backslash
    }
  }

  sequence(close: ']' | ')'): PyValue {
    this.pos++;
    const items: PyValue[] = [];
    let trailingComma = false;
    while (this.peek() !== close) {
      items.push(this.value());
      trailingComma = false;
      if (this.peek() === ',') {
        this.pos++;
        trailingComma = true;
      } else if (this.peek() !== close) this.fail(`expected , or ${close}`);
    }
    this.pos++;
    if (close === ']') return items;
    // `(x)` is x itself; `()` and `(x,)` are tuples.
    return items.length === 1 && !trailingComma ? items[0] : new OtherPyValue('tuple');
  }

  braces(): PyValue {
    this.pos++;
    if (this.peek() === '}') {
      this.pos++;
      return new PyDict(new Map(), 0);
    }
    const first = this.value();
    if (this.peek() !== ':') {
      assertHashable(first, this);
      while (this.peek() === ',') {
        this.pos++;
        if (this.peek() === '}') break;
        assertHashable(this.value(), this);
      }
      this.expect('}');
      return new OtherPyValue('set');
    }
    const map = new Map<string, PyValue>();
    let otherKeys = 0;
    let key: PyValue = first;
    for (;;) {
      this.expect(':');
      const v = this.value();
      assertHashable(key, this);
      if (typeof key === 'string') map.set(key, v);
      else otherKeys++;
      if (this.peek() !== ',') break;
      this.pos++;
      if (this.peek() === '}') break;
      key = this.value();
    }
    this.expect('}');
    return new PyDict(map, otherKeys);
  }
}

function assertHashable(v: PyValue, p: LiteralParser): void {
  if (Array.isArray(v) || v instanceof PyDict || (v instanceof OtherPyValue && v.kind === 'set')) p.fail('unhashable type');
}

function parseNumber(text: string): PyValue | null {
  const t = text.replace(/_/g, '');
  if (/[jJ]$/.test(t)) return new OtherPyValue('complex');
  const radix = /^0[xX]/.test(t) ? 16 : /^0[oO]/.test(t) ? 8 : /^0[bB]/.test(t) ? 2 : 10;
  if (radix !== 10) return BigInt(`0${t[1].toLowerCase()}${t.slice(2)}`);
  if (/[.eE]/.test(t)) return new PyFloat(Number(t));
  // A decimal int may not have leading zeros ("007" is a syntax error; "000" is fine).
  if (/^0+[1-9]/.test(t)) return null;
  return BigInt(t);
}

/** `ast.literal_eval(text)` (after its lstrip of spaces and tabs). */
export function literalEval(text: string): PyValue {
  const p = new LiteralParser(text.replace(/^[ \t]+/, ''));
  const v = p.value();
  if (p.peek() !== undefined) p.fail('trailing characters');
  return v;
}
