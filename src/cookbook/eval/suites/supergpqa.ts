// SuperGPQA (m-a-p/SuperGPQA, split "train"): graduate-level questions across 285 disciplines with
// four to ten options, as supergpqa.py builds them; `limit` takes the first rows of the HF shuffle
// with seed 42. Each example's group is its discipline (results only: the reference reports accuracy).
import { DataFormatError } from '../../errors.js';
import { CHOICE_GRADING, choiceItem, choicePrompt, lettersFor, optionalString, stringList } from './choice.js';
import { stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import type { Suite } from './types.js';

export const supergpqa: Suite = {
  name: 'supergpqa',
  description: 'SuperGPQA: graduate-level questions in 285 disciplines, multiple choice (4-10 options); the chosen letter must match',
  dataset: { hubId: 'm-a-p/SuperGPQA', name: null, split: 'train' },
  sample: 'supergpqa',
  limitPick: { kind: 'hf_shuffle', seed: 42 },
  parseRow(row, at, systemPrompt) {
    const question = stringField(row, 'question', at);
    const options = stringList(row, 'options', at);
    if (options.length === 0 || options.length > 26) throw new DataFormatError(`${at}: "options" must list 1 to 26 options`);
    const letter = stringField(row, 'answer_letter', at).trim().toUpperCase();
    const letters = lettersFor(options.length);
    const prompt = choicePrompt(question, options, `Think step by step, then give your final answer as a single letter (${[...letters].join(', ')}).`);
    const id = optionalString(row, 'uuid', at) || exampleId('supergpqa', question);
    return choiceItem(id, prompt, systemPrompt, { letter, letters }, optionalString(row, 'discipline', at));
  },
  ...CHOICE_GRADING,
};
