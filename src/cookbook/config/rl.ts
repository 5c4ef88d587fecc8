// The RL config: the reference's `rl/train.py::Config` fields and defaults (cookbook-spec §2.7),
// with `dataset` standing in for `dataset_builder`. The learning rate is constant in RL and Adam
// is fixed at (0.9, 0.95, 1e-8), as in the reference.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { RLDatasetConfigSchema } from '../rl/datasets.js';
import { RolloutHooksConfigSchema, rolloutHookArgsIssue, rolloutHookNames } from '../rl/rollout-hooks.js';
import { ParseErrorPolicySchema, RolloutLimitsSchema, TerminationRewardPolicySchema } from '../rl/rollout-limits.js';
import { CommonTrainingFields, SamplerPoolSchema } from './common.js';

// `per_rollout_timeout` (seconds) is the reference's RetryOnFailure / MinViableGroup field: a
// rollout past it is abandoned and counts as a failed rollout (`rollout_errors/TimeoutError`),
// retried on a fresh env while the strategy's budget allows. RetryOnFailure's 0 and
// MinViableGroup's null mean no deadline, as there.
const StrategySchema = z.union([
  z.strictObject({ kind: z.literal('fail_fast') }),
  z.strictObject({
    kind: z.literal('retry_on_failure'),
    max_retries: z.int().nonnegative().default(3),
    per_rollout_timeout: z.number().nonnegative().default(0),
  }),
  z.strictObject({
    kind: z.literal('min_viable_group'),
    min_successful: z.int().positive().nullable().default(null),
    max_retries: z.int().nonnegative().default(3),
    per_rollout_timeout: z.number().positive().nullable().default(null),
  }),
]);

export const KlReferenceSchema = z.strictObject({
  base_model: z.string().min(1),
  /** Sampler weights (`tinker://…/sampler_weights/…`) to use instead of the base model. */
  load_checkpoint_path: z.string().nullable().default(null),
});


/** Train on minibatches of a batch's groups (§2.9 streaming): `num_minibatches` forward_backward per optimizer substep. */
export const StreamMinibatchConfigSchema = z.strictObject({
  groups_per_batch: z.int().positive(),
  num_minibatches: z.int().positive(),
});

/**
 * The Tinker service's policy losses. `stable_reinforce` (the reference's default for async RL and
 * math_rl) trains on stability information the server records at sampling time, referenced by
 * provenance spans on every datum: the cookbook samples with record_stability_info and sends the
 * spans (hosted Tinker serves it); its objective is not published, so the local engine refuses it.
 */
export const RLLossSchema = z.enum(['importance_sampling', 'ppo', 'cispo', 'dro', 'gspo', 'stable_reinforce']);

/**
 * Async (off-policy) training, as 0.6.1's AsyncConfig: async runs train with `loss_fn` here, not
 * the config's own (default `stable_reinforce`, which stays stable on off-policy data; the local
 * engine does not serve it, so runs on it name another, e.g. `ppo` or `importance_sampling`).
 */
export const AsyncConfigSchema = z.strictObject({
  max_steps_off_policy: z.int().nonnegative(),
  groups_per_batch: z.int().positive(),
  loss_fn: RLLossSchema.default('stable_reinforce'),
});

/**
 * The loss a run trains with (0.6.1's Config.training_loss_fn): the async config's for async runs.
 * Configs stored before AsyncConfig had a loss trained with the config's own.
 */
export function trainingLossFn(cfg: { loss_fn: RLLoss; async_config: { loss_fn?: RLLoss } | null }): RLLoss {
  return cfg.async_config?.loss_fn ?? cfg.loss_fn;
}

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
    loss_fn: RLLossSchema.default('importance_sampling'),
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
    /** Budgets of every rollout (rl/rollout_limits.py RolloutLimits); null: the env's own, else unlimited. */
    rollout_limits: RolloutLimitsSchema.nullable().default(null),
    /** Parse failures of the policy's message (rollout_limits.py ParseErrorPolicy); null: one-shot semantics. */
    parse_errors: ParseErrorPolicySchema.nullable().default(null),
    /** A registered rollout hook by name (rl/rollout-hooks.ts), e.g. {"name": "nudge_on_length"}; null: none. */
    rollout_hooks: RolloutHooksConfigSchema.nullable().default(null),
    /** Grade-then-clamp for limit-stopped rollouts; null: the model's default (agentic for Inkling). */
    termination: TerminationRewardPolicySchema.nullable().default(null),
    stream_minibatch_config: StreamMinibatchConfigSchema.nullable().default(null),
    /** Passes over the dataset: step i trains on batch i mod len(dataset) (the reference's EpochCycledRLDataset). */
    num_epochs: z.int().positive().default(1),
    /** Engines rollouts and evals sample on, beside `base_url` (null: sample on `base_url`). */
    sampler_pool: SamplerPoolSchema.nullable().default(null),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.kl_penalty_coef > 0 && !cfg.kl_reference_config) {
      ctx.addIssue({ code: 'custom', path: ['kl_reference_config'], message: 'required when kl_penalty_coef > 0' });
    }
    if (cfg.rollout_hooks && !rolloutHookNames().includes(cfg.rollout_hooks.name)) {
      ctx.addIssue({ code: 'custom', path: ['rollout_hooks', 'name'], message: `unknown rollout hook '${cfg.rollout_hooks.name}' (registered: ${rolloutHookNames().join(', ')})` });
    } else if (cfg.rollout_hooks) {
      const bad = rolloutHookArgsIssue(cfg.rollout_hooks);
      if (bad) ctx.addIssue({ code: 'custom', path: ['rollout_hooks', 'args', ...bad.path], message: bad.message });
    }
    if (cfg.async_config && cfg.loss_fn !== 'importance_sampling' && cfg.loss_fn !== cfg.async_config.loss_fn) {
      // As 0.6.1's main(): the config's own loss would be silently ignored.
      ctx.addIssue({
        code: 'custom',
        path: ['loss_fn'],
        message: `loss_fn='${cfg.loss_fn}' conflicts with async_config.loss_fn='${cfg.async_config.loss_fn}'; async runs train with async_config.loss_fn, so set the loss there`,
      });
    }
    if (cfg.sampler_pool && trainingLossFn(cfg) === 'stable_reinforce') {
      // Its stability records stay on the engine that sampled; the trainer must be that engine.
      ctx.addIssue({ code: 'custom', path: ['sampler_pool'], message: 'stable_reinforce trains on what the sampling engine recorded; it cannot sample on a pool' });
    }
    // With async_config too (0.6.1): each step then trains stream_minibatch_config.groups_per_batch
    // groups, in the order their rollouts complete.
    const stream = cfg.stream_minibatch_config;
    if (stream) {
      if (stream.groups_per_batch % cfg.num_substeps !== 0) {
        ctx.addIssue({ code: 'custom', path: ['stream_minibatch_config', 'groups_per_batch'], message: `must be divisible by num_substeps (${cfg.num_substeps})` });
      } else if ((stream.groups_per_batch / cfg.num_substeps) % stream.num_minibatches !== 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['stream_minibatch_config', 'num_minibatches'],
          message: `must divide groups_per_batch / num_substeps (${stream.groups_per_batch / cfg.num_substeps})`,
        });
      }
    }
  });

export type RLConfig = z.output<typeof RLConfigSchema>;
export type RLLoss = z.output<typeof RLLossSchema>;
