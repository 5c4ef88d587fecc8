// IFEval (google/IFEval layout: key, prompt, instruction_id_list, kwargs; the single split "train").
// Every instruction is checked strictly and loosely (ifeval/checkers.ts); a prompt is correct when
// all its instructions are followed. Metrics are IFEval's four accuracies; the score is the
// prompt-level strict one, as the reference's.
import { DataFormatError } from '../../errors.js';
import { followsLoose, followsStrict, instructionProblem, type Kwargs } from '../ifeval/checkers.js';
import { arrayField, stringField } from './fields.js';
import { buildMessages, type ExampleResult, type Suite } from './types.js';

interface IfevalTarget {
  instructions: Array<{ id: string; kwargs: Kwargs }>;
}

/** A row's kwargs entry: an object (nulls for the fields other instructions use), JSON text, or null. */
function kwargsOf(raw: unknown, at: string, i: number): Kwargs {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new DataFormatError(`${at}: kwargs[${i}] is not valid JSON`);
    }
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new DataFormatError(`${at}: kwargs[${i}] must be an object`);
  return Object.fromEntries(Object.entries(value as Kwargs).filter(([, v]) => v !== null));
}

export const ifeval: Suite = {
  name: 'ifeval',
  description: 'verifiable instructions (word counts, formats, keywords, …); strict and loose accuracy',
  dataset: { hubId: 'google/IFEval', name: null, split: 'train' },
  sample: 'ifeval',
  parseRow(row, at, systemPrompt) {
    const prompt = stringField(row, 'prompt', at);
    const ids = arrayField(row, 'instruction_id_list', at);
    const rawKwargs = row.kwargs === undefined ? [] : arrayField(row, 'kwargs', at);
    const instructions = ids.map((id, i) => {
      if (typeof id !== 'string') throw new DataFormatError(`${at}: instruction_id_list[${i}] must be a string`);
      const kwargs = kwargsOf(rawKwargs[i], at, i);
      const problem = instructionProblem(id.trim(), kwargs);
      if (problem) throw new DataFormatError(`${at}: ${problem}`);
      return { id: id.trim(), kwargs };
    });
    if (instructions.length === 0) throw new DataFormatError(`${at}: "instruction_id_list" is empty`);
    const key = row.key ?? at;
    return { id: `ifeval_${String(key)}`, messages: buildMessages(prompt, systemPrompt), target: { instructions } satisfies IfevalTarget };
  },
  grade(response, item) {
    const { instructions } = item.target as IfevalTarget;
    const strict = instructions.map((ins) => followsStrict(ins.id, response, ins.kwargs));
    const loose = instructions.map((ins) => followsLoose(ins.id, response, ins.kwargs));
    const count = (xs: boolean[]) => xs.filter(Boolean).length;
    return {
      correct: strict.every(Boolean),
      extracted: instructions.map((ins, i) => `${ins.id}:${strict[i] ? 'ok' : loose[i] ? 'loose' : 'no'}`).join(' '),
      metrics: { instructions: instructions.length, strict_followed: count(strict), loose_followed: count(loose) },
    };
  },
  expected: (item) => (item.target as IfevalTarget).instructions.map((i) => i.id).join(' '),
  aggregate(results: readonly ExampleResult[]) {
    const n = results.length;
    const m = (r: ExampleResult, k: string) => r.metrics?.[k] ?? 0;
    const instructions = results.reduce((s, r) => s + m(r, 'instructions'), 0);
    const share = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
    return {
      prompt_level_strict_acc: share(results.filter((r) => m(r, 'strict_followed') === m(r, 'instructions')).length, n),
      prompt_level_loose_acc: share(results.filter((r) => m(r, 'loose_followed') === m(r, 'instructions')).length, n),
      inst_level_strict_acc: share(results.reduce((s, r) => s + m(r, 'strict_followed'), 0), instructions),
      inst_level_loose_acc: share(results.reduce((s, r) => s + m(r, 'loose_followed'), 0), instructions),
    };
  },
};
