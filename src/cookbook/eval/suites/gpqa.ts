// GPQA-Diamond (Idavidrein/gpqa, config "gpqa_diamond", split "train"): graduate-level science
// questions, as gpqa.py builds them. The choices are listed in the dataset's column order with no
// shuffle — "Choice…" columns sorted by name when the data has them, else "Correct Answer" then
// "Incorrect Answer 1-3" — so on the public set the right answer is always (A), as in the reference.
import { DataFormatError } from '../../errors.js';
import { CHOICE_GRADING, choiceItem, choicePrompt, letterAt, THINK_THEN_LETTER_ABCD } from './choice.js';
import { stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import type { Suite } from './types.js';

const CHOICE_COLUMNS = new Set(['choice_a', 'choice_b', 'choice_c', 'choice_d']);

/** Python truthiness of a cell (a choice is kept only when non-empty). */
const truthy = (v: unknown) => v !== undefined && v !== null && v !== '' && v !== 0 && v !== false;

const cellText = (v: unknown, column: string, at: string): string => {
  if (typeof v !== 'string') throw new DataFormatError(`${at}: "${column}" must be a string`);
  return v;
};

function gpqaChoices(row: Record<string, unknown>, at: string): string[] {
  const columns = Object.keys(row).filter((c) => c.startsWith('Choice') || CHOICE_COLUMNS.has(c));
  if (columns.length > 0) {
    return columns
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .filter((c) => truthy(row[c]))
      .map((c) => cellText(row[c], c, at));
  }
  const choices = [cellText(row['Correct Answer'] ?? '', 'Correct Answer', at)];
  for (let i = 1; i <= 3; i++) {
    const wrong = row[`Incorrect Answer ${i}`];
    if (truthy(wrong)) choices.push(cellText(wrong, `Incorrect Answer ${i}`, at));
  }
  return choices;
}

export const gpqa: Suite = {
  name: 'gpqa',
  description: 'GPQA-Diamond: graduate-level science, multiple choice (A-D); the chosen letter must match',
  dataset: { hubId: 'Idavidrein/gpqa', name: 'gpqa_diamond', split: 'train' },
  sample: 'gpqa',
  parseRow(row, at, systemPrompt) {
    const question = stringField(row, 'Question', at);
    const answer = String(row.Answer ?? row['Correct Answer'] ?? '');
    const choices = gpqaChoices(row, at);
    let letter: string | undefined;
    if (['A', 'B', 'C', 'D'].includes(answer)) letter = answer;
    else {
      const i = choices.findIndex((c) => c.trim() === answer.trim());
      if (i >= 0) letter = letterAt(i);
    }
    if (letter === undefined) throw new DataFormatError(`${at}: the correct answer ${JSON.stringify(answer)} is none of the choices`);
    const prompt = choicePrompt(question, choices, THINK_THEN_LETTER_ABCD);
    return choiceItem(exampleId('gpqa', question), prompt, systemPrompt, { letter, letters: 'ABCD' });
  },
  ...CHOICE_GRADING,
};
