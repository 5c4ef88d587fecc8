// MMLU-Pro (TIGER-Lab/MMLU-Pro, split "test"): up to ten options (A-J), as mmlu_pro.py builds
// them; `limit` takes the first rows of the HF shuffle with seed 42 (limit_dataset's shuffle_seed).
import { DataFormatError } from '../../errors.js';
import { CHOICE_GRADING, choiceItem, letterAt, stringList } from './choice.js';
import { formatMcqChoices } from './extract.js';
import { stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import type { Suite } from './types.js';

const LETTERS = 'ABCDEFGHIJ';

/** The expected letter from `answer_index` (else `answer`): an index, or a letter. */
function expectedLetter(row: Record<string, unknown>, at: string): string {
  const answer = row.answer_index ?? row.answer;
  if (Number.isInteger(answer) && (answer as number) >= 0 && (answer as number) < LETTERS.length) return letterAt(answer as number);
  if (typeof answer === 'string' && answer.trim() !== '') return answer.trim().toUpperCase();
  throw new DataFormatError(`${at}: "answer_index" (or "answer") must be the right option's index (0-9) or letter`);
}

export const mmluPro: Suite = {
  name: 'mmlu_pro',
  description: 'MMLU-Pro: professional-level multiple choice with up to ten options (A-J); the chosen letter must match',
  dataset: { hubId: 'TIGER-Lab/MMLU-Pro', name: null, split: 'test' },
  sample: 'mmlu_pro',
  limitPick: { kind: 'hf_shuffle', seed: 42 },
  parseRow(row, at, systemPrompt) {
    const questionKey = 'question' in row ? 'question' : 'input';
    const question = stringField(row, questionKey, at);
    const choices = 'options' in row ? stringList(row, 'options', at) : 'choices' in row ? stringList(row, 'choices', at) : [];
    const prompt = choices.length > 0 ? `${question}\n\n${formatMcqChoices(choices)}\n\nAnswer with just the letter (A, B, C, D, etc.).` : `${question}\n\nAnswer with just the letter.`;
    const id = row.question_id !== undefined && row.question_id !== null ? `mmlu_pro_${String(row.question_id)}` : exampleId('mmlu_pro', question);
    const group = typeof row.category === 'string' && row.category !== '' ? row.category : undefined;
    return choiceItem(id, prompt, systemPrompt, { letter: expectedLetter(row, at), letters: LETTERS }, group);
  },
  ...CHOICE_GRADING,
};
