// Decisions files: JSON Lines, one decision a line — the question, its choices, and either the
// correct `label` (a hard target) or `target_probs` (a soft one). Every row is checked as it is
// read and a bad one is refused naming the file, the line and the field.
import { z } from 'zod';
import { DataFormatError, DataValidationError } from '../../errors.js';
import { parseJsonlRows, readTextFile } from '../../jsonl.js';
import { Decision } from './decision.js';

const ChoiceSchema = z.strictObject({
  label: z.string().min(1),
  /** Shown to the model after the choice id; may be left out. */
  description: z.string().default(''),
});

export const DecisionRowSchema = z.strictObject({
  question: z.string().min(1),
  choices: z.array(ChoiceSchema).min(2).max(26),
  label: z.string().optional(),
  target_probs: z.record(z.string(), z.number().nonnegative()).optional(),
});
export type DecisionRow = z.output<typeof DecisionRowSchema>;

/** A decision with its training target: one label, or target probabilities (omitted labels: 0). */
export type DecisionExample = { decision: Decision; line: number } & ({ label: string } | { targetProbs: Record<string, number> });

export type TargetKind = 'label' | 'target_probs';

export const targetKind = (e: DecisionExample): TargetKind => ('label' in e ? 'label' : 'target_probs');

function toExample(row: DecisionRow, at: string, line: number): DecisionExample {
  let decision: Decision;
  try {
    decision = new Decision(row.question, row.choices.map((c) => [c.label, c.description] as const));
  } catch (err) {
    throw new DataValidationError(`${at}: choices: ${(err as Error).message}`);
  }
  const labels = decision.labels;
  const unknown = (label: string, field: string) =>
    new DataValidationError(`${at}: ${field}: "${label}" is not one of the choices (${labels.map((l) => `"${l}"`).join(', ')})`);
  if ((row.label === undefined) === (row.target_probs === undefined)) {
    throw new DataFormatError(`${at}: give either "label" (the correct choice) or "target_probs" (a probability per label), not ${row.label === undefined ? 'neither' : 'both'}`);
  }
  if (row.label !== undefined) {
    if (!labels.includes(row.label)) throw unknown(row.label, 'label');
    return { decision, line, label: row.label };
  }
  for (const label of Object.keys(row.target_probs!)) if (!labels.includes(label)) throw unknown(label, `target_probs.${label}`);
  return { decision, line, targetProbs: row.target_probs! };
}

/** The decisions of a JSONL text (`shownAs` names it in errors). */
export function parseDecisions(text: string, shownAs: string): DecisionExample[] {
  return parseJsonlRows(
    text,
    shownAs,
    (data, at, line) => {
      const parsed = DecisionRowSchema.safeParse(data);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new DataFormatError(`${at}: ${issue.path.join('.') || '(row)'}: ${issue.message}`);
      }
      return toExample(parsed.data, at, line);
    },
    { emptyMessage: `${shownAs}: no decisions` },
  );
}

export async function readDecisions(file: string, shownAs = file): Promise<DecisionExample[]> {
  return parseDecisions(await readTextFile(file, shownAs), shownAs);
}

/** The label a cross_entropy step trains; a target_probs row has none (resolveLoss refuses those for cross_entropy). */
export function labelOf(e: DecisionExample): string {
  if (!('label' in e)) throw new DataValidationError(`line ${e.line}: cross_entropy needs a label, the row gives target_probs`);
  return e.label;
}

/** The target as probabilities: a label is probability 1 on it (as forecasting.py trains outcomes). */
export const targetProbsOf = (e: DecisionExample): Record<string, number> => ('label' in e ? { [e.label]: 1 } : e.targetProbs);

/** An example's target probabilities in choice order (omitted labels 0). */
export const targetVector = (e: DecisionExample): number[] => {
  const t = targetProbsOf(e);
  return e.decision.labels.map((l) => (Object.hasOwn(t, l) ? t[l] : 0));
};
