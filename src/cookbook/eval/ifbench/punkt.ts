// nltk's Punkt sentence splitter as nltk.sent_tokenize runs it (nltk 3.10.4,
// nltk/tokenize/punkt.py, Apache-2.0): the pretrained english model, boundaries realigned. Only
// splitting is ported, not training. The model is nltk's punkt_tab english
// (data/punkt-english.json, see data/NOTICE.md; test/fixtures/ifbench_gen_data.py writes it).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isLower, isUpper, PY_END, RX_DIGIT, RX_LETTER, RX_NON_SPACE, RX_SPACE } from './rx.js';
import { pyLen, rstrip, strip } from './text.js';

interface Model {
  abbrevTypes: Set<string>;
  /** "first\tsecond" */
  collocations: Set<string>;
  sentStarters: Set<string>;
  orthoContext: Map<string, number>;
}

let model: Model | null = null;
function english(): Model {
  if (!model) {
    const raw = JSON.parse(readFileSync(fileURLToPath(new URL('./data/punkt-english.json', import.meta.url)), 'utf8')) as {
      abbrev_types: string[];
      collocations: Array<[string, string]>;
      sent_starters: string[];
      ortho_context: Record<string, number>;
    };
    model = {
      abbrevTypes: new Set(raw.abbrev_types),
      collocations: new Set(raw.collocations.map(([a, b]) => `${a}\t${b}`)),
      sentStarters: new Set(raw.sent_starters),
      orthoContext: new Map(Object.entries(raw.ortho_context)),
    };
  }
  return model;
}

// Orthographic context flags: the case a type was seen in at a sentence's beginning, middle, or
// where that was unknown.
const BEG_UC = 1 << 1;
const MID_UC = 1 << 2;
const UNK_UC = 1 << 3;
const BEG_LC = 1 << 4;
const MID_LC = 1 << 5;
const UNK_LC = 1 << 6;
const ORTHO_UC = BEG_UC + MID_UC + UNK_UC;
const ORTHO_LC = BEG_LC + MID_LC + UNK_LC;

const SENT_END_CHARS = ['.', '?', '!'];
/** Sentences don't start with these. */
const PUNCTUATION = [';', ':', ',', '.', '!', '?'];

// PunktLanguageVars' patterns (the curly quotes and guillemets are 3.10's).
const NON_WORD = `(?:[)";}\\]*:@'({\\[\\u2018\\u2019\\u201c\\u201d\\xab\\xbb?!])`;
const MULTI_CHAR = `(?:-{2,}|\\.{2,}|(?:\\.${RX_SPACE}){2,}\\.)`;
const WORD_START = '[^("`{\\[:;&#*@)}\\]\\-,]';
const WORD_TOKENIZER = new RegExp(
  `${MULTI_CHAR}|(?=${WORD_START})${RX_NON_SPACE}+?(?=${RX_SPACE}|${PY_END}|${NON_WORD}|${MULTI_CHAR}|,(?=${PY_END}|${RX_SPACE}|${NON_WORD}|${MULTI_CHAR}))|${RX_NON_SPACE}`,
  'gu',
);
const PERIOD_CONTEXT = new RegExp(`[.?!](?=(?<after_tok>${NON_WORD}|${RX_SPACE}+(?<next_tok>${RX_NON_SPACE}+)))`, 'gdu');
const BOUNDARY_REALIGNMENT = new RegExp(`^["')\\]}\\u2018\\u2019\\u201c\\u201d\\xab\\xbb]+?(?:${RX_SPACE}+|(?=--)|(?=\\n|(?![\\s\\S])))`, 'u');

// PunktToken's patterns.
const ELLIPSIS = /^\.\.+$/u;
const NUMERIC = new RegExp(`^-?[.,]?${RX_DIGIT}[${RX_DIGIT},.\\-]*\\.?$`, 'u');
const INITIAL = new RegExp(`^${RX_LETTER}\\.$`, 'u');

interface Token {
  tok: string;
  type: string;
  periodFinal: boolean;
  parastart: boolean;
  linestart: boolean;
  sentbreak: boolean;
  abbr: boolean;
  ellipsis: boolean;
}

function token(tok: string, parastart = false, linestart = false): Token {
  const lower = tok.toLowerCase();
  return { tok, type: NUMERIC.test(lower) ? '##number##' : lower, periodFinal: tok.endsWith('.'), parastart, linestart, sentbreak: false, abbr: false, ellipsis: false };
}

const typeNoPeriod = (t: Token) => (pyLen(t.type) > 1 && t.type.endsWith('.') ? t.type.slice(0, -1) : t.type);
const typeNoSentperiod = (t: Token) => (t.sentbreak ? typeNoPeriod(t) : t.type);
const firstChar = (t: Token) => String.fromCodePoint(t.tok.codePointAt(0)!);
const firstUpper = (t: Token) => isUpper(firstChar(t));
const firstLower = (t: Token) => isLower(firstChar(t));

/** PunktBaseClass._tokenize_words: each line's tokens, the first marked as starting a line (and a paragraph after a blank line). */
function tokenizeWords(text: string): Token[] {
  const out: Token[] = [];
  let parastart = false;
  for (const line of text.split('\n')) {
    if (!strip(line)) {
      parastart = true;
      continue;
    }
    const toks = line.match(WORD_TOKENIZER) ?? [];
    if (toks.length === 0) continue;
    out.push(token(toks[0]!, parastart, true));
    parastart = false;
    for (const tok of toks.slice(1)) out.push(token(tok));
  }
  return out;
}

