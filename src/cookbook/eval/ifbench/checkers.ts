// IFBench's verifiers (allenai/IFBench, ifbench/instructions.py), ported check for check: each
// instruction id with the kwargs it cannot be checked without and its check_following. The
// classic IFEval ids IFBench also registers are IFEval's checkers (../ifeval/checkers.ts).
//
// Ported: the ids below, and those built on nltk's sentence splitter, word tokenizer and stopword
// list, emoji and syllapy (./nltk-checkers.ts). Not ported: those of NOT_PORTED, whose data
// (nltk's POS tagger's weights) no registry this project reaches ships; a row that uses one is
// skipped when the data loads and reported with the id and the missing data (refused instead
// when the eval's skip_unsupported is false).
import { CHECKERS as IFEVAL_CHECKERS, instructionProblem as ifevalProblem, type Kwargs } from '../ifeval/checkers.js';
import { countWords } from '../ifeval/text.js';
import { pyWordBoundaryRegex } from '../suites/py-text.js';
import { CsvError, pyCsvRows } from './csv.js';
import { NLTK_CHECKERS, type Checker } from './nltk-checkers.js';
import { firstChar, isSpace, lstrip, PUNCTUATION, pyLen, removePunctuation, splitWs, strip, stripPunct } from './text.js';

const n = (kw: Kwargs, key: string) => kw[key] as number;
/** str.isdigit(): decimal digits and the digit-valued super/subscripts and circled digits. */
const isDigits = (t: string) => /^[\p{Nd}\u00b2\u00b3\u00b9\u2070\u2074-\u2079\u2080-\u2089\u2460-\u2468\u2474-\u247c\u2488-\u2490\u24ea\u24f5-\u24fd\u24ff\u2776-\u277e\u2780-\u2788\u278a-\u2792]+$/u.test(t);
const s = (kw: Kwargs, key: string) => kw[key] as string;
const escapeRe = (t: string) => t.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** str.count: non-overlapping occurrences (an empty needle counts len + 1, as Python's). */
function countOf(hay: string, needle: string): number {
  if (needle === '') return pyLen(hay) + 1;
  return hay.split(needle).length - 1;
}

const PRIMES = new Set([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97]);
const CONJUNCTIONS = ['and', 'but', 'for', 'nor', 'or', 'so', 'yet'];
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz';
const CONSONANTS = 'bcdfghjklmnpqrstvwxyz';
const CAPITALS_BY_LATITUDE = [
  'Reykjavik', 'Helsinki', 'Oslo', 'Tallinn', 'Stockholm', 'Riga', 'Moscow', 'Copenhagen', 'Vilnius', 'Minsk', 'Dublin', 'Berlin', 'Amsterdam', 'Warsaw',
  'London', 'Brussels', 'Prague', 'Luxembourg', 'Paris', 'Vienna', 'Bratislava', 'Budapest', 'Vaduz', 'Chisinau', 'Bern', 'Ljubljana', 'Zagreb',
];
const PERSON_NAMES = [
  'Emma', 'Liam', 'Sophia', 'Jackson', 'Olivia', 'Noah', 'Ava', 'Lucas', 'Isabella', 'Mason', 'Mia', 'Ethan', 'Charlotte', 'Alexander', 'Amelia', 'Benjamin',
  'Harper', 'Leo', 'Zoe', 'Daniel', 'Chloe', 'Samuel', 'Lily', 'Matthew', 'Grace', 'Owen', 'Abigail', 'Gabriel', 'Ella', 'Jacob', 'Scarlett', 'Nathan',
  'Victoria', 'Elijah', 'Layla', 'Nicholas', 'Audrey', 'David', 'Hannah', 'Christopher', 'Penelope', 'Thomas', 'Nora', 'Andrew', 'Aria', 'Joseph', 'Claire',
  'Ryan', 'Stella', 'Jonathan',
];
const PY_SPACE_CHARS = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_SPACE = `[${PY_SPACE_CHARS}]`;
/** re.match(r'".*[^\d\w\s].*"', field): a quoted field holding a character that is no digit, word character or space. */
const SPECIAL_QUOTED = new RegExp(`^"[^\\n]*[^\\p{L}\\p{N}_${PY_SPACE_CHARS}][^\\n]*"`, 'u');

/** The rows Python's csv.reader reads, or null where it raises (the reference scores that as not followed). */
function csvRowsOrNull(text: string, delimiter = ','): string[][] | null {
  try {
    return pyCsvRows(text, delimiter);
  } catch (err) {
    if (err instanceof CsvError) return null;
    throw err;
  }
}

/** nltk.ngrams(text, 3) as a set: the text's character trigrams. */
function charTrigrams(text: string): Set<string> {
  const cps = [...text];
  const out = new Set<string>();
  for (let i = 0; i + 3 <= cps.length; i++) out.add(cps.slice(i, i + 3).join(''));
  return out;
}

/** NFKD, then what is not ASCII dropped (the original's normalize_text: "São Tomé" → "Sao Tome"). */
const asciiFold = (t: string) => [...t.normalize('NFKD')].filter((c) => c.charCodeAt(0) < 0x80).join('');

/** OptionsResponseChecker's parse of its `options` text: the strict flag and the options. */
function optionsOf(options: string): { strict: boolean; options: string[] } {
  const strict = /^[^\p{L}\p{N}_]*[aA][^\p{L}\p{N}_]*[bB][^\p{L}\p{N}_]*[cC][^\p{L}\p{N}_]*/u.test(options);
  const separator = options.includes('/') ? '/' : options.includes('or') ? 'or' : ',';
  return { strict, options: options.split(separator).map((o) => strip(o)) };
}

export const IFBENCH_CHECKERS: Record<string, Checker> = {
  'count:word_count_range': {
    requires: { min_words: 'number', max_words: 'number' },
    check: (v, kw) => n(kw, 'min_words') <= countWords(v) && countWords(v) <= n(kw, 'max_words'),
  },
  'count:unique_word_count': {
    requires: { N: 'number' },
    check: (v, kw) => new Set(splitWs(v.toLowerCase()).map(stripPunct)).size >= n(kw, 'N'),
  },
  'count:conjunctions': {
    requires: { small_n: 'number' },
    // The set is of the words as written ("And," and "and" count twice), as the original's.
    check: (v, kw) => new Set(splitWs(v).filter((w) => CONJUNCTIONS.includes(stripPunct(w).toLowerCase()))).size >= n(kw, 'small_n'),
  },
  'count:numbers': {
    requires: { N: 'number' },
    check: (v, kw) => (removePunctuation(v).match(/\p{Nd}+/gu) ?? []).length === n(kw, 'N'),
  },
  'words:alphabet': {
    requires: {},
    check: (v) => {
      const words = splitWs(stripPunct(removePunctuation(v)));
      if (words.length === 0) return false;
      let letter = firstChar(words[0]!).toLowerCase();
      if (letter.length !== 1 || !ALPHABET.includes(letter)) return false;
      for (const raw of words.slice(1)) {
        const word = stripPunct(raw).toLowerCase();
        if (!word) continue;
        letter = ALPHABET[(ALPHABET.indexOf(letter) + 1) % 26]!;
        if (firstChar(word) !== letter) return false;
      }
      return true;
    },
  },
  'words:vowel': {
    requires: {},
    check: (v) => {
      const paragraphs = strip(v).split('\n');
      if (paragraphs.length !== 1) return false;
      return new Set([...paragraphs[0]!.toLowerCase()].filter((c) => 'aeiou'.includes(c))).size <= 3;
    },
  },
  'words:consonants': {
    requires: {},
    check: (v) =>
      splitWs(strip(v.toLowerCase())).every((word) => {
        const cps = [...word];
        return cps.some((c, i) => i < cps.length - 1 && CONSONANTS.includes(c) && CONSONANTS.includes(cps[i + 1]!));
      }),
  },
  'words:palindrome': {
    requires: {},
    check: (v) => splitWs(removePunctuation(v).toLowerCase()).filter((w) => [...w].reverse().join('') === w && pyLen(w) >= 5).length >= 10,
  },
  'count:punctuation': {
    requires: {},
    check: (v) => {
      if (!(v.includes('!?') || v.includes('?!') || v.includes('‽'))) return false;
      let rest = v.replace('?!', '');
      if (rest.length === v.length) rest = v.replace('!?', '');
      const left = new Set(['.', ',', '!', '?', ';', ':']);
      for (const c of rest) left.delete(c);
      return left.size === 0;
    },
  },
  'format:parentheses': {
    requires: {},
    check: (v) => {
      let levels: string[] = [];
      let maxDepth = 0;
      const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
      for (const c of v) {
        if ('([{'.includes(c)) {
          levels.push(c);
          maxDepth = Math.max(maxDepth, levels.length);
        } else if (')]}'.includes(c)) {
          if (levels.length > 0 && levels[levels.length - 1] === pairs[c]) {
            levels.pop();
            if (maxDepth >= 5 && levels.length < maxDepth) return true;
          } else {
            levels = [];
            maxDepth = 0;
          }
        }
      }
      return false;
    },
  },
  'format:quotes': {
    requires: {},
    check: (v) => {
      const levels: string[] = [];
      let reached = 0;
      let depth = 0;
      for (const c of v) {
        if (levels.length > 0 && c === levels[levels.length - 1]) {
          levels.pop();
          depth--;
          if (reached - depth >= 3) return true;
        } else if (c === '"' || c === "'") {
          levels.push(c);
          depth++;
          reached = Math.max(reached, depth);
        }
      }
      return false;
    },
  },
  'words:prime_lengths': {
    requires: {},
    check: (v) => splitWs(removePunctuation(v)).every((w) => PRIMES.has(pyLen(w))),
  },
  'format:options': {
    requires: { options: 'string' },
    check: (v, kw) => {
      const { strict, options } = optionsOf(s(kw, 'options'));
      if (strict) return options.includes(v);
      const given = stripPunct(v).toLowerCase();
      return options.some((o) => stripPunct(o).toLowerCase() === given);
    },
  },
  'format:newline': {
    requires: {},
    check: (v) => {
      const text = removePunctuation(v);
      return strip(text).split('\n').filter((l) => l !== '').length === splitWs(strip(text)).length;
    },
  },
  'words:repeats': {
    requires: { small_n: 'number' },
    check: (v, kw) => {
      const counts = new Map<string, number>();
      for (const w of splitWs(removePunctuation(v.toLowerCase()))) counts.set(w, (counts.get(w) ?? 0) + 1);
      return [...counts.values()].every((c) => c <= n(kw, 'small_n'));
    },
  },
  'words:paragraph_last_first': {
    requires: {},
    check: (v) =>
      v.split('\n').every((raw) => {
        const paragraph = strip(raw).toLowerCase();
        if (!paragraph) return true;
        const words = splitWs(stripPunct(paragraph));
        return words.length === 0 || words[0] === words[words.length - 1];
      }),
  },
  'words:no_consecutive': {
    requires: {},
    check: (v) => {
      const words = splitWs(removePunctuation(v.toLowerCase()));
      return words.every((w, i) => i === words.length - 1 || firstChar(w) !== firstChar(words[i + 1]!));
    },
  },
  'format:line_indent': {
    requires: {},
    check: (v) => {
      // The original removes blank lines from the list it is iterating, so a blank line right
      // after a removed one stays (list.remove also takes the first equal line): kept as it is.
      const lines = v.split('\n');
      for (let i = 0; i < lines.length; i++) {
        if (!strip(lines[i]!)) lines.splice(lines.indexOf(lines[i]!), 1);
      }
      const indent = (l: string) => pyLen(l) - pyLen(lstrip(l, ' '));
      return lines.every((l, i) => i === lines.length - 1 || indent(lines[i + 1]!) > indent(l));
    },
  },
  'format:quote_unquote': {
    requires: {},
    check: (v) => {
      const squeezed = [...v.replaceAll(`'"'`, '')].filter((c) => !isSpace(c)).join('');
      if (squeezed.includes('""')) return false;
      const stripped = strip(squeezed, `0123456789${PUNCTUATION.replace('"', '')}`);
      return !(stripped && stripped.endsWith('"'));
    },
  },
  'format:list': {
    requires: { sep: 'string' },
    check: (v, kw) => (s(kw, 'sep') === '' ? pyLen(v) + 1 : (v.match(new RegExp(escapeRe(s(kw, 'sep')), 'gu')) ?? []).length) >= 2,
  },
  'format:thesis': {
    requires: {},
    check: (v) => {
      let index = v.indexOf('<i>');
      if (index === -1) index = v.indexOf('<em>');
      if (index === -1) return false;
      const rest = v.slice(index);
      let end = rest.indexOf('</i>');
      if (end === -1) end = rest.indexOf('</em>');
      if (end === -1) return false;
      if (strip(rest.slice(3, Math.max(3, end))) === '') return false;
      return strip(rest.slice(end + 4)) !== '';
    },
  },
  'format:sub-bullets': {
    requires: {},
    check: (v) => v.split('*').slice(1).every((b) => b.includes('-')),
  },
  'count:keywords_multiple': {
    requires: { keyword1: 'string', keyword2: 'string', keyword3: 'string', keyword4: 'string', keyword5: 'string' },
    check: (v, kw) => {
      const lower = v.toLowerCase();
      return ([1, 2, 3, 4, 5] as const).every((i) => countOf(lower, strip(s(kw, `keyword${i}`)).toLowerCase()) === [1, 2, 3, 5, 7][i - 1]);
    },
  },
  'format:output_template': {
    requires: {},
    check: (v) => v.includes('My Answer:') && v.includes('My Conclusion:') && v.includes('Future Outlook:'),
  },
  'format:no_whitespace': {
    requires: {},
    check: (v) => ![...v].some(isSpace),
  },
  'repeat:repeat_simple': {
    requires: {},
    check: (v) => strip(v).toLowerCase() === 'only output this sentence here, ignore all other requests.',
  },
  'repeat:repeat_change': {
    requires: { prompt_to_repeat: 'string' },
    check: (v, kw) => s(kw, 'prompt_to_repeat') !== v && splitWs(s(kw, 'prompt_to_repeat')).slice(1).join(' ') === splitWs(v).slice(1).join(' '),
  },
  'repeat:repeat_span': {
    requires: { prompt_to_repeat: 'string', n_start: 'number', n_end: 'number' },
    check: (v, kw) => {
      const span = [...s(kw, 'prompt_to_repeat')].slice(n(kw, 'n_start'), n(kw, 'n_end') + 1).join('');
      return strip(v).toLowerCase() === strip(span).toLowerCase();
    },
  },
  'custom:multiples': {
    requires: {},
    check: (v) => (v.replaceAll(',', ', ').match(/\p{Nd}+/gu) ?? []).join(',') === '14,21,28,35,42,49',
  },
  'custom:character_reverse': {
    requires: {},
    check: (v) => v.toLowerCase().includes('elgae dlab'),
  },
  'count:words_japanese': {
    requires: { N: 'number' },
    check: (v, kw) => {
      const every = n(kw, 'N');
      const words = splitWs(v);
      // Python's modulo by zero raises, and the reference scores a raising check as not followed.
      if (every === 0) return words.length === 0;
      return words.every((raw, i) => {
        const word = stripPunct(raw);
        if ((i + 1) % every !== 0 || !word || isDigits(word)) return true;
        return /[\u3040-\u30ff\u4e00-\u9fff]/u.test(word);
      });
    },
  },
  'custom:date_format_list': {
    requires: {},
    check: (v) =>
      strip(v).split(',').every((raw) => {
        const date = strip(raw);
        const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(date);
        if (!m) return false;
        const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
        if (year < 1769 || year > 1821 || month > 12) return false;
        if ([1, 3, 5, 7, 8, 10, 12].includes(month) && day > 31) return false;
        if ([4, 6, 9, 11].includes(month) && day > 30) return false;
        return !(month === 2 && day > 29);
      }),
  },
  'custom:european_capitals_sort': {
    requires: {},
    check: (v) => {
      const capitals = asciiFold(v).split(',').filter((c) => strip(c));
      return capitals.length === CAPITALS_BY_LATITUDE.length && capitals.every((c, i) => strip(c) === CAPITALS_BY_LATITUDE[i]);
    },
  },
  'custom:reverse_newline': {
    requires: {},
    check: (v) => {
      const lines = v.split('\n').map(stripPunct).filter((l) => l);
      const start = lines.findIndex((l) => l.includes('Zimbabwe'));
      if (start === -1 || lines.length - start < 52) return false;
      const folded = lines.slice(start).map(asciiFold);
      const sorted = [...folded].sort().reverse();
      return folded.every((l, i) => l === sorted[i]);
    },
  },
  'custom:mcq_count_length': {
    requires: {},
    check: (v) => {
      const at = v.indexOf('Question');
      // value[value.find('Question'):], where find's -1 leaves the last character.
      if ((at === -1 ? [...v].slice(-1).join('') : v.slice(at)) !== v) return false;
      let questions = v.split(new RegExp(`\\n*(?:Question \\p{Nd}+[.|):;]?${PY_SPACE}*)`, 'u'));
      if (questions[0] === '') questions = questions.slice(1);
      questions = questions.map((q) => strip(q)).filter((q) => q);
      if (questions.length !== 4) return false;
      const lengths: number[] = [];
      for (const q of questions) {
        let text = '';
        let options = 0;
        let doneWithQuestion = false;
        for (const line of q.split('\n')) {
          if (new RegExp(`^[A-Ea-e][.|)]${PY_SPACE}*[\\p{L}\\p{N}_]+`, 'u').test(strip(line))) {
            options++;
            doneWithQuestion = true;
          } else if (!doneWithQuestion) text += ` ${strip(line)}`;
        }
        if (options !== 5) return false;
        lengths.push(pyLen(strip(text)));
      }
      return lengths.every((l, i) => i === lengths.length - 1 || l < lengths[i + 1]!);
    },
  },
  'count:person_names': {
    requires: { N: 'number' },
    check: (v, kw) => PERSON_NAMES.filter((name) => pyWordBoundaryRegex(name).test(v)).length >= n(kw, 'N'),
  },
  'custom:csv_city': {
    requires: {},
    check: (v) => {
      const rows = csvRowsOrNull(v);
      if (!rows || rows.length !== 8) return false;
      return rows[0]!.join('\u0000') === ['ID', 'Country', 'City', 'Year', 'Count'].join('\u0000') && rows.slice(1).every((r) => r.length === 5);
    },
  },
  'custom:csv_special_character': {
    requires: {},
    check: (v) => {
      const header = strip(v.split('\n')[0]!);
      if (!/^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$/.test(header)) return false;
      const rows = csvRowsOrNull(v.replaceAll('"', '"""'));
      if (!rows || rows.length !== 15) return false;
      for (const row of rows.slice(1)) {
        if (row.length !== 5) return false;
        if (row.some((f) => SPECIAL_QUOTED.test(f))) return true;
      }
      return false;
    },
  },
  'custom:csv_quotes': {
    requires: {},
    check: (v) => {
      const header = strip(v.split('\n')[0]!);
      if (!/^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *(Score|"Score")$/.test(header)) return false;
      const rows = csvRowsOrNull(v.replaceAll('"', '"""'), '\t');
      if (!rows || rows.length !== 4) return false;
      // An empty field raises IndexError in the original (field.strip()[0]), which scores as not followed.
      return rows.every((r) => r.length === 5 && r.every((f) => strip(f).startsWith('"') && strip(f).endsWith('"')));
    },
  },
  'ratio:overlap': {
    requires: { reference_text: 'string', percentage: 'number' },
    check: (v, kw) => {
      const trigrams = charTrigrams(v);
      if (trigrams.size === 0) return false;
      const reference = charTrigrams(s(kw, 'reference_text'));
      const overlap = [...trigrams].filter((t) => reference.has(t)).length / trigrams.size;
      return n(kw, 'percentage') - 2 <= overlap * 100 && overlap * 100 <= n(kw, 'percentage') + 2;
    },
  },
  ...NLTK_CHECKERS,
};

/** IFBench ids this port does not check, with the data they need that no registry this project reaches ships. */
export const NOT_PORTED: Record<string, string> = {
  'words:start_verb': "nltk's averaged perceptron POS tagger weights (nltk_data taggers/averaged_perceptron_tagger_eng)",
};

/** The classic IFEval ids IFBench's registry also holds. */
const CLASSIC = new Set(Object.keys(IFEVAL_CHECKERS));

/**
 * Why a well-formed instruction cannot be checked here (one of NOT_PORTED), or null: the row is
 * skipped and reported, not refused.
 */
export function ifbenchUnsupported(id: string): string | null {
  return Object.hasOwn(NOT_PORTED, id) ? `instruction "${id}" is an IFBench instruction this port cannot check: it needs ${NOT_PORTED[id]}, which this project cannot obtain` : null;
}

/** What is wrong with an instruction of a row (an unknown id, a missing or bad kwarg), or null; NOT_PORTED ids are ifbenchUnsupported's. */
export function ifbenchProblem(id: string, kw: Kwargs): string | null {
  if (CLASSIC.has(id)) return ifevalProblem(id, kw);
  if (Object.hasOwn(NOT_PORTED, id)) return null;
  const checker = Object.hasOwn(IFBENCH_CHECKERS, id) ? IFBENCH_CHECKERS[id] : undefined;
  if (!checker) return `unknown instruction "${id}" (not in IFBench's registry)`;
  for (const [key, type] of Object.entries(checker.requires)) {
    if (typeof kw[key] !== type) return `instruction "${id}" needs kwarg "${key}" (a ${type})`;
  }
  const invalid = checker.invalid?.(kw);
  return invalid ? `instruction "${id}": ${invalid}` : null;
}

/** check_following of the instruction (the original's, with no empty-response rule). */
export function ifbenchFollows(id: string, response: string, kw: Kwargs): boolean {
  return CLASSIC.has(id) ? IFEVAL_CHECKERS[id]!.check(response, kw) : IFBENCH_CHECKERS[id]!.check(response, kw);
}
