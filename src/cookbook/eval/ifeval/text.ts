// The text measures of IFEval's instructions_util.py: words (nltk's \w+ tokenizer), sentences (its
// rule-based splitter), Python's str.isupper/islower.

/** Python's \w+ on str (Unicode letters, marks, digits, underscore). */
const WORD = /[\p{L}\p{M}\p{N}_]+/gu;

export function words(text: string): string[] {
  return text.match(WORD) ?? [];
}

export const countWords = (text: string) => words(text).length;

const ALPHA = '([A-Za-z])';
const PREFIXES = '(Mr|St|Mrs|Ms|Dr)[.]';
const SUFFIXES = '(Inc|Ltd|Jr|Sr|Co)';
const STARTERS = String.raw`(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s|Wherever)`;
const ACRONYMS = '([A-Z][.][A-Z][.](?:[A-Z][.])?)';
const WEBSITES = '[.](com|net|org|io|gov|edu|me)';
const DIGITS = '([0-9])';

const re = (s: string) => new RegExp(s, 'g');

/** IFEval's split_into_sentences. */
export function splitIntoSentences(input: string): string[] {
  let text = ` ${input}  `.replace(/\n/g, ' ');
  text = text.replace(re(PREFIXES), '$1<prd>');
  text = text.replace(re(WEBSITES), '<prd>$1');
  text = text.replace(re(`${DIGITS}[.]${DIGITS}`), '$1<prd>$2');
  text = text.replace(/\.{2,}/g, (m) => '<prd>'.repeat(m.length) + '<stop>');
  if (text.includes('Ph.D')) text = text.replaceAll('Ph.D.', 'Ph<prd>D<prd>');
  text = text.replace(re(String.raw`\s${ALPHA}[.] `), ' $1<prd> ');
  text = text.replace(re(`${ACRONYMS} ${STARTERS}`), '$1<stop> $2');
  text = text.replace(re(`${ALPHA}[.]${ALPHA}[.]${ALPHA}[.]`), '$1<prd>$2<prd>$3<prd>');
  text = text.replace(re(`${ALPHA}[.]${ALPHA}[.]`), '$1<prd>$2<prd>');
  text = text.replace(re(` ${SUFFIXES}[.] ${STARTERS}`), ' $1<stop> $2');
  text = text.replace(re(` ${SUFFIXES}[.]`), ' $1<prd>');
  text = text.replace(re(` ${ALPHA}[.]`), ' $1<prd>');
  text = text.replaceAll('.\u201d', '\u201d.').replaceAll('."', '".').replaceAll('!"', '"!').replaceAll('?"', '"?');
  text = text.replaceAll('.', '.<stop>').replaceAll('?', '?<stop>').replaceAll('!', '!<stop>').replaceAll('<prd>', '.');
  const sentences = text.split('<stop>').map((s) => s.trim());
  if (sentences.length > 0 && sentences[sentences.length - 1] === '') sentences.pop();
  return sentences;
}

export const countSentences = (text: string) => splitIntoSentences(text).length;

const hasCased = (s: string) => s.toUpperCase() !== s.toLowerCase();
/** Python's str.isupper: some cased character, none lowercase. */
export const isUpper = (s: string) => hasCased(s) && s === s.toUpperCase();
/** Python's str.islower. */
export const isLower = (s: string) => hasCased(s) && s === s.toLowerCase();