function firstPass(t: Token, m: Model): void {
  if (SENT_END_CHARS.includes(t.tok)) t.sentbreak = true;
  else if (ELLIPSIS.test(t.tok)) t.ellipsis = true;
  else if (t.periodFinal && !t.tok.endsWith('..')) {
    const base = t.tok.slice(0, -1).toLowerCase();
    if (m.abbrevTypes.has(base) || m.abbrevTypes.has(base.split('-').at(-1)!)) t.abbr = true;
    else t.sentbreak = true;
  }
}

/** Whether the token starts a sentence, by the case its type was seen in: true, false or 'unknown'. */
function orthoHeuristic(t: Token, m: Model): boolean | 'unknown' {
  if (PUNCTUATION.includes(t.tok)) return false;
  const context = m.orthoContext.get(typeNoSentperiod(t)) ?? 0;
  if (firstUpper(t) && context & ORTHO_LC && !(context & MID_UC)) return true;
  if (firstLower(t) && (context & ORTHO_UC || !(context & BEG_LC))) return false;
  return 'unknown';
}

/** The collocation, abbreviation, initial and ordinal heuristics, on a period-final token given the next. */
function secondPass(t: Token, next: Token | undefined, m: Model): void {
  if (!next || !t.periodFinal) return;
  const typ = typeNoPeriod(t);
  const nextTyp = typeNoSentperiod(next);
  const isInitial = INITIAL.test(t.tok);
  if (m.collocations.has(`${typ}\t${nextTyp}`)) {
    t.sentbreak = false;
    t.abbr = true;
    return;
  }
  if ((t.abbr || t.ellipsis) && !isInitial) {
    if (orthoHeuristic(next, m) === true) {
      t.sentbreak = true;
      return;
    }
    if (firstUpper(next) && m.sentStarters.has(nextTyp)) {
      t.sentbreak = true;
      return;
    }
  }
  if (isInitial || typ === '##number##') {
    const starter = orthoHeuristic(next, m);
    if (starter === false) {
      t.sentbreak = false;
      t.abbr = true;
      return;
    }
    if (starter === 'unknown' && isInitial && firstUpper(next) && !((m.orthoContext.get(nextTyp) ?? 0) & ORTHO_LC)) {
      t.sentbreak = false;
      t.abbr = true;
    }
  }
}

/** text_contains_sentbreak: a break after any token but the last. */
function containsSentbreak(text: string, m: Model): boolean {
  const toks = tokenizeWords(text);
  for (const t of toks) firstPass(t, m);
  // The second pass of a token sees the next one as the first pass left it, as nltk's pipelined generators do.
  for (let i = 0; i < toks.length; i++) {
    if (i > 0 && toks[i - 1]!.sentbreak) return true;
    secondPass(toks[i]!, toks[i + 1], m);
  }
  return false;
}

/** The index of the last ASCII whitespace character, 0 when there is none (nltk's own convention). */
function lastWhitespaceIndex(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) if (' \t\n\r\v\f'.includes(text[i]!)) return i;
  return 0;
}

type Slice = [number, number];

/** _match_potential_end_contexts: each candidate end with the word before it and what follows, overlaps dropped. */
function potentialEnds(text: string): Array<{ match: RegExpExecArray; context: string }> {
  const out: Array<{ match: RegExpExecArray; context: string }> = [];
  let prev: Slice = [0, 0];
  let prevMatch: RegExpExecArray | null = null;
  const contextOf = (match: RegExpExecArray, slice: Slice) => text.slice(slice[0], slice[1]) + match[0] + match.groups!.after_tok!;
  for (const match of text.matchAll(PERIOD_CONTEXT)) {
    let start = lastWhitespaceIndex(text.slice(prev[1], match.index));
    start = start ? start + prev[1] + 1 : prev[0];
    const word: Slice = [start, match.index];
    if (prevMatch && prev[1] <= word[0]) out.push({ match: prevMatch, context: contextOf(prevMatch, prev) });
    prevMatch = match;
    prev = word;
  }
  if (prevMatch) out.push({ match: prevMatch, context: contextOf(prevMatch, prev) });
  return out;
}

function slicesFromText(text: string, m: Model): Slice[] {
  const out: Slice[] = [];
  let lastBreak = 0;
  for (const { match, context } of potentialEnds(text)) {
    if (!containsSentbreak(context, m)) continue;
    const end = match.index + match[0].length;
    out.push([lastBreak, end]);
    lastBreak = match.groups!.next_tok ? match.indices!.groups!.next_tok![0] : end;
  }
  out.push([lastBreak, rstrip(text).length]);
  return out;
}

/** Closing quotes and brackets after a sentence's end join that sentence. */
function realignBoundaries(text: string, slices: Slice[]): Slice[] {
  const out: Slice[] = [];
  let realign = 0;
  for (let i = 0; i < slices.length; i++) {
    const s1: Slice = [slices[i]![0] + realign, slices[i]![1]];
    const s2 = slices[i + 1];
    if (!s2) {
      if (text.slice(s1[0], s1[1])) out.push(s1);
      continue;
    }
    const m = BOUNDARY_REALIGNMENT.exec(text.slice(s2[0], s2[1]));
    if (m) {
      out.push([s1[0], s2[0] + rstrip(m[0]).length]);
      realign = m[0].length;
    } else {
      realign = 0;
      if (text.slice(s1[0], s1[1])) out.push(s1);
    }
  }
  return out;
}

/** nltk.sent_tokenize(text) (english). */
export function sentTokenize(text: string): string[] {
  const m = english();
  return realignBoundaries(text, slicesFromText(text, m)).map(([a, b]) => text.slice(a, b));
}
