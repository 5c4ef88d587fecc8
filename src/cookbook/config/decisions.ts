// The decisions config: the loop fields and defaults of the reference's decision-model training
// loop (recipes/decisions/forecasting.py Config: batch_size 32, learning_rate 1e-4 constant,
// epochs 1, eval_every 16, save_every 0, lora_rank 32, AdamParams' own beta/eps), with its
// Prophet Arena data replaced by decisions JSONL files (question, choices, label or target_probs).
import { z } from 'zod';
import { CommonTrainingFields } from './common.js';

/** How a step trains: cross-entropy on the correct label's token, or the Brier probability loss. */
export const DecisionLossSchema = z.enum(['cross_entropy', 'brier']);
export type DecisionLoss = z.output<typeof DecisionLossSchema>;

export const DecisionsConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  /** Training decisions (JSONL), in the order they are trained (no shuffle, as the reference's loop). */
  data_path: z.string().min(1),
  /** Held-out decisions scored from sampler snapshots (accuracy, target probability, Brier); none: no evals. */
  validation_data_path: z.string().min(1).nullable().default(null),
  /** The first N decisions of each file (null: all). */
  max_train_questions: z.int().positive().nullable().default(null),
  max_validation_questions: z.int().positive().nullable().default(null),
  batch_size: z.int().positive().default(32),
  epochs: z.int().positive().default(1),
  /**
   * null: cross_entropy when every training row gives a `label`, else brier. brier trains a
   * `label` row as probability 1 on it (as forecasting.py trains outcomes); cross_entropy needs labels.
   */
  loss_fn: DecisionLossSchema.nullable().default(null),
  /** 0 disables periodic evaluation; the start and end are always scored (with validation data). */
  eval_every: z.int().nonnegative().default(16),
  /** 0: no intermediate checkpoints; a final one is always saved. */
  save_every: z.int().nonnegative().default(0),
  /** tinker.AdamParams' defaults, which the reference's step uses. */
  adam_eps: z.number().positive().default(1e-12),
});

export type DecisionsConfig = z.output<typeof DecisionsConfigSchema>;
export type DecisionsConfigInput = z.input<typeof DecisionsConfigSchema>;
