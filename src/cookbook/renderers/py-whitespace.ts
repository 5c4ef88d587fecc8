// Python's notion of whitespace (`str.isspace`, regex `\s` on str), which differs from JS `\s`
// and `trim()`: Python counts \x1c-\x1f and \x85, JS counts \ufeff. Renderers mirroring a
// template's `.strip()` or a reference regex need Python's set.

/** The whitespace set as the inside of a regex character class. */
export const PY_WS_CLASS = String.raw`\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`;

const LEADING = new RegExp(`^[${PY_WS_CLASS}]+`);
const TRAILING = new RegExp(`[${PY_WS_CLASS}]+$`);

/** Python `s.strip()` with no argument. */
export function pyStripWs(s: string): string {
  return s.replace(LEADING, '').replace(TRAILING, '');
}
