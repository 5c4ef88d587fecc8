// IFBench's verifiers built on nltk's sentence splitter, word tokenizer and stopword list, emoji
// and syllapy (allenai/IFBench, ifbench/instructions.py), ported check for check over the ports
// of those (punkt.ts, treebank.ts, emoji.ts, syllables.ts, data/stopwords-english.txt). Where the
// original raises, the reference scores the instruction as not followed: so do these.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Kwargs } from '../ifeval/checkers.js';
import { pyWordBoundaryRegex, escapeRegex } from '../suites/py-text.js';
import { isEmojiChar } from './emoji.js';
import { sentTokenize } from './punkt.js';
import { countSyllables } from './syllables.js';
import { firstChar, isAlpha, lstrip, PUNCTUATION, pyAt, pyIsLower, pyIsUpper, pyLen, removePunctuation, rstrip, splitWs, strip } from './text.js';
import { RX_WORD } from './rx.js';
import { wordTokenize } from './treebank.js';

export interface Checker {
  /** kwargs as they must be typed for the check. */
  requires: Record<string, 'number' | 'string'>;
  /** Why the kwargs cannot be checked as given (where the original would draw a random value instead). */
  invalid?: (kw: Kwargs) => string | null;
  check(value: string, kw: Kwargs): boolean;
}

const n = (kw: Kwargs, key: string) => kw[key] as number;
const s = (kw: Kwargs, key: string) => kw[key] as string;
const nonNegative = (...keys: string[]) => (kw: Kwargs) => keys.map((k) => (n(kw, k) < 0 ? `kwarg "${k}" must not be negative (IFBench draws a random one then)` : null)).find((p) => p) ?? null;
const PUNCT_SPACE = `${PUNCTUATION} `;

const PRONOUNS = new Set([
  'i', 'me', 'we', 'us', 'you', 'he', 'him', 'she', 'her', 'it', 'they', 'them',
  'my', 'mine', 'our', 'ours', 'your', 'yours', 'his', 'hers', 'its', 'their', 'theirs',
  'myself', 'ourselves', 'yourself', 'yourselves', 'himself', 'herself', 'itself', 'themselves',
  'this', 'that', 'these', 'those',
  'who', 'whom', 'whose', 'which', 'what',
  'whoever', 'whomever', 'whatever', 'whichever',
  'anybody', 'anyone', 'anything', 'everybody', 'everyone', 'everything',
  'nobody', 'nothing', 'somebody', 'someone', 'something',
  'each', 'either', 'neither', 'both', 'all', 'some', 'any', 'none',
]);

let stopwords: Set<string> | null = null;
/** nltk's English stopwords that can match a `\w+` token (data/NOTICE.md says why the contractions are left out). */
function englishStopwords(): Set<string> {
  stopwords ??= new Set(readFileSync(fileURLToPath(new URL('./data/stopwords-english.txt', import.meta.url)), 'utf8').split('\n').filter((w) => w));
  return stopwords;
}
/** RegexpTokenizer(r"\w+"), compiled by nltk with the `regex` module. */
const WORD_RUN = new RegExp(`${RX_WORD}+`, 'gu');

/** Sentences ending in each of '.', '?' and '!'. */
function endings(value: string): { declarative: number; interrogative: number; exclamatory: number } {
  const sentences = sentTokenize(value);
  const count = (end: string) => sentences.filter((x) => x.endsWith(end)).length;
  return { declarative: count('.'), interrogative: count('?'), exclamatory: count('!') };
}

/** Words of a sentence once string.punctuation is removed. */
const bareWords = (sentence: string) => splitWs(strip(removePunctuation(sentence)));

/** _word_tokens_without_punctuation: word_tokenize's tokens holding a letter or digit. */
const alnumTokens = (text: string) => wordTokenize(text).filter((t) => /[\p{L}\p{N}]/u.test(t));

