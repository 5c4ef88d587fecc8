// The classes of Python's `regex` module (nltk compiles its tokenizers' patterns with it, through
// nltk.redos), written for JavaScript's `u` flag: JavaScript's own \s, \w and \d differ (\s takes
// U+FEFF, \w and \d are ASCII-only).

/** regex's `\s`: White_Space (not \x1c-\x1f, which Python's `re` and str.isspace() take). */
export const RX_SPACE = '[\\p{White_Space}]';
export const RX_NON_SPACE = '[^\\p{White_Space}]';
/** regex's `\w`. */
export const RX_WORD = '[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]';
/** regex's `\d`. */
export const RX_DIGIT = '\\p{Nd}';
/** `[^\W\d]`: a word character that is no digit. */
export const RX_LETTER = `(?:(?!${RX_DIGIT})${RX_WORD})`;
/** `$` without MULTILINE: the end, or before a newline that ends the text. */
export const PY_END = '(?=\\n?(?![\\s\\S]))';

/** str.isupper() / str.islower() of one character. */
export const isUpper = (ch: string) => /\p{Uppercase}/u.test(ch);
export const isLower = (ch: string) => /\p{Lowercase}/u.test(ch);
