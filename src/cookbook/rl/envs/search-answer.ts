// Answer grading of the search_tool recipe (reference 0.6.1 recipes/search_tool/tools.py
// normalize_answer, TextAnswerReward): the text after the one "Answer:" of the final assistant
// message, normalised as SQuAD does (lowercase, ASCII punctuation out, articles out, whitespace
// collapsed), must equal a normalised gold answer. Reward: format_coef·(format − 1) + correct.
import { getTextContent } from '../../renderers/content.js';
import type { Message } from '../../renderers/types.js';
import type { RewardFn } from '../../tool-use/index.js';

// Python's str.split()/str.strip() whitespace (str.isspace), which is not JavaScript's \s.
const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_SPACE_RUNS = new RegExp(`[${PY_SPACE}]+`, 'g');
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');
// string.punctuation
const ASCII_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;
// re's \b on str is Unicode-aware: a word character is a letter, a digit or '_'.
const ARTICLES = /(?<![\p{L}\p{N}_])(?:a|an|the)(?![\p{L}\p{N}_])/gu;

export function pyStrip(text: string): string {
  return text.replace(PY_STRIP, '');
}

export function normalizeAnswer(s: string): string {
  const lowered = s.toLowerCase();
  const unpunctuated = lowered.replace(ASCII_PUNCTUATION, '');
  const noArticles = unpunctuated.replace(ARTICLES, ' ');
  return noArticles.split(PY_SPACE_RUNS).filter((w) => w !== '').join(' ');
}

/** The text after "Answer:", or null when it is missing or appears more than once. */
export function extractAnswer(text: string): string | null {
  const parts = text.split('Answer:');
  if (parts.length !== 2) return null;
  return pyStrip(parts[1]);
}

export function isCorrectAnswer(text: string, goldAnswers: readonly string[]): boolean {
  const answer = extractAnswer(text);
  if (answer === null || goldAnswers.length === 0) return false;
  const normalized = normalizeAnswer(answer);
  return goldAnswers.some((gold) => normalizeAnswer(gold) === normalized);
}

/** TextAnswerReward: grades the last assistant message of the episode. */
export function textAnswerReward(goldAnswers: readonly string[], formatCoef = 0.1): RewardFn {
  return async (history: Message[]) => {
    const final = [...history].reverse().find((m) => m.role === 'assistant');
    if (!final) return [0.0, { format: 0.0, correct: 0.0 }];
    const content = getTextContent(final);
    const format = extractAnswer(content) !== null ? 1.0 : 0.0;
    const correct = isCorrectAnswer(content, goldAnswers) ? 1.0 : 0.0;
    return [formatCoef * (format - 1) + correct, { format, correct }];
  };
}
