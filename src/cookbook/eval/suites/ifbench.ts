// IFBench (allenai/IFBench_test layout: key, prompt, instruction_id_list, kwargs; the single split
// "train"), as the reference's ifbench.py: the prompt alone, each instruction checked by IFBench's
// verifier (ifbench/checkers.ts); a prompt is correct when every instruction is followed. The
// score is that strict accuracy; loose_accuracy is the mean share of instructions followed. A row
// asking for an instruction this port cannot check (words:start_verb) is skipped and reported.
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { ifbenchFollows, ifbenchProblem, ifbenchUnsupported } from '../ifbench/checkers.js';
import type { Kwargs } from '../ifeval/checkers.js';
import { arrayField, stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import { buildMessages, UnsupportedRowError, type ExampleResult, type Suite } from './types.js';

interface IfbenchTarget {
  instructions: Array<{ id: string; kwargs: Kwargs }>;
}

/** The reference's parse_kwargs for one entry (JSON text, an object, else {}), its None values dropped. */
function kwargsOf(raw: unknown): Kwargs {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      value = {};
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value as Kwargs).filter(([, v]) => v !== null));
}

export const ifbench: Suite = {
  name: 'ifbench',
  description: 'IFBench: 58 new verifiable instruction types (counts, ratios, formats, …); strict and loose accuracy',
  dataset: { hubId: 'allenai/IFBench_test', name: null, split: 'train' },
  sample: 'ifbench',
  parseRow(row, at, systemPrompt) {
    if (systemPrompt) throw new ConfigurationError('system_prompt: ifbench sends the prompt alone (the reference’s IFBenchEnv takes no system prompt); leave it unset');
    const prompt = stringField(row, 'prompt', at);
    const ids = arrayField(row, 'instruction_id_list', at);
    const rawKwargs = row.kwargs === undefined || row.kwargs === null ? [] : arrayField(row, 'kwargs', at);
    const instructions = ids.map((id, i) => {
      if (typeof id !== 'string') throw new DataFormatError(`${at}: instruction_id_list[${i}] must be a string`);
      const kwargs = kwargsOf(rawKwargs[i]);
      const problem = ifbenchProblem(id, kwargs);
      if (problem) throw new DataFormatError(`${at}: ${problem}`);
      return { id, kwargs };
    });
    // Only a row that is otherwise well formed is skipped: a malformed one is refused above.
    const unsupported = [...new Set(instructions.map((ins) => ifbenchUnsupported(ins.id)).filter((why) => why !== null))];
    if (unsupported.length) throw new UnsupportedRowError(exampleId('ifbench', prompt), unsupported.join('; '));
    return { id: exampleId('ifbench', prompt), messages: buildMessages(prompt, systemPrompt), target: { instructions } satisfies IfbenchTarget };
  },
  grade(response, item) {
    const { instructions } = item.target as IfbenchTarget;
    const followed = instructions.map((ins) => ifbenchFollows(ins.id, response, ins.kwargs));
    const count = followed.filter(Boolean).length;
    return {
      correct: instructions.length > 0 && count === instructions.length,
      extracted: instructions.map((ins, i) => `${ins.id}:${followed[i] ? 'ok' : 'no'}`).join(' '),
      metrics: { fraction: instructions.length > 0 ? count / instructions.length : 0 },
    };
  },
  expected: (item) => (item.target as IfbenchTarget).instructions.map((i) => i.id).join(' '),
  aggregate(results: readonly ExampleResult[]) {
    const n = results.length;
    return {
      strict_accuracy: n > 0 ? results.filter((r) => r.correct).length / n : 0,
      loose_accuracy: n > 0 ? results.reduce((sum, r) => sum + (r.metrics?.fraction ?? 0), 0) / n : 0,
    };
  },
};
