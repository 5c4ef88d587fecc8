// Config pieces shared by every paradigm: the fields the reference repeats in each Config, plus
// the durability knobs that only exist because runs are Temporal workflows.
import { z } from 'zod';
import { RunCaptureSchema } from '../../capture/run-config.js';

export const LrScheduleSchema = z.enum(['linear', 'cosine', 'constant']);

export const DurabilitySchema = z
  .strictObject({
    /** How soon a killed worker's in-flight step is handed to another worker. */
    heartbeat_timeout_s: z.number().positive().default(30),
    /** Continue-as-new after this many steps in one workflow run (also when Temporal suggests it). */
    steps_per_workflow_run: z.int().positive().default(500),
    /** Worst single attempt of one step (forward_backward + optim_step) before it is retried. */
    step_timeout_s: z.number().positive().default(1800),
  })
  .prefault({});

/**
 * Sampling engines beside the training backend (`base_url`): rollouts and evals sample on them,
 * each sample request on the least busy live engine, the trainer's new sampler weights imported
 * into each before it samples from them. List the trainer's URL too to sample on it as well.
 */
export const SamplerPoolSchema = z.strictObject({
  base_urls: z.array(z.string().url()).min(1),
  /** Requests one engine serves at once for one worker. */
  max_in_flight: z.int().positive().default(8),
  /** How long an engine that failed sits out before it is tried again. */
  retry_after_s: z.number().positive().default(10),
  /** How long a sampler engine keeps the weights imported into it (one checkpoint a step). */
  import_ttl_s: z.int().positive().default(3600),
});
export type SamplerPoolConfig = z.output<typeof SamplerPoolSchema>;

/**
 * Training backends to move to when `base_url` stays unreachable: after `after_s` seconds of
 * failing requests the run goes on at the next one from its last checkpoint (mirrored into the run
 * store at every save so the lost backend is not needed to restore it), recorded in the run's
 * history and report. The next backend must accept checkpoint imports (the local engine does).
 */
export const FailoverSchema = z.strictObject({
  base_urls: z.array(z.string().url()).min(1),
  after_s: z.number().positive().default(120),
});
export type FailoverConfig = z.output<typeof FailoverSchema>;

/** Human-readable part of the workflow id `<kind>-<run_name>-<timestamp>` (optional). */
export const RunNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, "_", "." and "-"')
  .max(80)
  .optional();

/**
 * Steps whose training requests are queued on the server before the current step's results are
 * back (the reference's pipelining, cookbook §1.2 step 6); 0: each step is awaited before the next.
 */
export const SubmitAheadSchema = z.int().nonnegative().default(1);

/** A checkpoint row's token counts by kind (the reference's TokenUsage; a kind it lacks is 0). */
const TokenCount = z.int().nonnegative().default(0);
export const TokenUsageSchema = z.strictObject({ sampled: TokenCount, prefill_cached: TokenCount, prefill_uncached: TokenCount, trained: TokenCount });

/**
 * Starting from another run's checkpoint. `load_checkpoint_path` alone loads weights with a fresh
 * optimizer (the reference); with `load_checkpoint_with_optimizer` the Adam moments come too (the
 * reference's resume, `create_training_client_from_state_with_optimizer`). `continue_from`, set
 * by `cookbook continue`, also carries the position reached, so a run picks up where its parent
 * stopped.
 */
export const ContinueFromSchema = z.strictObject({
  /** The parent run's directory and its checkpoint row (checkpoints.jsonl `name`). */
  log_path: z.string().min(1),
  workflow_id: z.string().nullable().default(null),
  name: z.string().min(1),
  /** Steps the checkpoint contains: the continued run's first step. */
  next_step: z.int().nonnegative(),
  elapsed_tokens: z.int().nonnegative().default(0),
  /** RL's running token totals from the checkpoint row (its loop state), so a continued run goes on counting. */
  cumulative_tokens: TokenUsageSchema.nullable().default(null),
  discarded_tokens: TokenUsageSchema.nullable().default(null),
  /** The checkpoint row's `resume_state`: paradigm state the continued run starts with (e.g. DPO's reference weights). */
  resume_state: z.record(z.string(), z.unknown()).nullable().default(null),
});

