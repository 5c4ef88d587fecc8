// Config of a True-Thinking Score run (`cookbook tts`): the reference's analyze.py CLIConfig
// (model, dataset, n_problems → limit, max_tokens 4096, seed 42) plus what a durable run adds. CoTs
// are sampled greedily as the reference's (temperature 0); the sampling seed of problem i is fixed by
// (seed, i), so a chunk sampled again after a crash, at any temperature, gives the same CoT.
import { z } from 'zod';
import { DurabilitySchema, RunNameSchema } from '../config/common.js';
import { TTS_DATASETS } from './problems.js';

export const TtsConfigSchema = z.strictObject({
  /** A base model name (or local HF checkpoint folder) or a `tinker://…` checkpoint path. */
  model: z.string().min(1),
  dataset: z.enum(TTS_DATASETS).default('problems'),
  /** A JSONL file in the dataset's row format; null: the shipped file. */
  data_path: z.string().min(1).nullable().default(null),
  /** The first N problems (after the shuffle of math/gsm8k); null: all (the reference's n_problems). */
  limit: z.int().positive().nullable().default(null),
  max_tokens: z.int().positive().default(4096),
  temperature: z.number().nonnegative().default(0.0),
  /** The perturbations' random.Random seed (one generator per CoT, as the reference) and the problems' shuffle. */
  seed: z.int().nonnegative().default(42),
  /** Problems per activity: a crash redoes at most one chunk per running activity. */
  chunk_size: z.int().positive().default(1),
  /** Chunks scored at the same time (the reference's concurrency counts problems). */
  concurrency: z.int().positive().default(4),
  renderer_name: z.string().nullable().default(null),
  tokenizer_path: z.string().min(1).nullable().default(null),
  base_url: z.string().nullable().default(null),
  log_path: z.string().min(1).optional(),
  run_name: RunNameSchema,
  durability: DurabilitySchema,
});
export type TtsConfig = z.output<typeof TtsConfigSchema>;
