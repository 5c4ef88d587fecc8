// The prompt distillation data stage (the reference's recipes/prompt_distillation/create_data.py):
// `model_name` is the teacher, which answers every query of `dataset.file_path` (one per line)
// behind the language classification prompt; the answers it gives are written as a conversations
// JSONL of bare query → answer for a supervised stage (`"@previous_stage"`) to train the student on.
import { z } from 'zod';
import { DEFAULT_ANSWER_PATTERN } from '../distillation/prompt-distillation.js';
import { CommonTrainingFields } from './common.js';

export const PROMPT_DISTILLATION_QUERIES_PATH = 'data/multilingual.txt';

const validRegex = (p: string) => {
  try {
    new RegExp(p, 'u');
    return true;
  } catch {
    return false;
  }
};

export const PromptDistillConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  recipe_name: z.string().default('dataset_prompt_distillation'),
  dataset: z
    .strictObject({
      /** Queries, one per line; default: the shipped data/multilingual.txt (the reference's example_data/multilingual.txt — XNLI sentences — is not shipped; set file_path to your copy to use it). */
      file_path: z.string().min(1).optional(),
    })
    .prefault({}),
  /** The reference's SamplingParams(max_tokens=1000, temperature=0.15). */
  max_tokens: z.int().positive().default(1000),
  temperature: z.number().nonnegative().default(0.15),
  /** Where the answer is read from the teacher's reply: its first capture group (JavaScript regex, Unicode mode). */
  answer_pattern: z.string().min(1).refine(validRegex, 'not a valid regular expression').default(DEFAULT_ANSWER_PATTERN),
  /** Queries per sampling activity; a chunk written before a crash is read back, never sampled again. */
  queries_per_chunk: z.int().positive().default(64),
  max_parallel_chunks: z.int().positive().default(4),
  /** The conversations file, inside log_path (the reference's prompt_distillation_lang.jsonl). */
  output_name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+\.jsonl$/, 'a file name ending in .jsonl')
    .default('prompt_distillation_lang.jsonl'),
});
export type PromptDistillConfig = z.output<typeof PromptDistillConfigSchema>;
