// Comparison data (spec §4.2, reference `preference/types.py`): a prompt conversation and two
// completions (lists of messages) with a label saying which one is preferred, read from JSONL with
// errors that name the file and line.
//
// Row shapes accepted, one JSON object per line:
//   {"comparison": {"prompt_conversation": [...], "completion_A": [...], "completion_B": [...]}, "label": "A"|"B"|"Tie"}
//     (the reference's ComparisonBuilderFromJsonl)
//   the same with the comparison's keys at the top level
//   {"prompt_conversation": [...], "chosen": [...], "rejected": [...]}  (≡ A = chosen, label "A")

import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import type { Message } from '../renderers/types.js';
import { validateConversation } from '../supervised/jsonl.js';

export interface Comparison {
  prompt_conversation: Message[];
  completion_A: Message[];
  completion_B: Message[];
}

export type ComparisonLabel = 'A' | 'B' | 'Tie';
export const COMPARISON_LABELS: readonly ComparisonLabel[] = ['A', 'B', 'Tie'];

export interface LabeledComparison {
  comparison: Comparison;
  label: ComparisonLabel;
}

export interface ComparisonRow extends LabeledComparison {
  /** 1-based line in the source file (for an `hf` source: the row's position). */
  line: number;
  /** Where the row came from when that is not `file:line` (an `hf` source's "file row N"). */
  at?: string;
}

/** Exchanges A and B and flips the label (a tie stays a tie). */
export function swapComparison(lc: LabeledComparison): LabeledComparison {
  const { prompt_conversation, completion_A, completion_B } = lc.comparison;
  const label = lc.label === 'A' ? 'B' : lc.label === 'B' ? 'A' : 'Tie';
  return { comparison: { prompt_conversation, completion_A: completion_B, completion_B: completion_A }, label };
}

/** As the reference: chosen is A when the label is "A", otherwise B (so a tie prefers B). */
export function chosenAndRejected(lc: LabeledComparison): { chosen: Message[]; rejected: Message[] } {
  const { completion_A, completion_B } = lc.comparison;
  return lc.label === 'A' ? { chosen: completion_A, rejected: completion_B } : { chosen: completion_B, rejected: completion_A };
}

function messages(value: unknown, key: string, at: string, allowEmpty: boolean): Message[] {
  if (!Array.isArray(value)) throw new DataFormatError(`${at}: "${key}" must be a list of messages`);
  if (value.length === 0) {
    if (allowEmpty) return [];
    throw new DataFormatError(`${at}: "${key}" is empty`);
  }
  // validateConversation checks roles and content; its messages say "message i".
  return validateConversation({ messages: value }, `${at}: "${key}"`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Validates one parsed row; `at` is "file:line". */
export function parseComparisonRow(data: unknown, at: string): LabeledComparison {
  if (!isObject(data)) throw new DataFormatError(`${at}: expected a JSON object with a comparison, got ${Array.isArray(data) ? 'a list' : JSON.stringify(data)}`);
  const missing = (keys: string[], obj: Record<string, unknown>, where: string) => {
    const absent = keys.filter((k) => !(k in obj));
    if (absent.length) throw new DataFormatError(`${at}: ${where}missing ${absent.map((k) => `"${k}"`).join(', ')} (keys: ${Object.keys(obj).join(', ') || 'none'})`);
  };
  if ('chosen' in data || 'rejected' in data) {
    missing(['prompt_conversation', 'chosen', 'rejected'], data, '');
    return {
      comparison: {
        prompt_conversation: messages(data.prompt_conversation, 'prompt_conversation', at, true),
        completion_A: messages(data.chosen, 'chosen', at, false),
        completion_B: messages(data.rejected, 'rejected', at, false),
      },
      label: 'A',
    };
  }
  const nested = 'comparison' in data;
  const comparison = nested ? data.comparison : data;
  if (!isObject(comparison)) throw new DataFormatError(`${at}: "comparison" must be an object`);
  missing(['prompt_conversation', 'completion_A', 'completion_B'], comparison, nested ? '"comparison" is ' : '');
  missing(['label'], data, '');
  if (!COMPARISON_LABELS.includes(data.label as ComparisonLabel)) {
    throw new DataFormatError(`${at}: "label" must be one of "A", "B", "Tie", got ${JSON.stringify(data.label)}`);
  }
  return {
    comparison: {
      prompt_conversation: messages(comparison.prompt_conversation, 'prompt_conversation', at, true),
      completion_A: messages(comparison.completion_A, 'completion_A', at, false),
      completion_B: messages(comparison.completion_B, 'completion_B', at, false),
    },
    label: data.label as ComparisonLabel,
  };
}

export function parseComparisonsJsonl(text: string, displayPath: string): ComparisonRow[] {
  return parseJsonlRows(text, displayPath, (data, at, line) => ({ ...parseComparisonRow(data, at), line }), {
    emptyMessage: `${displayPath}: no comparisons (the file is empty)`,
  });
}

export async function loadComparisonsJsonl(filePath: string, displayPath = filePath): Promise<ComparisonRow[]> {
  return parseComparisonsJsonl(await readTextFile(filePath, displayPath), displayPath);
}

/**
 * Train and test rows of a comparisons file. The reference's JSONL builder keeps the file's order
 * (only `set_epoch` shuffles), so the training rows do too; `test_size` > 0 holds out a seeded
 * sample (the first `test_size` of the `shuffleSeed` permutation, in that order) that the training
 * rows then skip.
 */
export function splitFileComparisons<R>(
  rows: readonly R[],
  testSize: number,
  permutation: (n: number) => number[],
): { train: R[]; test?: R[] } {
  if (testSize <= 0 || rows.length <= testSize) return { train: [...rows] };
  const held = permutation(rows.length).slice(0, testSize);
  const isHeld = new Set(held);
  return { train: rows.filter((_, i) => !isHeld.has(i)), test: held.map((i) => rows[i]) };
}
