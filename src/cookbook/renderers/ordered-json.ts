// Python-faithful `json.loads` / `json.dumps` for renderers that re-serialise tool-call arguments
// value by value (GLM's <arg_key>/<arg_value> format). JSON.parse loses two things Python keeps
// and the rendered tokens depend on: key order (JS objects move integer-like keys first) and
// whether a number was a float (`1.0` vs `1`). Objects therefore load as Maps, ints as bigints
// and floats as PyFloat.

import { PyFloat, pyFloatRepr, pyJsonString } from '../pyjson.js';

/** A JSON value as Python's json module sees it. */
export type PyJsonValue = null | boolean | string | bigint | PyFloat | PyJsonValue[] | Map<string, PyJsonValue>;

/** Raised for text Python's `json.loads` rejects (its JSONDecodeError). */
export class PyJsonDecodeError extends Error {
  constructor(message: string, pos: number) {
    super(`${message}: char ${pos}`);
    this.name = 'PyJsonDecodeError';
  }
}

const JSON_WS = ' \t\n\r';
const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const HEX4_RE = /^[0-9a-fA-F]{4}$/;

/** Python `json.loads(text)` (strict mode, NaN/Infinity accepted, no UTF-8 BOM). */
export function pyJsonLoads(text: string): PyJsonValue {
  if (text.startsWith('\ufeff')) throw new PyJsonDecodeError('Unexpected UTF-8 BOM', 0);
  let pos = 0;
  const skipWs = () => {
    while (pos < text.length && JSON_WS.includes(text[pos])) pos++;
  };
  const fail = (msg: string): never => {
    throw new PyJsonDecodeError(msg, pos);
  };

  const parseString = (): string => {
    pos++; // opening quote
    let out = '';
    for (;;) {
      if (pos >= text.length) fail('Unterminated string starting at');
      const ch = text[pos];
      if (ch === '"') {
        pos++;
        return out;
      }
      if (ch.charCodeAt(0) < 0x20) fail('Invalid control character at');
      if (ch !== '\\') {
        out += ch;
        pos++;
        continue;
      }
      const esc = text[pos + 1];
      if (esc === 'u') {
        const hex = text.slice(pos + 2, pos + 6);
        if (!HEX4_RE.test(hex)) fail('Invalid \\uXXXX escape');
        // Surrogate pairs need no joining: a JS string is UTF-16 code units already.
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else if (esc !== undefined && Object.hasOwn(SIMPLE_ESCAPES, esc)) {
        out += SIMPLE_ESCAPES[esc];
        pos += 2;
      } else {
        fail('Invalid \\escape');
      }
    }
  };

  const parseValue = (): PyJsonValue => {
    const ch = text[pos];
    if (ch === '"') return parseString();
    if (ch === '{') {
      pos++;
      const obj = new Map<string, PyJsonValue>();
      skipWs();
      if (text[pos] === '}') {
        pos++;
        return obj;
      }
      for (;;) {
        skipWs();
        if (text[pos] !== '"') fail('Expecting property name enclosed in double quotes');
        const key = parseString();
        skipWs();
        if (text[pos] !== ':') fail("Expecting ':' delimiter");
        pos++;
        skipWs();
        // Like a Python dict: a repeated key keeps its first position and takes the last value.
        obj.set(key, parseValue());
        skipWs();
        if (text[pos] === '}') {
          pos++;
          return obj;
        }
        if (text[pos] !== ',') fail("Expecting ',' delimiter");
        pos++;
      }
    }
    if (ch === '[') {
      pos++;
      const arr: PyJsonValue[] = [];
      skipWs();
      if (text[pos] === ']') {
        pos++;
        return arr;
      }
      for (;;) {
        skipWs();
        arr.push(parseValue());
        skipWs();
        if (text[pos] === ']') {
          pos++;
          return arr;
        }
        if (text[pos] !== ',') fail("Expecting ',' delimiter");
        pos++;
      }
    }
    for (const [word, value] of [
      ['null', null],
      ['true', true],
      ['false', false],
      ['NaN', new PyFloat(NaN)],
      ['Infinity', new PyFloat(Infinity)],
      ['-Infinity', new PyFloat(-Infinity)],
    ] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return value;
      }
    }
    NUMBER_RE.lastIndex = pos;
    const m = NUMBER_RE.exec(text);
    if (!m) return fail('Expecting value');
    pos += m[0].length;
    return m[1] !== undefined || m[2] !== undefined ? new PyFloat(Number(m[0])) : BigInt(m[0]);
  };

  skipWs();
  const value = parseValue();
  skipWs();
  if (pos !== text.length) fail('Extra data');
  return value;
}

/** `json.dumps(value, ensure_ascii=False)` string escaping. */
function jsonStringUnicode(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}

/**
 * Python `json.dumps(value, ensure_ascii=…)` with default separators. Accepts loaded values and
 * plain JS data: a JS number is an int when integral (wrap it in PyFloat to force a float).
 */
export function pyJsonDumpsOrdered(value: unknown, opts: { ensureAscii?: boolean } = {}): string {
  const str = opts.ensureAscii === false ? jsonStringUnicode : pyJsonString;
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
    if (Array.isArray(v)) return '[' + v.map(enc).join(', ') + ']';
    const entries =
      v instanceof Map ? [...v.entries()] : Object.entries(v as object).filter(([, x]) => x !== undefined);
    return '{' + entries.map(([k, x]) => `${str(String(k))}: ${enc(x)}`).join(', ') + '}';
  };
  return enc(value);
}
