// The SDFT config: the reference's distillation/sdft.py::Config fields and defaults, with the
// recipe CLI's dataset choice (recipes/sdft/train.py: dataset, groups_per_batch, group_size,
// sciknoweval_domain) as `dataset`, one of its builders with their field names.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { DEFAULT_DEMO_TEMPLATE } from '../distillation/sdft.js';
import { SDFTDatasetSchema } from '../distillation/sdft-data.js';
import { CommonTrainingFields } from './common.js';

export const SDFTConfigSchema = z
  .strictObject({
    ...CommonTrainingFields,
    recipe_name: z.string().default('recipe_sdft'),
    lora_rank: z.int().positive().default(128),
    learning_rate: z.number().positive().default(2e-5),
    max_tokens: z.int().positive().default(2048),
    temperature: z.number().nonnegative().default(1.0),
    /** The loss of the importance-sampling mode (`topk = 0`); the top-K modes train with cross_entropy / the reverse-KL custom loss. */
    loss_fn: z.enum(['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro']).default('cross_entropy'),
    loss_fn_config: z.record(z.string(), z.number()).nullable().default(null),
    /** Teacher tokens per position (0: per-token importance sampling with teacher_lp − student_lp). */
    topk: z.int().nonnegative().default(20),
    /** Analytical reverse KL over the teacher's top-K (needs topk > 0). */
    reverse: z.boolean().default(false),
    demo_template: z.string().default(DEFAULT_DEMO_TEMPLATE),
    system_prompt: z.string().nullable().default(null),
    /** Copy the student's weights into the teacher every N steps (null: a frozen teacher). */
    teacher_sync_every: z.int().positive().nullable().default(null),
    max_context_length: z.int().positive().default(32768),
    eval_every: z.int().nonnegative().default(20),
    save_every: z.int().nonnegative().default(20),
    num_substeps: z.int().positive().default(1),
    session_name: z.string().nullable().default(null),
    enable_trace: z.boolean().default(false),
    span_chart_every: z.int().nonnegative().default(0),
    dataset: SDFTDatasetSchema,
    /** The reference's evaluator_builders: custom sampling evaluators (graders sdft_science / sdft_tooluse for the recipe's evals). */
    evaluators: EvaluatorsSchema,
  })
  .superRefine((cfg, ctx) => {
    if (cfg.reverse && cfg.topk === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['reverse'],
        message: "reverse=true requires topk>0: the analytical reverse KL runs over the teacher's top-K set, which doesn't exist when topk=0",
      });
    }
  });

export type SDFTConfig = z.output<typeof SDFTConfigSchema>;
export type SDFTConfigInput = z.input<typeof SDFTConfigSchema>;
