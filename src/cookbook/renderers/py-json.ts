// Python `json.loads` / `json.dumps` over a value tree that keeps what JSON.parse loses: object
// key order (JS moves integer-like keys first), ints vs floats (`1` vs `1.0`), big ints, NaN and
// ±Infinity. Renderers that re-serialise tool-call arguments or tool declarations need all of it
// to write the same text (and so the same tokens) as the reference. Error messages follow
// CPython 3.11's decoder, since some renderers put them in the parsed message.
//
// (../pyjson.ts is the older writer for run files -- metrics.jsonl, config.json; its floats are
// chosen per key and Maps lose their order there, so renderers use this module.)

import { PyFloat, pyFloatRepr, pyJsonString } from '../pyjson.js';

/** A decoded JSON value: ints are bigints, floats PyFloat, objects Maps in document order. */
export type PyJsonValue = null | boolean | string | bigint | PyFloat | PyJsonValue[] | PyJsonObject;
export type PyJsonObject = Map<string, PyJsonValue>;

/** Python's JSONDecodeError, with its `msg: line L column C (char P)` wording. */
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
const HEX4 = /^[0-9a-fA-F]{4}$/;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const LITERALS: ReadonlyArray<readonly [string, () => PyJsonValue]> = [
  ['null', () => null],
  ['true', () => true],
  ['false', () => false],
  ['NaN', () => new PyFloat(NaN)],
  ['Infinity', () => new PyFloat(Infinity)],
  ['-Infinity', () => new PyFloat(-Infinity)],
];

/** CPython's scanner: each method reads from index `i` and returns the value and the end index. */
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
    for (const [lit, make] of LITERALS) {
      if (s.startsWith(lit, i)) return [make(), i + lit.length];
    }
    NUMBER.lastIndex = i;
    const m = i < s.length ? NUMBER.exec(s) : null;
    if (!m) this.fail('Expecting value', i);
    const isFloat = m[1] !== undefined || m[2] !== undefined;
    return [isFloat ? new PyFloat(Number(m[0])) : BigInt(m[0]), i + m[0].length];
  }

  string(i: number): [string, number] {
    const s = this.s;
    const begin = i - 1;
    let out = '';
    for (;;) {
      if (i >= s.length) this.fail('Unterminated string starting at', begin);
      const c = s[i];
      if (c === '"') return [out, i + 1];
      if (c.charCodeAt(0) < 0x20) this.fail('Invalid control character at', i);
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const esc = s[i + 1];
      if (esc === undefined) this.fail('Unterminated string starting at', begin);
      if (esc === 'u') {
        const hex = s.slice(i + 2, i + 6);
        if (!HEX4.test(hex)) this.fail('Invalid \\uXXXX escape', i + 1);
        // A surrogate pair is two escapes; as UTF-16 code units they simply concatenate.
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        if (!Object.hasOwn(ESCAPES, esc)) this.fail('Invalid \\escape', i);
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

/** Why Python's `json.loads(text)` would reject `text` (its message), or undefined if it accepts it. */
export function pyJsonError(text: string): string | undefined {
  try {
    pyJsonLoads(text);
    return undefined;
  } catch (e) {
    if (e instanceof PyJsonDecodeError) return e.message;
    throw e;
  }
}

export function isPyJsonObject(v: PyJsonValue): v is PyJsonObject {
  return v instanceof Map;
}

/** Code-point order, like Python's sorted() over str (JS sort compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const ai = [...a];
  const bi = [...b];
  for (let i = 0; i < Math.min(ai.length, bi.length); i++) {
    const d = ai[i].codePointAt(0)! - bi[i].codePointAt(0)!;
    if (d !== 0) return d;
  }
  return ai.length - bi.length;
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

export interface PyJsonDumpOptions {
  /** Python's `ensure_ascii` (default true). */
  ensureAscii?: boolean;
  /** Python's `sort_keys`: keys in code-point order. */
  sortKeys?: boolean;
  /** Python's `separators=(item, key)`; default `(', ', ': ')`. */
  separators?: readonly [item: string, key: string];
}

/**
 * Python `json.dumps(value, …)`. Takes loaded values (Maps keep their order) and plain JS data:
 * a JS number is an int when integral (wrap it in PyFloat to force a float), and object keys
 * whose value is undefined are left out, as JSON.stringify does.
 */
export function pyJsonDumpValue(value: unknown, opts: PyJsonDumpOptions = {}): string {
  const str = opts.ensureAscii === false ? pyJsonStringUnicode : pyJsonString;
  const [itemSep, keySep] = opts.separators ?? [', ', ': '];
  const enc = (v: unknown): string => {
    if (v === null || v === undefined) return 'null';
    if (v instanceof PyFloat) return pyFloatRepr(v.value);
    switch (typeof v) {
      case 'boolean':
        return v ? 'true' : 'false';
      case 'bigint':
        return v.toString();
      case 'number':
        return Number.isInteger(v) ? BigInt(v).toString() : pyFloatRepr(v);
      case 'string':
        return str(v);
      case 'object':
        break;
      default:
        throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
    }
    if (Array.isArray(v)) return '[' + v.map(enc).join(itemSep) + ']';
    let entries: Array<[string, unknown]> =
      v instanceof Map ? [...v.entries()] : Object.entries(v as object).filter(([, x]) => x !== undefined);
    if (opts.sortKeys) entries = entries.sort(([a], [b]) => compareCodePoints(String(a), String(b)));
    return '{' + entries.map(([k, x]) => `${str(String(k))}${keySep}${enc(x)}`).join(itemSep) + '}';
  };
  return enc(value);
}
