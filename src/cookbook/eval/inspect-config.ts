// The config of `cookbook eval <model> --inspect <task>`: an Inspect AI task run by Inspect's own
// runner against the model behind `cookbook serve`'s OpenAI API. Sampling is pinned (temperature
// and seed go into every request), so a sample Inspect runs again after a crash asks the same.
import { z } from 'zod';
import { DurabilitySchema, RunNameSchema } from '../config/common.js';
import { EvalMaxAttemptsSchema } from './max-attempts.js';

export const InspectEvalConfigSchema = z.strictObject({
  /** A base model name or a tinker:// sampler checkpoint. */
  model: z.string().min(1),
  /** A registered Inspect task (`inspect_evals/gsm8k`, needs its package) or `path/to/task.py@task_name`. */
  task: z.string().min(1),
  /** The first N samples of the task's dataset; null: all. */
  limit: z.int().positive().nullable().default(null),
  max_tokens: z.int().positive().default(512),
  temperature: z.number().nonnegative().default(0),
  /** Sent with every generation, so the server samples the same completion for the same request. */
  seed: z.int().nonnegative().default(0),
  /** Task arguments (`-T key=value` in Inspect's CLI). */
  task_args: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  renderer_name: z.string().nullable().default(null),
  tokenizer_path: z.string().min(1).nullable().default(null),
  base_url: z.string().nullable().default(null),
  log_path: z.string().min(1).optional(),
  run_name: RunNameSchema,
  durability: DurabilitySchema,
  max_attempts: EvalMaxAttemptsSchema,
});
export type InspectEvalConfig = z.output<typeof InspectEvalConfigSchema>;

/** Per-sample and aggregate outcome of an Inspect eval, as results.json stores it. */
export interface InspectSampleResult {
  id: string | number;
  epoch: number;
  /** Each scorer's value ('C'/'I', a number, …) as Inspect logged it. */
  scores: Record<string, unknown>;
  answer: string | null;
  completion: string;
}

export interface InspectResultsFile {
  format: 'inspect_results/v1';
  task: string;
  model: string;
  base_model: string;
  /** The Inspect log (JSON) the results were read from. */
  inspect_log: string;
  sampling: { max_tokens: number; temperature: number; seed: number };
  /** `<scorer>/<metric>` → value, plus num_samples. */
  metrics: Record<string, number>;
  samples: InspectSampleResult[];
}
