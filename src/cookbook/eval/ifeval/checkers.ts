// IFEval's verifiable instructions (google-research instruction_following_eval, instructions.py):
// all 25 instruction types of google/IFEval, each a check of the response against the row's
// kwargs, with the original's semantics (its regexes, its "less than" / "at least" relations).
// Differences: word tokens for capital-word counts use \w+ instead of nltk.word_tokenize, and the
// response language comes from language.ts instead of langdetect.
import { detectLanguage } from './language.js';
import { countSentences, countWords, isLower, isUpper, words } from './text.js';

export type Kwargs = Record<string, unknown>;

interface Checker {
  /** kwargs the instruction cannot be checked without. */
  requires: string[];
  check(response: string, kw: Kwargs): boolean;
}

const num = (kw: Kwargs, key: string) => Number(kw[key]);
const str = (kw: Kwargs, key: string) => String(kw[key]);
const list = (kw: Kwargs, key: string) => (kw[key] as unknown[]).map(String);
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** IFEval's two relations; anything else was rejected when the row was loaded. */
function compare(count: number, relation: string, target: number): boolean {
  return relation === 'less than' ? count < target : count >= target;
}
export const RELATIONS = ['less than', 'at least'];

/** IFEval passes keywords to re.search as patterns; they are plain words in the dataset, so they are escaped here. */
const countMatches = (text: string, word: string) => text.match(new RegExp(escapeRe(word), 'giu'))?.length ?? 0;

/** English as the detector sees it; text it cannot classify counts as English (langdetect's exception path in IFEval). */
const looksEnglish = (text: string) => {
  const lang = detectLanguage(text);
  return lang === null || lang === 'en';
};

export const CHECKERS: Record<string, Checker> = {
  'keywords:existence': {
    requires: ['keywords'],
    check: (r, kw) => list(kw, 'keywords').every((k) => countMatches(r, k) > 0),
  },
  'keywords:frequency': {
    requires: ['keyword', 'frequency', 'relation'],
    check: (r, kw) => compare(countMatches(r, str(kw, 'keyword')), str(kw, 'relation'), num(kw, 'frequency')),
  },
  'keywords:forbidden_words': {
    requires: ['forbidden_words'],
    check: (r, kw) => !list(kw, 'forbidden_words').some((w) => new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRe(w)}(?![\\p{L}\\p{N}_])`, 'iu').test(r)),
  },
  'keywords:letter_frequency': {
    requires: ['letter', 'let_frequency', 'let_relation'],
    check: (r, kw) => compare([...r.toLowerCase()].filter((c) => c === str(kw, 'letter').toLowerCase()).length, str(kw, 'let_relation'), num(kw, 'let_frequency')),
  },
  'language:response_language': {
    requires: ['language'],
    check: (r, kw) => {
      const lang = detectLanguage(r);
      return lang === null ? !/\p{L}/u.test(r) : lang === str(kw, 'language');
    },
  },
  'length_constraints:number_sentences': {
    requires: ['num_sentences', 'relation'],
    check: (r, kw) => compare(countSentences(r), str(kw, 'relation'), num(kw, 'num_sentences')),
  },
  'length_constraints:number_paragraphs': {
    requires: ['num_paragraphs'],
    check: (r, kw) => {
      const paragraphs = r.split(/\s?\*\*\*\s?/);
      let n = paragraphs.length;
      for (const [i, p] of paragraphs.entries()) {
        if (p.trim() !== '') continue;
        if (i === 0 || i === paragraphs.length - 1) n--;
        else return false;
      }
      return n === num(kw, 'num_paragraphs');
    },
  },
  'length_constraints:number_words': {
    requires: ['num_words', 'relation'],
    check: (r, kw) => compare(countWords(r), str(kw, 'relation'), num(kw, 'num_words')),
  },
  'length_constraints:nth_paragraph_first_word': {
    requires: ['num_paragraphs', 'nth_paragraph', 'first_word'],
    check: (r, kw) => {
      const paragraphs = r.split('\n\n');
      const n = paragraphs.filter((p) => p.trim() !== '').length;
      const nth = num(kw, 'nth_paragraph');
      if (nth > n) return false;
      const paragraph = (paragraphs[nth - 1] ?? '').trim();
      if (!paragraph) return false;
      let first = '';
      for (const ch of paragraph.split(/\s+/)[0].replace(/^'+/, '').replace(/^"+/, '')) {
        if ('.,?!\'"'.includes(ch)) break;
        first += ch.toLowerCase();
      }
      return n === num(kw, 'num_paragraphs') && first === str(kw, 'first_word').toLowerCase();
    },
  },
  'detectable_content:number_placeholders': {
    requires: ['num_placeholders'],
    check: (r, kw) => (r.match(/\[.*?\]/g)?.length ?? 0) >= num(kw, 'num_placeholders'),
  },
  'detectable_content:postscript': {
    requires: ['postscript_marker'],
    check: (r, kw) => {
      const marker = str(kw, 'postscript_marker');
      const pattern = marker === 'P.P.S' ? String.raw`\s*p\.\s?p\.\s?s.*$` : marker === 'P.S.' ? String.raw`\s*p\.\s?s\..*$` : String.raw`\s*` + marker.toLowerCase() + '.*$';
      return new RegExp(pattern, 'm').test(r.toLowerCase());
    },
  },
  'detectable_format:number_bullet_lists': {
    requires: ['num_bullets'],
    check: (r, kw) => (r.match(/^\s*\*[^*].*$/gm)?.length ?? 0) + (r.match(/^\s*-.*$/gm)?.length ?? 0) === num(kw, 'num_bullets'),
  },
  'detectable_format:constrained_response': {
    requires: [],
    check: (r) => ['My answer is yes.', 'My answer is no.', 'My answer is maybe.'].some((o) => r.trim().includes(o)),
  },
  'detectable_format:number_highlighted_sections': {
    requires: ['num_highlights'],
    check: (r, kw) => {
      const single = (r.match(/\*[^\n*]*\*/g) ?? []).filter((h) => h.replace(/^\*+|\*+$/g, '').trim() !== '').length;
      const double = (r.match(/\*\*[^\n*]*\*\*/g) ?? []).filter((h) => h.slice(2, -2).trim() !== '').length;
      return single + double >= num(kw, 'num_highlights');
    },
  },
  'detectable_format:multiple_sections': {
    requires: ['section_spliter', 'num_sections'],
    check: (r, kw) => r.split(new RegExp(String.raw`\s?` + escapeRe(str(kw, 'section_spliter')) + String.raw`\s?\d+\s?`)).length - 1 >= num(kw, 'num_sections'),
  },
  'detectable_format:json_format': {
    requires: [],
    check: (r) => {
      const body = r
        .trim()
        .replace(/^```json/, '')
        .replace(/^```Json/, '')
        .replace(/^```JSON/, '')
        .replace(/^```/, '')
        .replace(/```$/, '')
        .trim();
      try {
        JSON.parse(body);
        return true;
      } catch {
        return false;
      }
    },
  },
  'detectable_format:title': {
    requires: [],
    check: (r) => (r.match(/<<[^\n]+>>/g) ?? []).some((t) => t.replace(/^<+/, '').replace(/>+$/, '').trim() !== ''),
  },
  'combination:two_responses': {
    requires: [],
    check: (r) => {
      const parts = r.split('******');
      const valid: string[] = [];
      for (const [i, p] of parts.entries()) {
        if (p.trim() !== '') valid.push(p);
        else if (i !== 0 && i !== parts.length - 1) return false;
      }
      return valid.length === 2 && valid[0].trim() !== valid[1].trim();
    },
  },
  'combination:repeat_prompt': {
    requires: ['prompt_to_repeat'],
    check: (r, kw) => r.trim().toLowerCase().startsWith(str(kw, 'prompt_to_repeat').trim().toLowerCase()),
  },
  'startend:end_checker': {
    requires: ['end_phrase'],
    check: (r, kw) => r.trim().replace(/^"+|"+$/g, '').toLowerCase().endsWith(str(kw, 'end_phrase').trim().toLowerCase()),
  },
  'startend:quotation': {
    requires: [],
    check: (r) => {
      const t = r.trim();
      return t.length > 1 && t[0] === '"' && t[t.length - 1] === '"';
    },
  },
  'change_case:capital_word_frequency': {
    requires: ['capital_frequency', 'capital_relation'],
    check: (r, kw) => compare(words(r).filter(isUpper).length, str(kw, 'capital_relation'), num(kw, 'capital_frequency')),
  },
  'change_case:english_capital': {
    requires: [],
    check: (r) => isUpper(r) && looksEnglish(r),
  },
  'change_case:english_lowercase': {
    requires: [],
    check: (r) => isLower(r) && looksEnglish(r),
  },
  'punctuation:no_comma': {
    requires: [],
    check: (r) => !r.includes(','),
  },
};

