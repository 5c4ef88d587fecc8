// LongBench v2 (THUDM/LongBench-v2 layout: _id, domain, sub_domain, question, choice_A..choice_D,
// answer, context; the single split "train"), as the reference's _longbench.py: the whole context
// in one user message (no truncation: the model's context window is the limit), the lettered
// choices, and the last standalone A-D in the response's last 300 characters. A row without
// choices (or whose answer is not a letter) is graded open-ended: the answer as a whole word,
// case-insensitive, anywhere in the response. Accuracy per domain too. `limit` takes the first rows
// of the HF shuffle with seed 42, as the reference's limit_dataset(shuffle_seed=42).
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { formatMcqChoices } from './extract.js';
import { exampleId } from './gsm8k.js';
import { escapeRegex, pyStr, pyStrip, pyTail, pyWordBoundaryRegex } from './py-text.js';
import { buildMessages, type ExampleResult, type Suite } from './types.js';

interface LongbenchTarget {
  expected: string;
  mcq: boolean;
}

const LETTERS = ['A', 'B', 'C', 'D'] as const;

function textField(row: Record<string, unknown>, keys: string[], at: string): string {
  const key = keys.find((k) => k in row) ?? keys[0]!;
  const v = row[key];
  if (typeof v !== 'string' || v === '') throw new DataFormatError(`${at}: "${key}" must be a non-empty string`);
  return v;
}

export function longbenchPrompt(context: string, question: string, choices: string[]): string {
  const head = `Read the following text carefully, then answer the question.\n\n--- TEXT ---\n${context}\n--- END TEXT ---\n\nQuestion: ${question}\n\n`;
  return choices.length > 0 ? `${head}${formatMcqChoices(choices)}\n\nAnswer with just the letter (A, B, C, or D).` : `${head}Give a concise answer.`;
}

/** The reference's grading: the last standalone A-D of the last 300 characters, or the answer as a whole word. */
export function gradeLongbench(response: string, target: LongbenchTarget): { correct: boolean; extracted: string } {
  if (target.mcq) {
    const letters = [...pyTail(response, 300).matchAll(pyWordBoundaryRegex('([A-D])', 'g'))].map((m) => m[1]!);
    const extracted = letters[letters.length - 1] ?? '';
    return { correct: extracted === target.expected, extracted };
  }
  const extracted = [...pyStrip(response)].slice(0, 200).join('');
  const pattern = pyWordBoundaryRegex(escapeRegex(pyStrip(target.expected)), 'i');
  return { correct: pattern.test(response), extracted };
}

export const longbench: Suite = {
  name: 'longbench',
  description: 'LongBench v2: multiple choice (A-D) over long contexts; accuracy per domain too',
  dataset: { hubId: 'THUDM/LongBench-v2', name: null, split: 'train' },
  sample: 'longbench',
  limitPick: { kind: 'hf_shuffle', seed: 42 },
  parseRow(row, at, systemPrompt) {
    if (systemPrompt) throw new ConfigurationError('system_prompt: longbench sends the text and question alone (the reference’s LongBenchEnv takes no system prompt); leave it unset');
    const context = textField(row, ['context'], at);
    const question = textField(row, ['question', 'input'], at);
    const choices: string[] = [];
    for (const letter of LETTERS) {
      const choice = row[`choice_${letter}`];
      if (choice === undefined || choice === null || choice === '') continue;
      if (typeof choice !== 'string') throw new DataFormatError(`${at}: "choice_${letter}" must be a string`);
      choices.push(choice);
    }
    const expected = pyStrip(pyStr(row.answer ?? '')).toUpperCase();
    const mcq = choices.length > 0 && (LETTERS as readonly string[]).includes(expected);
    const domain = 'domain' in row ? row.domain : 'dataset' in row ? row.dataset : 'unknown';
    return {
      id: exampleId('longbench', question),
      messages: buildMessages(longbenchPrompt(context, question, choices), systemPrompt),
      target: { expected, mcq } satisfies LongbenchTarget,
      ...(typeof domain === 'string' ? { group: domain } : {}),
    };
  },
  grade: (response, item) => gradeLongbench(response, item.target as LongbenchTarget),
  expected: (item) => (item.target as LongbenchTarget).expected,
  aggregate(results: readonly ExampleResult[]) {
    const byDomain = new Map<string, { n: number; correct: number }>();
    for (const r of results) {
      if (r.group === undefined) continue;
      const s = byDomain.get(r.group) ?? { n: 0, correct: 0 };
      s.n++;
      if (r.correct) s.correct++;
      byDomain.set(r.group, s);
    }
    return Object.fromEntries([...byDomain.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([d, v]) => [`${d}/accuracy`, v.correct / v.n]));
  },
};
