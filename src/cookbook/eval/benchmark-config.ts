// Config of a benchmark evaluation (`cookbook eval`) and of the `benchmark` evaluator entry of
// training configs. Sampling defaults are the reference's BenchmarkConfig (max_tokens 32768,
// temperature 0.6): set max_tokens lower for small models.
import { z } from 'zod';
import { DurabilitySchema, RunNameSchema } from '../config/common.js';
import { EvalMaxAttemptsSchema } from './max-attempts.js';
import { JudgeConfigSchema } from './judge.js';
import { EVAL_SUITE_NAMES, SUITE_NAMES, SUITES } from './suites/index.js';
import { isAgenticSuite, TerminalEvalSchema } from './suites/terminal.js';
import { TAU2_BENCH_SUITE } from './suites/tau2-data.js';

const dataFields = {
  suite: z.enum(SUITE_NAMES),
  /** The full set: a local folder or file in the public dataset's layout; null: the shipped sample. */
  data_path: z.string().min(1).nullable().default(null),
  /** Dataset config (openai/gsm8k "main", cais/mmlu "all" or a subject); null: the suite's. */
  data_name: z.string().min(1).nullable().default(null),
  data_split: z.string().min(1).nullable().default(null),
  /** The first N examples in file order; null: all (the reference's max_examples). */
  limit: z.int().positive().nullable().default(null),
  system_prompt: z.string().nullable().default(null),
  max_tokens: z.int().positive().default(32768),
  temperature: z.number().nonnegative().default(0.6),
  /** Samples per example (the reference's BenchmarkConfig.num_samples); more than 1 reports pass@k. */
  num_samples: z.int().positive().default(1),
  /** The ks of pass@k (each ≤ num_samples); null: 1, 5, 10, 25, 50, 100 up to num_samples, and num_samples (the reference's). */
  pass_at_k: z.array(z.int().positive()).min(1).nullable().default(null),
  /**
   * Rows this port cannot check (IFBench's words:start_verb) are skipped, left out of the score's
   * denominator and listed with why (num_skipped, skipped); false: such a row refuses the data.
   */
  skip_unsupported: z.boolean().default(true),
};

/** Every k of pass_at_k needs at least k samples per example. */
function checkPassAtK(cfg: { num_samples: number; pass_at_k: number[] | null }, ctx: z.RefinementCtx): void {
  cfg.pass_at_k?.forEach((k, i) => {
    if (k > cfg.num_samples) ctx.addIssue({ code: 'custom', path: ['pass_at_k', i], message: `pass@${k} needs num_samples ≥ ${k} (num_samples is ${cfg.num_samples})` });
  });
}

/** The terminal suite runs one episode per task; its settings belong to it alone. */
function checkAgentic(cfg: { suite: string; num_samples: number; terminal?: unknown }, ctx: z.RefinementCtx): void {
  if (!isAgenticSuite(cfg.suite) && cfg.terminal !== undefined) ctx.addIssue({ code: 'custom', path: ['terminal'], message: `terminal settings are for the terminal suite, not ${cfg.suite}` });
  if (isAgenticSuite(cfg.suite) && cfg.num_samples !== 1) ctx.addIssue({ code: 'custom', path: ['num_samples'], message: `the ${cfg.suite} suite runs one episode per task (num_samples 1)` });
}

// tau2_bench's judge plays its customer.
const isJudged = (suite: string) => SUITES[suite]?.judged === true || suite === TAU2_BENCH_SUITE.name;

/** A judge belongs to a judged suite (Arena-Hard); without one, the evaluated model judges itself. */
function checkJudge(cfg: { suite: string; judge?: unknown }, ctx: z.RefinementCtx): void {
  if (cfg.judge !== undefined && !isJudged(cfg.suite)) ctx.addIssue({ code: 'custom', path: ['judge'], message: `judge settings are for judged suites (${[...Object.keys(SUITES), TAU2_BENCH_SUITE.name].filter(isJudged).join(', ')}), not ${cfg.suite}` });
}

export const EvalConfigSchema = z.strictObject({
  /** A base model name (or local HF checkpoint folder) or a `tinker://…` checkpoint path. */
  model: z.string().min(1),
  ...dataFields,
  suite: z.enum(EVAL_SUITE_NAMES),
  /** The terminal suite's episodes (turns, timeouts, sandbox limits); only with suite "terminal". */
  terminal: TerminalEvalSchema.optional(),
  /** A judged suite's judge (model, endpoint, key's env var); absent: the evaluated model judges itself. */
  judge: JudgeConfigSchema.optional(),
  /** Mixed into every example's sampling seed with (suite, example index). */
  seed: z.int().nonnegative().default(0),
  /** Examples per activity: a crash redoes at most one chunk per running activity. */
  chunk_size: z.int().positive().default(16),
  /** Chunks sampled at the same time. */
  concurrency: z.int().positive().default(4),
  renderer_name: z.string().nullable().default(null),
  tokenizer_path: z.string().min(1).nullable().default(null),
  base_url: z.string().nullable().default(null),
  log_path: z.string().min(1).optional(),
  run_name: RunNameSchema,
  durability: DurabilitySchema,
  max_attempts: EvalMaxAttemptsSchema,
})
  .superRefine(checkPassAtK)
  .superRefine(checkAgentic)
  .superRefine(checkJudge);
export type EvalConfig = z.output<typeof EvalConfigSchema>;

/** A suite as an in-training evaluator: metrics `eval/<name>/score`, … (the reference's BenchmarkEvaluator). */
export const BenchmarkEvaluatorSchema = z.strictObject({
  kind: z.literal('benchmark'),
  ...dataFields,
  /** Metric prefix `eval/<name>/`; null: the suite's name. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "." and "-"')
    .nullable()
    .default(null),
  /** The reference's BenchmarkEvaluator default. */
  limit: z.int().positive().nullable().default(100),
  /** A judged suite's judge, as `cookbook eval`'s; absent: the weights being evaluated judge themselves. */
  judge: JudgeConfigSchema.optional(),
})
  .superRefine(checkPassAtK)
  .superRefine(checkJudge);
export type BenchmarkEvaluatorConfig = z.output<typeof BenchmarkEvaluatorSchema>;

export const benchmarkMetricPrefix = (e: { name: string | null; suite: string }) => `eval/${e.name ?? e.suite}`;
