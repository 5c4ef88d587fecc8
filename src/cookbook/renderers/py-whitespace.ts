// Python's notion of whitespace (`str.isspace`: what `str.strip()` with no argument and `\s` in a
// `re` str pattern cover), which differs from JS `\s` and `trim()`: Python counts \x1c-\x1f and
// \x85, JS counts \ufeff. Renderers mirroring a template's `.strip()` or a reference regex need
// Python's set.

/** The whitespace characters themselves (for pyStrip/pyLstrip/pyRstrip in content.ts). */
export const PY_WHITESPACE =
  '\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a' +
  '\u2028\u2029\u202f\u205f\u3000';

/** The same set as the inside of a regex character class: `[${PY_WS_CLASS}]` stands for `\s`. */
export const PY_WS_CLASS = [...PY_WHITESPACE].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

const LEADING = new RegExp(`^[${PY_WS_CLASS}]+`);
const TRAILING = new RegExp(`[${PY_WS_CLASS}]+$`);

/** Python `s.strip()` with no argument. */
export function pyStripWs(s: string): string {
  return s.replace(LEADING, '').replace(TRAILING, '');
}

/** Python `not s.strip()`. */
export function isPyBlank(s: string): boolean {
  return pyStripWs(s) === '';
}