export const NLTK_CHECKERS: Record<string, Checker> = {
  'ratio:stop_words': {
    requires: { percentage: 'number' },
    invalid: nonNegative('percentage'),
    check: (v, kw) => {
      const words = v.match(WORD_RUN) ?? [];
      if (words.length === 0) return false;
      const stop = englishStopwords();
      return (words.filter((w) => stop.has(w.toLowerCase())).length / words.length) * 100 <= n(kw, 'percentage');
    },
  },
  'ratio:sentence_type': {
    requires: {},
    check: (v) => {
      const e = endings(v);
      return e.declarative === 2 * e.interrogative;
    },
  },
  'ratio:sentence_balance': {
    requires: {},
    check: (v) => {
      const e = endings(v);
      return e.declarative === e.interrogative && e.interrogative === e.exclamatory;
    },
  },
  'sentence:alliteration_increment': {
    requires: {},
    check: (v) => {
      let previous = -1;
      for (const sentence of sentTokenize(v)) {
        const words = splitWs(sentence.toLowerCase()).map((w) => lstrip(w, PUNCT_SPACE)).filter((w) => w);
        let alliteration = 0;
        let inRun = false;
        for (let i = 0; i < words.length - 1; i++) {
          if (firstChar(words[i]!) === firstChar(words[i + 1]!)) {
            alliteration += inRun ? 1 : 2;
            inRun = true;
          } else inRun = false;
        }
        if (alliteration <= previous) return false;
        previous = alliteration;
      }
      return true;
    },
  },
  'format:emoji': {
    requires: {},
    check: (v) => {
      const sentences = sentTokenize(v);
      for (let i = 0; i < sentences.length; i++) {
        const chars = [...strip(removePunctuation(sentences[i]!))];
        if (chars.length === 0) return false;
        const last = chars[chars.length - 1]!;
        const secondLast = chars.length > 1 ? chars[chars.length - 2]! : last;
        if (isEmojiChar(last) || isEmojiChar(secondLast)) continue;
        // An emoji opening the next sentence counts for this one (punkt puts it there).
        if (i === sentences.length - 1) return false;
        const next = [...strip(removePunctuation(sentences[i + 1]!))];
        if (next.length === 0 || !isEmojiChar(next[0]!)) return false;
      }
      return true;
    },
  },
  'ratio:sentence_words': {
    requires: {},
    check: (v) => {
      const sentences = sentTokenize(v);
      return sentences.length === 3 && sentences.every((x) => pyLen(strip(x)) === pyLen(strip(sentences[0]!)));
    },
  },
  'sentence:keyword': {
    requires: { word: 'string', N: 'number' },
    invalid: (kw) => (s(kw, 'word') === '' ? 'kwarg "word" must not be empty (IFBench draws a random one then)' : nonNegative('N')(kw)),
    check: (v, kw) => {
      const sentences = sentTokenize(v);
      if (sentences.length < n(kw, 'N')) return false;
      const sentence = pyAt(sentences, Math.trunc(n(kw, 'N') - 1));
      return sentence !== undefined && pyWordBoundaryRegex(escapeRegex(s(kw, 'word')), 'i').test(sentence);
    },
  },
  'count:pronouns': {
    requires: { N: 'number' },
    invalid: nonNegative('N'),
    check: (v, kw) => wordTokenize(v.replaceAll('/', ' ').toLowerCase()).filter((w) => PRONOUNS.has(w)).length >= n(kw, 'N'),
  },
  'words:odd_even_syllables': {
    requires: {},
    check: (v) => {
      const parities = splitWs(removePunctuation(v).toLowerCase()).filter((w) => strip(w)).map((w) => countSyllables(w) % 2);
      return parities.every((p, i) => i === parities.length - 1 || p !== parities[i + 1]);
    },
  },
  'words:last_first': {
    requires: {},
    check: (v) => {
      const sentences = sentTokenize(v);
      for (let i = 0; i < sentences.length - 1; i++) {
        const last = splitWs(rstrip(sentences[i]!, PUNCT_SPACE));
        const first = splitWs(lstrip(sentences[i + 1]!, PUNCT_SPACE));
        if (last.length === 0 || first.length === 0) return false;
        if (last[last.length - 1]!.toLowerCase() !== first[0]!.toLowerCase()) return false;
      }
      return true;
    },
  },
  'sentence:increment': {
    requires: { small_n: 'number' },
    invalid: nonNegative('small_n'),
    check: (v, kw) => {
      const sentences = sentTokenize(v);
      // No sentence: sentences[0] raises IndexError.
      if (sentences.length === 0) return false;
      let previous = bareWords(sentences[0]!).length;
      for (const sentence of sentences.slice(1)) {
        const count = bareWords(sentence).length;
        if (count !== previous + n(kw, 'small_n')) return false;
        previous = count;
      }
      return true;
    },
  },
  'format:no_bullets_bullets': {
    requires: {},
    check: (v) => {
      // The original reuses one name for "still in the sentences part" and the last line's
      // sentences: after a line with none, a line that is no bullet fails. Kept as it is.
      let inSentences = true;
      let sentenceCount = 0;
      let bullets = 0;
      for (const line of v.split('\n')) {
        if (strip(line).startsWith('*')) {
          inSentences = false;
          if (sentenceCount < 2) return false;
          bullets++;
        } else if (inSentences) {
          const sentences = sentTokenize(strip(line));
          inSentences = sentences.length > 0;
          sentenceCount += sentences.length;
        } else return false;
      }
      return bullets >= 2;
    },
  },
  'custom:word_reverse': {
    requires: {},
    check: (v) => {
      const reversed = splitWs(removePunctuation(strip(v.toLowerCase()))).reverse().join(' ');
      return reversed.includes('bald eagle') && sentTokenize(reversed).includes(reversed);
    },
  },
  'custom:sentence_alphabet': {
    requires: {},
    check: (v) => {
      const sentences = sentTokenize(v);
      if (sentences.length !== 26) return false;
      return sentences.every((sentence, i) => {
        const words = splitWs(sentence);
        return words.length > 0 && firstChar(words[0]!.toLowerCase()) === String.fromCharCode(97 + i);
      });
    },
  },
  'words:keywords_specific_position': {
    requires: { keyword: 'string', n: 'number', m: 'number' },
    invalid: (kw) =>
      s(kw, 'keyword') === ''
        ? 'kwarg "keyword" must not be empty (IFBench draws a random one then)'
        : n(kw, 'n') === 0 || n(kw, 'm') === 0
          ? 'kwargs "n" and "m" must not be 0 (IFBench draws random ones then)'
          : null,
    check: (v, kw) => {
      const sentences = sentTokenize(v);
      if (sentences.length < n(kw, 'n')) return false;
      const sentence = pyAt(sentences, n(kw, 'n') - 1);
      if (sentence === undefined) return false;
      const words = alnumTokens(sentence);
      if (words.length < n(kw, 'm')) return false;
      const word = pyAt(words, n(kw, 'm') - 1);
      return word !== undefined && word.toLowerCase() === strip(s(kw, 'keyword')).toLowerCase();
    },
  },
  'words:words_position': {
    requires: { keyword: 'string' },
    check: (v, kw) => {
      const words = wordTokenize(v).map((w) => w.toLowerCase());
      const keyword = strip(s(kw, 'keyword')).toLowerCase();
      if (words.length < 2) return false;
      // `words[-1] in string.punctuation` is a substring test.
      if (PUNCTUATION.includes(words[words.length - 1]!)) return words.length >= 3 && words[1] === words[words.length - 3] && words[1] === keyword;
      return words[1] === words[words.length - 2] && words[1] === keyword;
    },
  },
  'format:title_case': {
    requires: {},
    check: (v) =>
      wordTokenize(v).every((word) => {
        const chars = [...word];
        if (chars.length === 0 || !isAlpha(chars[0]!)) return true;
        if (chars.length === 1) return !pyIsLower(chars[0]!);
        const [head, rest] = [chars[0]!, chars.slice(1).join('')];
        if (pyIsUpper(head) && pyIsLower(rest)) return true;
        return !(pyIsLower(head) && (pyIsUpper(rest) || pyIsLower(rest)));
      }),
  },
};
