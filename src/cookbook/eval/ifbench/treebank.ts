// nltk.word_tokenize (nltk 3.10.4, nltk/tokenize/__init__.py and destructive.py, Apache-2.0): the
// text split into sentences by Punkt, then each by NLTKWordTokenizer, nltk's improved Treebank
// tokenizer, rule for rule. Its rules are compiled with Python's `regex` module (./rx.ts), but
// the contractions' with `re`, whose `\b` is py-text's.
import { PY_BOUNDARY } from '../suites/py-text.js';
import { sentTokenize } from './punkt.js';
import { PY_END, RX_DIGIT, RX_SPACE, RX_WORD } from './rx.js';
import { splitWs } from './text.js';

type Rule = [RegExp, string];
const rule = (pattern: string, replacement: string, flags = ''): Rule => [new RegExp(pattern, `g${flags}u`), replacement];
/** regex's `\b`. */
const RX_BOUNDARY = `(?:(?<=${RX_WORD})(?!${RX_WORD})|(?<!${RX_WORD})(?=${RX_WORD}))`;

const STARTING_QUOTES: Rule[] = [
  rule('([«“‘„]|[`]+)', ' $1 '),
  rule('^"', '``'),
  rule('(``)', ' $1 '),
  rule('([ ([{<])("|\'{2})', '$1 `` '),
  rule(`(?<!${RX_WORD})(')(?!(?:re|ve|ll|m|t|s|d|n)${RX_BOUNDARY})(?=${RX_WORD})`, '$1 ', 'i'),
];

// The first rule's `*+` is possessive in `regex`; a greedy `*` takes the same characters here,
// since what follows (whitespace, then the end) cannot match what it would give back.
const PUNCTUATION: Rule[] = [
  rule(`([^.])(\\.)([\\])}>"'»”’ ]*)${RX_SPACE}*${PY_END}`, '$1 $2 $3 '),
  rule(`([:,])([^${RX_DIGIT}])`, ' $1 $2'),
  rule(`([:,])${PY_END}`, ' $1 '),
  rule('\\.{2,}', ' $& '),
  rule('[;@#$%&]', ' $& '),
  rule('[\\u2012-\\u2015]', ' $& '),
  rule(`([^.])(\\.)([\\])}>"']*)${RX_SPACE}*${PY_END}`, '$1 $2$3 '),
  rule('[?!]', ' $& '),
  rule("([^'])' ", "$1 ' "),
  rule('[*]', ' $& '),
];
const PARENS_BRACKETS = rule('[\\][(){}<>]', ' $& ');
const DOUBLE_DASHES = rule('--', ' -- ');

const ENDING_QUOTES: Rule[] = [
  rule('([»”’])', ' $1 '),
  rule("''", " '' "),
  rule('"', " '' "),
  rule(`${RX_SPACE}+`, ' '),
  rule("([^' ])('[sS]|'[mM]|'[dD]|') ", '$1 $2 '),
  rule("([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", '$1 $2 '),
];

// Robert MacIntyre's contractions, split in two ("cannot" → "can not").
const CONTRACTIONS = [
  ...[['can', 'not'], ['d', "'ye"], ['gim', 'me'], ['gon', 'na'], ['got', 'ta'], ['lem', 'me'], ['more', "'n"]].map(([a, b]) =>
    rule(`${PY_BOUNDARY}(${a})(${b})${PY_BOUNDARY}`, ' $1 $2 ', 'i'),
  ),
  rule(`${PY_BOUNDARY}(wan)(na)(?=[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000])`, ' $1 $2 ', 'i'),
  rule(` ('t)(is)${PY_BOUNDARY}`, ' $1 $2 ', 'i'),
  rule(` ('t)(was)${PY_BOUNDARY}`, ' $1 $2 ', 'i'),
];

const apply = (text: string, rules: Rule[]) => rules.reduce((t, [re, to]) => t.replace(re, to), text);

/** NLTKWordTokenizer.tokenize(sentence). */
export function treebankTokenize(sentence: string): string[] {
  let text = apply(sentence, STARTING_QUOTES);
  text = apply(text, PUNCTUATION);
  text = apply(text, [PARENS_BRACKETS, DOUBLE_DASHES]);
  text = apply(` ${text} `, ENDING_QUOTES);
  return splitWs(apply(text, CONTRACTIONS));
}

/** nltk.word_tokenize(text) (english). */
export function wordTokenize(text: string): string[] {
  return sentTokenize(text).flatMap(treebankTokenize);
}
