// Python `json.dumps` compatible serialisation, so metrics.jsonl / checkpoints.jsonl / config.json
// are byte-identical to the reference's logs.
//
// JavaScript has one number type, so `1` and `1.0` are indistinguishable. Python writes the int as
// `1` and the float as `1.0`. Callers say which numbers are floats in one of two ways:
//   * wrap the value: `new PyFloat(1)` is written `1.0`;
//   * pass `floatKeys`: a set of object keys (or a predicate) whose numeric values are floats,
//     e.g. `new Set(['learning_rate', 'progress', 'train_mean_nll'])`.
// A number that is not an integer (or is NaN/±Infinity) is always a float. Everything else is an
// int, written with all its digits (bigints are ints too).

export class PyFloat {
  constructor(readonly value: number) {}
  toJSON(): number {
    return this.value;
  }
}

/** Mark a number as a Python float for `pyJsonDumps`. */
export const pyFloat = (value: number): PyFloat => new PyFloat(value);

export type FloatKeys = ReadonlySet<string> | ((key: string) => boolean);

export interface PyJsonOptions {
  /** Like Python's `indent=`: pretty-print with this many spaces (items separated by ","). */
  indent?: number;
  /** Object keys whose (integral) numeric values must be written as floats. */
  floatKeys?: FloatKeys;
  /** Python's `sort_keys=True`. */
  sortKeys?: boolean;
}

/** Python `repr(float)`: shortest round-trip digits, Python's choice of fixed vs exponent form. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  // toExponential() with no argument yields the shortest digits that round-trip, like Python.
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(x.toExponential());
  if (!m) throw new Error(`unexpected float format for ${x}`);
  const [, sign, lead, frac = '', expStr] = m;
  const digits = lead + frac;
  const exp = Number(expStr); // value = 0.d1d2… × 10^(exp+1)
  const decpt = exp + 1;
  if (decpt <= -4 || decpt > 16) {
    const mant = frac ? `${lead}.${frac}` : lead;
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${mant}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

function pyIntRepr(x: number): string {
  return Number.isSafeInteger(x) ? String(x) : BigInt(x).toString();
}

/** JSON string literal with `ensure_ascii=True` escaping (everything outside 0x20–0x7E escaped). */
export function pyJsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}

function isFloatKey(floatKeys: FloatKeys | undefined, key: string): boolean {
  if (!floatKeys) return false;
  return typeof floatKeys === 'function' ? floatKeys(key) : floatKeys.has(key);
}

function numberRepr(x: number, asFloat: boolean): string {
  if (asFloat || !Number.isInteger(x)) return pyFloatRepr(x);
  return pyIntRepr(x);
}

export function pyJsonDumps(value: unknown, opts: PyJsonOptions = {}): string {
  const indent = opts.indent;
  const itemSep = indent === undefined ? ', ' : ',';
  const seen = new Set<object>();

  const enc = (v: unknown, level: number, keyIsFloat: boolean): string => {
    if (v === null || v === undefined) return 'null';
    if (v instanceof PyFloat) return pyFloatRepr(v.value);
    switch (typeof v) {
      case 'boolean':
        return v ? 'true' : 'false';
      case 'number':
        return numberRepr(v, keyIsFloat);
      case 'bigint':
        return v.toString();
      case 'string':
        return pyJsonString(v);
      case 'object':
        break;
      default:
        throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
    }
    const obj = v as object;
    if (seen.has(obj)) throw new TypeError('Circular reference detected');
    const nl = indent === undefined ? '' : '\n' + ' '.repeat(indent * (level + 1));
    const close = indent === undefined ? '' : '\n' + ' '.repeat(indent * level);
    seen.add(obj);
    try {
      if (Array.isArray(obj) || ArrayBuffer.isView(obj)) {
        const arr = Array.from(obj as ArrayLike<unknown>);
        if (arr.length === 0) return '[]';
        // Floats inside a list under a float key (e.g. a list of losses) stay floats.
        return '[' + nl + arr.map((x) => enc(x, level + 1, keyIsFloat)).join(itemSep + nl) + close + ']';
      }
      if (obj instanceof Map) {
        return enc(Object.fromEntries(obj), level, keyIsFloat);
      }
      let keys = Object.keys(obj).filter((k) => (obj as Record<string, unknown>)[k] !== undefined);
      if (opts.sortKeys) keys = [...keys].sort();
      if (keys.length === 0) return '{}';
      const parts = keys.map(
        (k) => pyJsonString(k) + ': ' + enc((obj as Record<string, unknown>)[k], level + 1, isFloatKey(opts.floatKeys, k)),
      );
      return '{' + nl + parts.join(itemSep + nl) + close + '}';
    } finally {
      seen.delete(obj);
    }
  };
  return enc(value, 0, false);
}
