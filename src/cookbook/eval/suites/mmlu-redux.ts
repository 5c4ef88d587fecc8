// MMLU-Redux (edinburgh-dawg/mmlu-redux: one config per subject, split "test"), as mmlu_redux.py
// builds it: the 30 subjects read in turn, only rows whose error_type is "ok", accuracy per
// subject too; `limit` takes the first rows of Python's random.Random(42).shuffle when it cuts.
import { DataFormatError } from '../../errors.js';
import { accuracyByGroup, CHOICE_GRADING, choiceItem, choicePrompt, letterAt, stringList } from './choice.js';
import { stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import type { Suite } from './types.js';

export const MMLU_REDUX_SUBJECTS = [
  'anatomy', 'astronomy', 'business_ethics', 'clinical_knowledge', 'college_chemistry', 'college_computer_science',
  'college_mathematics', 'college_medicine', 'college_physics', 'conceptual_physics', 'econometrics',
  'electrical_engineering', 'formal_logic', 'global_facts', 'high_school_chemistry', 'high_school_geography',
  'high_school_macroeconomics', 'high_school_mathematics', 'high_school_physics', 'high_school_statistics',
  'high_school_us_history', 'human_aging', 'logical_fallacies', 'machine_learning', 'miscellaneous', 'philosophy',
  'professional_accounting', 'professional_law', 'public_relations', 'virology',
] as const;

/** `int(answer)`: an index, or its digits as a string. */
function answerIndex(row: Record<string, unknown>, choices: number, at: string): number {
  const raw = row.answer ?? 0;
  const n = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
  if (!Number.isInteger(n) || (n as number) < 0 || (n as number) >= choices) throw new DataFormatError(`${at}: "answer" must be the index (0-${choices - 1}) of the right choice`);
  return n as number;
}

export const mmluRedux: Suite = {
  name: 'mmlu_redux',
  description: 'MMLU-Redux: the re-annotated MMLU subset (30 subjects, error-free rows only), multiple choice (A-D); accuracy per subject too',
  dataset: { hubId: 'edinburgh-dawg/mmlu-redux', name: null, split: 'test', configs: MMLU_REDUX_SUBJECTS },
  sample: 'mmlu_redux',
  limitPick: { kind: 'python_shuffle', seed: 42 },
  include: (row) => (row.error_type ?? 'ok') === 'ok',
  parseRow(row, at, systemPrompt, config) {
    const question = stringField(row, 'question', at);
    const choices = stringList(row, 'choices', at);
    if (choices.length === 0) throw new DataFormatError(`${at}: "choices" is empty`);
    const letter = letterAt(answerIndex(row, choices.length, at));
    const prompt = choicePrompt(question, choices, 'Answer with just the letter (A, B, C, or D).');
    return choiceItem(exampleId('mmlu_redux', question), prompt, systemPrompt, { letter, letters: 'ABCD' }, config ?? 'unknown');
  },
  ...CHOICE_GRADING,
  aggregate: accuracyByGroup,
};
