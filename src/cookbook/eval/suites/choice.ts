// What the reference's multiple-choice benchmarks share (gpqa.py, mmlu_pro.py, mmlu_redux.py,
// supergpqa.py, ceval.py): a prompt of lettered choices, a target letter, grading by the letter
// extract_mcq_answer reads from the response, and accuracy per subject.
import { DataFormatError } from '../../errors.js';
import { extractMcqAnswer, formatMcqChoices } from './extract.js';
import { buildMessages, type EvalItem, type ExampleResult, type Grade, type Suite } from './types.js';

/** The right letter and the letters extraction accepts (the reference's valid_letters). */
export interface ChoiceTarget {
  letter: string;
  letters: string;
}

export const letterAt = (i: number) => String.fromCharCode(65 + i);

/** The first `n` letters: "ABCD" for four choices. */
export const lettersFor = (n: number) => Array.from({ length: n }, (_, i) => letterAt(i)).join('');

/** `question`, a blank line, the lettered choices, a blank line, then `instruction`. */
export const choicePrompt = (question: string, choices: readonly string[], instruction: string) => `${question}\n\n${formatMcqChoices(choices)}\n\n${instruction}`;

/** "Think step by step, then give your final answer as a single letter (A, B, C, or D)." (gpqa.py, ceval.py) */
export const THINK_THEN_LETTER_ABCD = 'Think step by step, then give your final answer as a single letter (A, B, C, or D).';

export function choiceItem(id: string, prompt: string, systemPrompt: string | null, target: ChoiceTarget, group?: string): EvalItem {
  return { id, messages: buildMessages(prompt, systemPrompt), target, ...(group !== undefined ? { group } : {}) };
}

/** The reference's step(): the extracted letter must equal the expected one. */
export function gradeChoice(response: string, item: EvalItem): Grade {
  const { letter, letters } = item.target as ChoiceTarget;
  const extracted = extractMcqAnswer(response, letters);
  return { correct: extracted === letter, extracted };
}

export const expectedChoice = (item: EvalItem) => (item.target as ChoiceTarget).letter;

/** A list of strings, or a DataFormatError naming the row and the field. */
export function stringList(row: Record<string, unknown>, key: string, at: string): string[] {
  const v = row[key];
  if (!Array.isArray(v) || !v.every((c) => typeof c === 'string')) throw new DataFormatError(`${at}: "${key}" must be a list of strings`);
  return v as string[];
}

/** A string field that may be absent ("" then), as the reference's `row.get(key, "")`. */
export function optionalString(row: Record<string, unknown>, key: string, at: string): string {
  const v = row[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new DataFormatError(`${at}: "${key}" must be a string`);
  return v;
}

/** `<group>/accuracy` for each group, sorted by name (the reference's per-subject breakdown). */
export function accuracyByGroup(results: readonly ExampleResult[]): Record<string, number> {
  const byGroup = new Map<string, { n: number; correct: number }>();
  for (const r of results) {
    const g = byGroup.get(r.group ?? 'unknown') ?? { n: 0, correct: 0 };
    g.n++;
    if (r.correct) g.correct++;
    byGroup.set(r.group ?? 'unknown', g);
  }
  return Object.fromEntries([...byGroup.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([g, v]) => [`${g}/accuracy`, v.correct / v.n]));
}

/** The grading half every multiple-choice suite shares. */
export const CHOICE_GRADING: Pick<Suite, 'grade' | 'expected'> = { grade: gradeChoice, expected: expectedChoice };
