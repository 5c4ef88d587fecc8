// Python `json.loads` / `json.dumps` over a value tree that keeps what JSON.parse loses: object
// key order (JS moves integer-like keys first), ints vs floats (`1` vs `1.0`), big ints, NaN and
// ±Infinity. Renderers that re-serialise tool-call arguments need all of it to write the same
// text (and so the same tokens) as the reference. Error messages follow CPython 3.11's decoder.

import { PyFloat, pyFloatRepr, pyJsonString } from '../pyjson.js';

/** A decoded JSON value: ints are bigints, floats PyFloat, objects Maps in document order. */
export type PyJsonValue = null | boolean | string | bigint | PyFloat | PyJsonValue[] | PyJsonObject;
export type PyJsonObject = Map<string, PyJsonValue>;

export class PyJsonDecodeError extends Error {
  constructor(msg: string, doc: string, pos: number) {
    // Python reports positions in code points.
    const before = [...doc.slice(0, pos)];
    const lastNl = before.lastIndexOf('\n');
    const line = before.filter((c) => c === '\n').length + 1;
    super(`${msg}: line ${line} column ${before.length - lastNl} (char ${before.length})`);
    this.name = 'PyJsonDecodeError';
  }
}

const WS = ' \t\n\r';
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

class Decoder {
  constructor(private readonly s: string) {}

  skipWs(i: number): number {
    while (i < this.s.length && WS.includes(this.s[i])) i++;
    return i;
  }

  fail(msg: string, pos: number): never {
    throw new PyJsonDecodeError(msg, this.s, pos);
  }

  /** scan_once: a value starting exactly at `i` (no leading whitespace). */
  value(i: number): [PyJsonValue, number] {
    const s = this.s;
    const c = s[i];
    if (c === '"') return this.string(i + 1);
    if (c === '{') return this.object(i + 1);
    if (c === '[') return this.array(i + 1);
    for (const [lit, v] of [['null', null], ['true', true], ['false', false]] as const) {
      if (s.startsWith(lit, i)) return [v, i + lit.length];
    }
    for (const [lit, v] of [['NaN', NaN], ['Infinity', Infinity], ['-Infinity', -Infinity]] as const) {
      if (s.startsWith(lit, i)) return [new PyFloat(v), i + lit.length];
    }
    NUMBER.lastIndex = i;
    const m = i < s.length ? NUMBER.exec(s) : null;
    if (!m) this.fail('Expecting value', i);
    const end = i + m[0].length;
    return [m[1] !== undefined || m[2] !== undefined ? new PyFloat(Number(m[0])) : BigInt(m[0]), end];
  }

  string(i: number): [string, number] {
    const s = this.s;
    const begin = i - 1;
    let out = '';
    for (;;) {
      if (i >= s.length) this.fail('Unterminated string starting at', begin);
      const c = s[i];
      const code = c.charCodeAt(0);
      if (c === '"') return [out, i + 1];
      if (code < 0x20) this.fail('Invalid control character at', i);
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const esc = s[i + 1];
      if (esc === undefined) this.fail('Unterminated string starting at', begin);
      if (esc === 'u') {
        const hex = s.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('Invalid \\uXXXX escape', i + 1);
        // A surrogate pair is two escapes; as UTF-16 code units they simply concatenate.
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        if (!(esc in ESCAPES)) this.fail('Invalid \\escape', i);
        out += ESCAPES[esc];
        i += 2;
      }
    }
  }

  object(i: number): [PyJsonObject, number] {
    const s = this.s;
    const obj: PyJsonObject = new Map();
    i = this.skipWs(i);
    if (s[i] === '}') return [obj, i + 1];
    for (;;) {
      if (s[i] !== '"') this.fail('Expecting property name enclosed in double quotes', i);
      let key: string;
      [key, i] = this.string(i + 1);
      i = this.skipWs(i);
      if (s[i] !== ':') this.fail("Expecting ':' delimiter", i);
      let v: PyJsonValue;
      [v, i] = this.value(this.skipWs(i + 1));
      obj.set(key, v); // a repeated key keeps its first position and takes the last value, like dict
      i = this.skipWs(i);
      if (s[i] === '}') return [obj, i + 1];
      if (s[i] !== ',') this.fail("Expecting ',' delimiter", i);
      i = this.skipWs(i + 1);
    }
  }

  array(i: number): [PyJsonValue[], number] {
    const s = this.s;
    const arr: PyJsonValue[] = [];
    i = this.skipWs(i);
    if (s[i] === ']') return [arr, i + 1];
    for (;;) {
      let v: PyJsonValue;
      [v, i] = this.value(i);
      arr.push(v);
      i = this.skipWs(i);
      if (s[i] === ']') return [arr, i + 1];
      if (s[i] !== ',') this.fail("Expecting ',' delimiter", i);
      i = this.skipWs(i + 1);
    }
  }
}

/** Python `json.loads(s)`; throws PyJsonDecodeError with Python's message on invalid input. */
export function pyJsonLoads(s: string): PyJsonValue {
  const d = new Decoder(s);
  if (s.startsWith('\ufeff')) d.fail('Unexpected UTF-8 BOM (decode using utf-8-sig)', 0);
  const [v, end] = d.value(d.skipWs(0));
  const rest = d.skipWs(end);
  if (rest !== s.length) d.fail('Extra data', rest);
  return v;
}

/** `json.dumps(s, ensure_ascii=False)` for a string: only `"`, `\` and control characters escaped. */
function pyJsonStringUnicode(s: string): string {
  const named: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
  return (
    '"' +
    s.replace(/[\x00-\x1f\\"]/g, (c) => named[c] ?? '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) +
    '"'
  );
}

/** Python `json.dumps(value, ensure_ascii=…)` with default separators. */
export function pyJsonDumpValue(value: PyJsonValue, opts: { ensureAscii?: boolean } = {}): string {
  const str = opts.ensureAscii === false ? pyJsonStringUnicode : pyJsonString;
  const enc = (v: PyJsonValue): string => {
    if (v === null) return 'null';
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'string') return str(v);
    if (v instanceof PyFloat) return pyFloatRepr(v.value);
    if (Array.isArray(v)) return `[${v.map(enc).join(', ')}]`;
    return `{${[...v].map(([k, x]) => `${str(k)}: ${enc(x)}`).join(', ')}}`;
  };
  return enc(value);
}

export function isPyJsonObject(v: PyJsonValue): v is PyJsonObject {
  return v instanceof Map;
}