export type ContinueFrom = z.output<typeof ContinueFromSchema>;

export const CheckpointLoadingFields = {
  load_checkpoint_with_optimizer: z.boolean().default(false),
  continue_from: ContinueFromSchema.nullable().default(null),
  /**
   * The renderer, base model, tokenizer and LoRA rank recorded with a loaded checkpoint must equal
   * this run's (an error names the key that differs); false: load anyway.
   */
  check_checkpoint_metadata: z.boolean().default(true),
};

/**
 * The reference SL loop's further periodic-checkpoint triggers (its CheckpointManager): a
 * checkpoint also once `save_every_tokens` tokens were trained since the last periodic one, or
 * `save_every_seconds` passed since it (or the run's start), measured in workflow time; 0 turns a
 * trigger off. With `async_periodic_saves` a periodic save runs while the next steps train.
 */
export const PeriodicSaveTriggerFields = {
  save_every_tokens: z.int().nonnegative().default(0),
  save_every_seconds: z.number().nonnegative().default(0),
  async_periodic_saves: z.boolean().default(false),
};

export const CommonTrainingFields = {
  /** Run directory for config.json, metrics.jsonl, checkpoints.jsonl (default runs/<workflow id>). */
  log_path: z.string().min(1).optional(),
  /** Human-readable part of the workflow id `<kind>-<run_name>-<timestamp>`. */
  run_name: RunNameSchema,
  model_name: z.string().min(1),
  load_checkpoint_path: z.string().nullable().default(null),
  /** Overrides the model's recommended renderer for every dataset (a dataset's own renderer_name must agree). */
  renderer_name: z.string().nullable().default(null),
  /** A local folder holding the model's tokenizer.json, for models whose tokenizer is not shipped. */
  tokenizer_path: z.string().min(1).nullable().default(null),
  /**
   * `YYYY-MM-DD` printed by formats whose system prompt states the date (gpt-oss). `cookbook train`
   * fixes it to the start day, so a step rebuilt after midnight renders the same tokens.
   */
  render_date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'use YYYY-MM-DD').nullable().default(null),
  lora_rank: z.int().positive().default(32),
  /** Seeds the LoRA initialisation on the server; with the data order it fixes the whole run. */
  seed: z.int().nonnegative().default(0),
  base_url: z.string().nullable().default(null),
  /**
   * The Tinker wire of the run's training requests: `json` or `proto` (protobuf, no fallback). Null:
   * the worker's TINKER_WIRE, else protobuf, falling back to JSON when the server refuses it.
   */
  wire: z.enum(['json', 'proto']).nullable().default(null),
  learning_rate: z.number().positive().default(1e-4),
  save_every: z.int().nonnegative().default(20),
  eval_every: z.int().nonnegative().default(10),
  ttl_seconds: z.int().positive().nullable().default(604800),
  adam_beta1: z.number().min(0).lt(1).default(0.9),
  adam_beta2: z.number().min(0).lt(1).default(0.95),
  adam_eps: z.number().positive().default(1e-8),
  max_steps: z.int().positive().nullable().default(null),
  /**
   * Resume-only checkpoints (state with optimizer, no sampler weights) every N steps, as the
   * reference's CheckpointManager: skipped where a periodic save falls, the previous one deleted
   * once the next is saved, and the last one once the final checkpoint is.
   */
  rolling_save_every: z.int().nonnegative().default(0),
  rolling_ttl_seconds: z.int().positive().nullable().default(7200),
  /** Weights & Biases: mirrored when set (online with WANDB_API_KEY, else WANDB_MODE=offline). */
  wandb_project: z.string().min(1).nullable().default(null),
  wandb_name: z.string().min(1).nullable().default(null),
  /** Every sample and training call recorded in a capture store (docs/capture.md): true, {dir} or {url}. */
  capture: RunCaptureSchema.optional(),
  ...CheckpointLoadingFields,
  durability: DurabilitySchema,
  failover: FailoverSchema.nullable().default(null),
};
