// Arena-Hard-Auto v0.1 (lmarena-ai/arena-hard-auto-v0.1, split "train"), as the reference's
// eval/benchmarks/_arena_hard.py grades it: the question alone as the user's turn (no system
// prompt), the answer rated 1–10 by a judge model ("[[rating]]", else "Rating: N"), a win when the
// rating is ≥ 7; the score is the win rate, with the mean rating / 10 beside it. It is single-answer
// grading: no baseline answers, no pairwise verdicts, no position swap. The judge's reply is
// recorded per (example, sample) through ctx.once, so a retried chunk never asks it again. A judge
// that fails fails the grade, and its chunk is tried again: the reference scores such a sample 0,
// which would let a crashed judge change the result of an eval that finishes.
import { ConfigurationError, DataFormatError, ServiceUnavailableError } from '../../errors.js';
import { PY_WS_CLASS } from '../../renderers/py-whitespace.js';
import { sha256 } from './code-exec.js';
import { toAsciiDigits } from './extract.js';
import { exampleId } from './gsm8k.js';
import { pyGet } from './fields.js';
import { NO_EFFECTS, type ExampleResult, type Suite } from './types.js';

/** The reference's win threshold on the judge's 1–10 rating. */
export const WIN_RATING = 7;

export const arenaHardJudgePrompt = (question: string, answer: string) =>
  'Please act as an impartial judge and evaluate the quality of the response provided ' +
  'by an AI assistant to the user question displayed below. Your evaluation should ' +
  'consider factors including helpfulness, relevance, accuracy, depth, creativity, and ' +
  'level of detail of the response.\n\n' +
  'Begin your evaluation by providing a short explanation. Be as objective as possible. ' +
  'After providing your explanation, you must rate the response on a scale of 1 to 10 ' +
  'by strictly following this format: "[[rating]]", for example: "Rating: [[5]]".\n\n' +
  `[Question]\n${question}\n\n` +
  `[The Start of Assistant's Answer]\n${answer}\n[The End of Assistant's Answer]`;

// Python's `\d` (any script's digits) and `\s`; re.IGNORECASE lets "i" match "İ" and "ı" too.
const BRACKETED = /\[\[(\p{Nd}+)\]\]/u;
const RATING = new RegExp(`[Rr][Aa][Tt][IiİıI][Nn][Gg]:[${PY_WS_CLASS}]*(\\p{Nd}+)`, 'u');

/** The judge's rating: the first "[[N]]", else the first "Rating: N" (any case); null when neither. */
export function judgeRating(reply: string): number | null {
  const m = BRACKETED.exec(reply) ?? RATING.exec(reply);
  return m ? Number(toAsciiDigits(m[1]!)) : null;
}

interface ArenaHardTarget {
  question: string;
}

/** The reference's question: turns[0]["content"] (or str(turns[0])); null where it skips the row. */
function questionOf(row: Record<string, unknown>, at: string): string | null {
  const turns = pyGet(row, 'turns', []);
  if (!Array.isArray(turns)) throw new DataFormatError(`${at}: "turns" must be a list of {"content": …} turns`);
  if (turns.length === 0) return null;
  const first: unknown = turns[0];
  const content = first !== null && typeof first === 'object' && !Array.isArray(first) ? pyGet(first as Record<string, unknown>, 'content', '') : first;
  if (content === null || content === '') return null;
  if (typeof content !== 'string') throw new DataFormatError(`${at}: turns[0].content must be a string`);
  return content;
}

export const arenaHard: Suite = {
  name: 'arena_hard',
  description: 'challenging open-ended questions; a judge model rates each answer 1–10, a win at ≥ 7 (judge: the eval config’s `judge`)',
  dataset: { hubId: 'lmarena-ai/arena-hard-auto-v0.1', name: null, split: 'train' },
  sample: 'arena_hard',
  judged: true,
  // The reference skips rows without a question; a malformed row goes on to parseRow, which names it.
  include(row) {
    try {
      return questionOf(row, '') !== null;
    } catch {
      return true;
    }
  },
  parseRow(row, at) {
    const question = questionOf(row, at);
    if (question === null) throw new DataFormatError(`${at}: no question in turns[0]`);
    const cluster = pyGet(row, 'cluster', 'unknown');
    return {
      id: exampleId('arena_hard', question),
      messages: [{ role: 'user', content: question }],
      target: { question } satisfies ArenaHardTarget,
      group: cluster === null ? 'None' : String(cluster),
    };
  },
  async grade(response, item, ctx = NO_EFFECTS) {
    const judge = ctx.judge;
    if (!judge) throw new ConfigurationError('arena_hard grades with a judge model: run it through `cookbook eval` (the eval config’s `judge`)');
    const prompt = arenaHardJudgePrompt((item.target as ArenaHardTarget).question, response);
    const reply = await ctx.once<string>(['judge'], `${judge.name} sha256:${sha256(prompt)}`, () =>
      judge.ask([{ role: 'user', content: prompt }]).catch((err: Error) => {
        throw new ServiceUnavailableError(`arena_hard judge (${judge.name}) failed on ${item.id}: ${err.message}`);
      }),
    );
    const rating = judgeRating(reply);
    return { correct: rating !== null && rating >= WIN_RATING, extracted: rating === null ? '' : String(rating), metrics: { rating: rating ?? 0 } };
  },
  expected: () => `judge rating ≥ ${WIN_RATING} of 10`,
  aggregate(results: readonly ExampleResult[]) {
    const n = results.length;
    const wins = results.filter((r) => r.correct).length;
    const ratings = results.reduce((s, r) => s + (r.metrics?.rating ?? 0), 0);
    return { win_rate: n > 0 ? wins / n : 0, avg_score: (n > 0 ? ratings / n : 0) / 10 };
  },
};
