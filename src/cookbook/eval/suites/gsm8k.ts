// GSM8K (openai/gsm8k, config "main", split "test"): the question as the user's message, the
// number after "####" as the target, graded by the reference's number extraction.
import { createHash } from 'node:crypto';
import { DataFormatError } from '../../errors.js';
import { checkGsm8k, extractGsm8kAnswer } from './extract.js';
import { stringField } from './fields.js';
import { buildMessages, type Suite } from './types.js';

/** The system prompt the reference recommends for its math benchmarks (gsm8k, math500, aime, hmmt). */
export const BOXED_SYSTEM_PROMPT = 'Put your final answer in \\boxed{}.';

/** The reference's make_example_id: prefix + the first 12 hex digits of md5(text). */
export const exampleId = (prefix: string, text: string) => `${prefix}_${createHash('md5').update(text).digest('hex').slice(0, 12)}`;

export const gsm8k: Suite = {
  name: 'gsm8k',
  description: 'grade-school math word problems; the final number must match',
  dataset: { hubId: 'openai/gsm8k', name: 'main', split: 'test' },
  sample: 'gsm8k',
  recommendedSystemPrompt: BOXED_SYSTEM_PROMPT,
  parseRow(row, at, systemPrompt) {
    const question = stringField(row, 'question', at);
    const answer = stringField(row, 'answer', at);
    if (!answer.includes('####')) throw new DataFormatError(`${at}: "answer" has no final answer line "#### <answer>"`);
    const expected = answer.split('####').at(-1)!.trim();
    return { id: exampleId('gsm8k', question), messages: buildMessages(question, systemPrompt), target: expected };
  },
  grade: (response, item) => ({ correct: checkGsm8k(response, item.target as string), extracted: extractGsm8kAnswer(response) }),
  expected: (item) => item.target as string,
};