/** Why an instruction of a row cannot be checked, or null when it can. */
export function instructionProblem(id: string, kw: Kwargs): string | null {
  const checker = CHECKERS[id];
  if (!checker) return `unknown instruction "${id}" (supported: ${Object.keys(CHECKERS).join(', ')})`;
  const missing = checker.requires.filter((k) => kw[k] === undefined || kw[k] === null);
  if (missing.length > 0) return `instruction "${id}" needs kwargs ${missing.map((k) => `"${k}"`).join(', ')}`;
  for (const key of ['relation', 'let_relation', 'capital_relation']) {
    if (checker.requires.includes(key) && !RELATIONS.includes(str(kw, key))) return `instruction "${id}": "${key}" must be one of ${RELATIONS.map((r) => `"${r}"`).join(', ')}`;
  }
  return null;
}

/** The strict check: a non-empty response that follows the instruction. */
export function followsStrict(id: string, response: string, kw: Kwargs): boolean {
  return response.trim() !== '' && CHECKERS[id].check(response, kw);
}

/**
 * The loose check (IFEval's test_instruction_following_loose): the instruction is followed by the
 * response or by one of its variants without the first line, the last line, both, and/or asterisks.
 */
export function followsLoose(id: string, response: string, kw: Kwargs): boolean {
  const lines = response.split('\n');
  const removeFirst = lines.slice(1).join('\n').trim();
  const removeLast = lines.slice(0, -1).join('\n').trim();
  const removeBoth = lines.slice(1, -1).join('\n').trim();
  const variants = [response, removeFirst, removeLast, removeBoth];
  const all = [...variants.slice(0, 1), variants[0].replaceAll('*', ''), ...variants.slice(1), ...variants.slice(1).map((v) => v.replaceAll('*', ''))];
  return all.some((v) => v.trim() !== '' && CHECKERS[id].check(v, kw));
}
