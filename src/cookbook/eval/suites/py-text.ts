// Python's string semantics where a reference grader's result depends on them: `\b` and `\w` over
// Unicode (JavaScript's are ASCII-only), str.strip()'s whitespace, slicing by code point, str().

/** Python's `\w` on str: letters, digits and numerics of any script, and `_`. */
export const PY_WORD = '[\\p{L}\\p{N}_]';
/** Python's `\b`: a change between a word and a non-word character (or the text's edge). */
export const PY_BOUNDARY = `(?:(?<=${PY_WORD})(?!${PY_WORD})|(?<!${PY_WORD})(?=${PY_WORD}))`;

/** `\b<inner>\b` with Python's boundaries (the `u` flag is added). */
export function pyWordBoundaryRegex(inner: string, flags = ''): RegExp {
  return new RegExp(`${PY_BOUNDARY}${inner}${PY_BOUNDARY}`, `${flags}u`);
}

/** A literal string as a pattern (the `u` flag's escapes). */
export function escapeRegex(s: string): string {
  // No `-`: outside a class the `u` flag rejects `\-`.
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

// str.isspace(): Unicode White_Space plus the ASCII separators \x1c-\x1f, not U+FEFF.
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const STRIP = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, 'gu');

/** str.strip() with no argument. */
export const pyStrip = (s: string): string => s.replace(STRIP, '');

/** s[-n:] by code point. */
export const pyTail = (s: string, n: number): string => [...s].slice(-n).join('');

/** str(v) for the JSON values a row holds. */
export function pyStr(v: unknown): string {
  if (v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return String(v);
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** repr(s) of a str: Python's choice of quotes and its escapes of what str.isprintable() rejects. */
function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\' || ch === quote) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch)) out += cp < 0x100 ? `\\x${hex(cp, 2)}` : cp < 0x10000 ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`;
    else out += ch;
  }
  return out + quote;
}

/** repr(v) of a JSON value as Python holds it (a float that JSON wrote as `1.0` reads back as 1 here). */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return reprString(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${reprString(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return String(v);
}

/** json.dumps(v, indent=2): non-ASCII escaped as \uXXXX (ensure_ascii). */
export function pyJsonDumpsIndent2(v: unknown): string {
  return JSON.stringify(v, null, 2).replace(/[\u0080-\uffff]/g, (c) => `\\u${hex(c.charCodeAt(0), 4)}`);
}
