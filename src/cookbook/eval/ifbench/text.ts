// The Python string operations IFBench's checkers are built from (its instructions.py), with
// Python's semantics: code points, Unicode whitespace, string.punctuation.

/** string.punctuation. */
export const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

// str.isspace(): Unicode White_Space plus the ASCII separators \x1c-\x1f, not U+FEFF.
const SPACE_CLASS = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const SPACE = new RegExp(`[${SPACE_CLASS}]`, 'u');
const SPACES = new RegExp(`[${SPACE_CLASS}]+`, 'gu');

export const isSpace = (ch: string) => SPACE.test(ch);

/** str.split() with no argument: runs of whitespace, no empty fields. */
export const splitWs = (s: string): string[] => s.split(SPACES).filter((w) => w !== '');

/** str.strip(chars); chars undefined: whitespace. */
export function strip(s: string, chars?: string): string {
  const cps = [...s];
  const drop = chars === undefined ? isSpace : (c: string) => chars.includes(c);
  let a = 0;
  let b = cps.length;
  while (a < b && drop(cps[a]!)) a++;
  while (b > a && drop(cps[b - 1]!)) b--;
  return cps.slice(a, b).join('');
}

/** str.rstrip(chars); chars undefined: whitespace. */
export function rstrip(s: string, chars?: string): string {
  const cps = [...s];
  const drop = chars === undefined ? isSpace : (c: string) => chars.includes(c);
  let b = cps.length;
  while (b > 0 && drop(cps[b - 1]!)) b--;
  return cps.slice(0, b).join('');
}

/** str.lstrip(chars). */
export function lstrip(s: string, chars: string): string {
  const cps = [...s];
  let a = 0;
  while (a < cps.length && chars.includes(cps[a]!)) a++;
  return cps.slice(a).join('');
}

/** s.translate(str.maketrans('', '', string.punctuation)). */
export const removePunctuation = (s: string) => [...s].filter((c) => !PUNCTUATION.includes(c)).join('');

/** word.strip(string.punctuation + ' '). */
export const stripPunct = (s: string) => strip(s, `${PUNCTUATION} `);

/** len() in code points. */
export const pyLen = (s: string) => [...s].length;

/** s[0] by code point. */
export const firstChar = (s: string) => [...s][0] ?? '';

/** str.isalpha() of one character. */
export const isAlpha = (ch: string) => /^\p{L}$/u.test(ch);

/** str.islower(): a lowercase character and no uppercase or titlecase one. */
export const pyIsLower = (s: string) => /\p{Lowercase}/u.test(s) && !/[\p{Uppercase}\p{Lt}]/u.test(s);

/** str.isupper(): an uppercase character and no lowercase or titlecase one. */
export const pyIsUpper = (s: string) => /\p{Uppercase}/u.test(s) && !/[\p{Lowercase}\p{Lt}]/u.test(s);

/** seq[i] with Python's negative indices; undefined where Python raises IndexError. */
export function pyAt<T>(seq: readonly T[], i: number): T | undefined {
  const j = i < 0 ? seq.length + i : i;
  return j >= 0 && j < seq.length ? seq[j] : undefined;
}
