// MMLU-style multiple choice (cais/mmlu layout, config "all", split "test": question, subject,
// choices, answer index). Prompt and letter extraction as the reference's MMLU benchmarks
// (mmlu_redux.py): lettered choices, "Answer with just the letter", accuracy per subject too.
import { DataFormatError } from '../../errors.js';
import { extractMcqAnswer, formatMcqChoices } from './extract.js';
import { arrayField, stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import { buildMessages, type ExampleResult, type Suite } from './types.js';

const LETTERS = 'ABCDEFGHIJ';

interface McqTarget {
  letter: string;
  letters: string;
}

export const mmlu: Suite = {
  name: 'mmlu',
  description: 'multiple choice (A-D) across subjects; the chosen letter must match',
  dataset: { hubId: 'cais/mmlu', name: 'all', split: 'test' },
  sample: 'mmlu',
  parseRow(row, at, systemPrompt) {
    const question = stringField(row, 'question', at);
    const choices = arrayField(row, 'choices', at);
    if (choices.length < 2 || choices.length > LETTERS.length || !choices.every((c) => typeof c === 'string')) {
      throw new DataFormatError(`${at}: "choices" must be 2 to ${LETTERS.length} strings`);
    }
    const answer = row.answer;
    if (!Number.isInteger(answer) || (answer as number) < 0 || (answer as number) >= choices.length) {
      throw new DataFormatError(`${at}: "answer" must be the index (0-${choices.length - 1}) of the right choice`);
    }
    const letters = LETTERS.slice(0, choices.length);
    const listed = letters.length === 2 ? 'A or B' : [...letters].join(', ').replace(/, (\w)$/, ', or $1');
    const prompt = `${question}\n\n${formatMcqChoices(choices as string[])}\n\nAnswer with just the letter (${listed}).`;
    const subject = typeof row.subject === 'string' && row.subject !== '' ? row.subject : 'unknown';
    const target: McqTarget = { letter: letters[answer as number], letters };
    return { id: exampleId('mmlu', question), messages: buildMessages(prompt, systemPrompt), target, group: subject };
  },
  grade(response, item) {
    const { letter, letters } = item.target as McqTarget;
    const extracted = extractMcqAnswer(response, letters);
    return { correct: extracted === letter, extracted };
  },
  expected: (item) => (item.target as McqTarget).letter,
  aggregate(results: readonly ExampleResult[]) {
    const bySubject = new Map<string, { n: number; correct: number }>();
    for (const r of results) {
      const s = bySubject.get(r.group ?? 'unknown') ?? { n: 0, correct: 0 };
      s.n++;
      if (r.correct) s.correct++;
      bySubject.set(r.group ?? 'unknown', s);
    }
    return Object.fromEntries([...bySubject.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([s, v]) => [`${s}/accuracy`, v.correct / v.n]));
  },
};
