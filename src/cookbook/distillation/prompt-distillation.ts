// Prompt distillation (the reference's recipes/prompt_distillation): a teacher answers each query
// with a long classification prompt in front of it; the student is then fine-tuned on the bare
// query and the teacher's final answer, so it learns to behave as if the prompt were there. This
// module is the data side: the prompt, the parse of the answer, the chunk plan and the seeds.
import { deriveSeed } from '../rl/seeds.js';
import type { Message } from '../renderers/types.js';

/** The reference's LANGUAGE_CLASSIFICATION_PROMPT with `{text}` filled in (its `{{…}}` are literal braces). */
export function languageClassificationPrompt(text: string): string {
  return `You are a precise language classifier.

Goal: Classify the language of the provided text into exactly one of these labels:
ar (Arabic), de (German), el (Greek), en (English), es (Spanish), fr (French),
hi (Hindi), ru (Russian), tr (Turkish), ur (Urdu), vi (Vietnamese),
zh (Chinese - Simplified), ot (Other/Unknown).

Instructions:
1) Preprocess carefully (without changing the intended meaning):
   - Trim whitespace.
   - Ignore URLs, emails, file paths, hashtags, user handles, and emojis.
   - Ignore numbers, math expressions, and standalone punctuation.
   - If there is code, IGNORE code syntax (keywords, operators, braces) and focus ONLY on human language in comments and string literals.
   - Preserve letters and diacritics; do NOT strip accents.
   - If after ignoring the above there are no alphabetic letters left, output 'ot'.

2) Script-based rules (highest priority):
   - Devanagari script → hi.
   - Greek script → el.
   - Cyrillic script → ru.
   - Han characters (中文) → zh. (Treat Traditional as zh too.)
   - Arabic script → ar vs ur:
       • If Urdu-only letters appear (e.g., ے, ڑ, ں, ھ, ٹ, ڈ, کھ, گ, چ with Urdu forms), or clear Urdu words, choose ur.
       • Otherwise choose ar.
   (If multiple scripts appear, pick the script that contributes the majority of alphabetic characters. If tied, go to step 5.)

3) Latin-script heuristics (use when text is mainly Latin letters):
   - vi: presence of Vietnamese-specific letters/diacritics (ă â ê ô ơ ư đ, plus dense diacritics across many words).
   - tr: presence of Turkish-specific letters (ı İ ğ Ğ ş Ş ç Ç ö Ö ü Ü) and common function words (ve, bir, için, değil, ama, çok).
   - de: presence of umlauts (ä ö ü) or ß and common function words (und, der, die, das, nicht, ist).
   - es: presence of ñ, ¿, ¡ and common words (y, de, la, el, es, no, por, para, con, gracias, hola).
   - fr: frequent French diacritics (é è ê à ç ô â î û ù) and common words (et, le, la, les, des, une, est, avec, pour, merci, bonjour).
   - en: default among Latin languages if strong evidence for others is absent, but ONLY if English function words are present (the, and, is, are, to, of, in, for, on, with). If evidence is insufficient for any Latin language, prefer 'ot' over guessing.

4) Named entities & loanwords:
   - Do NOT decide based on a single proper noun, brand, or place name.
   - Require at least two function words or repeated language-specific signals (diacritics/letters) before assigning a Latin-language label.

5) Mixed-language text:
   - Determine the dominant language by counting indicative tokens (language-specific letters/diacritics/function words) AFTER preprocessing.
   - If two or more languages are equally dominant or the text is a deliberate multi-language mix, return 'ot'.

6) Very short or noisy inputs:
   - If the text is ≤2 meaningful words or too short to be confident, return 'ot' unless there is a very strong language-specific signal (e.g., “bonjour” → fr, “hola” → es).

7) Transliteration/romanization:
   - If Hindi/Urdu/Arabic/Chinese/Russian/Greek is written purely in Latin letters (romanized) without clear, repeated language-specific cue words, return 'ot'. (Only classify as hi/ur/ar/zh/ru/el when native scripts or highly distinctive romanized patterns are clearly present.)

8) Code-heavy inputs:
   - If the text is mostly code with minimal or no natural-language comments/strings, return 'ot'.
   - If comments/strings clearly indicate a language per rules above, use that label.

9) Ambiguity & confidence:
   - When in doubt, choose 'ot' rather than guessing.

Output format:
- Respond with EXACTLY one line: "Final Answer: xx"
- Where xx ∈ {ar, de, el, en, es, fr, hi, ru, tr, ur, vi, zh, ot} and nothing else.

Text to classify:
${text}
`;
}

/** The reference's `re.search(r"Final Answer: (\\w+)", …)`; Python's `\\w` matches letters and digits of any script. */
export const DEFAULT_ANSWER_PATTERN = 'Final Answer: ([\\p{L}\\p{N}_]+)';

/** The first capture group of `pattern` (a JavaScript regex, Unicode mode) in `response`; null when it does not match. */
export function extractAnswer(response: string, pattern: string = DEFAULT_ANSWER_PATTERN): string | null {
  const m = new RegExp(pattern, 'u').exec(response);
  return m ? (m[1] ?? m[0]) : null;
}

/** The teacher sees one user message: the prompt around the query. */
export function teacherConversation(query: string): Message[] {
  return [{ role: 'user', content: languageClassificationPrompt(query) }];
}

/** The student's training example: the bare query and the teacher's answer. */
export function studentConversationLine(query: string, answer: string): string {
  return JSON.stringify({ messages: [{ role: 'user', content: query }, { role: 'assistant', content: answer }] });
}

/** Python's `f.readlines()` then `.strip()` of each: every line is a query, blank ones included. */
export function parseQueries(text: string): string[] {
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => l.trim());
}

/** Chunk k holds queries [k·size, (k+1)·size): a pure function of the counts, so retries agree. */
export function chunkRange(nQueries: number, perChunk: number, chunk: number): { start: number; end: number } {
  if (!Number.isInteger(perChunk) || perChunk <= 0) throw new RangeError('queries per chunk must be a positive integer');
  const start = chunk * perChunk;
  if (!Number.isInteger(chunk) || chunk < 0 || start >= nQueries) throw new RangeError(`there is no chunk ${chunk} of ${nQueries} queries`);
  return { start, end: Math.min(start + perChunk, nQueries) };
}

export const chunkCount = (nQueries: number, perChunk: number) => Math.ceil(nQueries / perChunk);

/** Keeps prompt distillation seeds apart from every other seed path of a run. */
const PROMPT_DISTILLATION_SEED_MARKER = 3_000_017;

/** The teacher's sampling seed for query `index`: from (run seed, query), whatever chunk or attempt samples it. */
export function teacherQuerySeed(runSeed: number, index: number): number {
  return deriveSeed(runSeed, PROMPT_DISTILLATION_SEED_MARKER, index);
}

export const chunkFileName = (chunk: number) => `prompt_distillation/chunk_${String(chunk).padStart(5, '0')}.jsonl`;
