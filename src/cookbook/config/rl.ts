// The RL config: the reference's `rl/train.py::Config` fields and defaults (cookbook-spec §2.7),
// with `dataset` standing in for `dataset_builder`. The learning rate is constant in RL and Adam
// is fixed at (0.9, 0.95, 1e-8), as in the reference.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { RLDatasetConfigSchema } from '../rl/datasets.js';
import { CommonTrainingFields } from './common.js';

const StrategySchema = z.union([
  z.strictObject({ kind: z.literal('fail_fast') }),
  z.strictObject({ kind: z.literal('retry_on_failure'), max_retries: z.int().nonnegative().default(3) }),
  z.strictObject({ kind: z.literal('min_viable_group'), min_successful: z.int().positive().nullable().default(null), max_retries: z.int().nonnegative().default(3) }),
]);

export const KlReferenceSchema = z.strictObject({
  base_model: z.string().min(1),
  /** Sampler weights (`tinker://…/sampler_weights/…`) to use instead of the base model. */
  load_checkpoint_path: z.string().nullable().default(null),
});

export const AsyncConfigSchema = z.strictObject({
  max_steps_off_policy: z.int().nonnegative(),
  groups_per_batch: z.int().positive(),
});

export const RLConfigSchema = z
  .strictObject({
    ...CommonTrainingFields,
    recipe_name: z.string().default('rl'),
    dataset: RLDatasetConfigSchema,
    max_tokens: z.int().positive(),
    temperature: z.number().positive().default(1.0),
    eval_every: z.int().nonnegative().default(20),
    /** Custom sampling evaluators (§7.5), run with the test set every `eval_every` steps. */
    evaluators: EvaluatorsSchema,
    loss_fn: z.enum(['importance_sampling', 'ppo', 'cispo', 'dro']).default('importance_sampling'),
    loss_fn_config: z.record(z.string(), z.number()).nullable().default(null),
    num_substeps: z.int().positive().default(1),
    kl_penalty_coef: z.number().nonnegative().default(0.0),
    kl_discount_factor: z.number().min(0).max(1).default(0.0),
    kl_reference_config: KlReferenceSchema.nullable().default(null),
    compute_post_kl: z.boolean().default(false),
    remove_constant_reward_groups: z.boolean().default(false),
    rollout_error_tolerance: z.union([z.boolean(), StrategySchema]).nullable().default(null),
    num_groups_to_log: z.int().nonnegative().default(4),
    rollout_json_export: z.boolean().default(true),
    async_config: AsyncConfigSchema.nullable().default(null),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.kl_penalty_coef > 0 && !cfg.kl_reference_config) {
      ctx.addIssue({ code: 'custom', path: ['kl_reference_config'], message: 'required when kl_penalty_coef > 0' });
    }
  });

export type RLConfig = z.output<typeof RLConfigSchema>;
