// The distillation config: the reference's `distillation/train_on_policy.py::Config` fields and
// defaults (cookbook-spec §5.1), with `dataset_configs` as its list of DistillationDatasetConfig
// (`dataset` standing in for `dataset_builder`). `mode` picks the stage:
//  - 'on_policy': student rollouts scored by each dataset's teacher, reverse KL as the advantage;
//  - 'off_policy_sample': the off-policy sampling stage (§5.2 as issue 7 frames it): sample each
//    dataset's teacher on its prompts and write a conversations JSONL for a supervised run.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { PromptDatasetConfigSchema } from '../distillation/prompts.js';
import { CommonTrainingFields } from './common.js';
import { KlReferenceSchema, RLLossSchema } from './rl.js';

/** The reference's TeacherConfig(base_model, load_checkpoint_path): a base model or sampler weights. */
export const TeacherConfigSchema = KlReferenceSchema;

export const DistillationDatasetConfigSchema = z.strictObject({
  dataset: PromptDatasetConfigSchema.prefault({}),
  teacher_config: TeacherConfigSchema,
  /** Prompts (groups) this dataset contributes to each batch. */
  groups_per_batch: z.int().positive(),
});

export const OffPolicySamplingSchema = z
  .strictObject({
    /** Prompts per sampling activity; shards run in parallel and a written shard is never redone. */
    prompts_per_shard: z.int().positive().default(8),
    /** Teacher replies drawn per prompt (one conversation each). */
    samples_per_prompt: z.int().positive().default(1),
    /** Shards in flight at once. */
    max_parallel_shards: z.int().positive().default(8),
    /** The conversations file, inside log_path. */
    output_name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+\.jsonl$/, 'a file name ending in .jsonl')
      .default('teacher_conversations.jsonl'),
  })
  .prefault({});

export const DistillConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  recipe_name: z.string().default('distillation'),
  mode: z.enum(['on_policy', 'off_policy_sample']).default('on_policy'),
  dataset_configs: z.array(DistillationDatasetConfigSchema).min(1),
  max_tokens: z.int().positive(),
  temperature: z.number().positive().default(1.0),
  compute_post_kl: z.boolean().default(false),
  kl_penalty_coef: z.number().nonnegative().default(1.0),
  kl_discount_factor: z.number().min(0).max(1).default(0.0),
  /** Any loss the RL loop takes (the reference's LossFnType). */
  loss_fn: RLLossSchema.default('importance_sampling'),
  loss_fn_config: z.record(z.string(), z.number()).nullable().default(null),
  num_substeps: z.int().positive().default(1),
  eval_every: z.int().nonnegative().default(20),
  save_every: z.int().nonnegative().default(20),
  off_policy: OffPolicySamplingSchema,
  /** Custom sampling evaluators (§7.5) on the pre-update sampler every `eval_every` steps; keys under `test/`. */
  evaluators: EvaluatorsSchema,
});

export type DistillConfig = z.output<typeof DistillConfigSchema>;
export type DistillConfigInput = z.input<typeof DistillConfigSchema>;
