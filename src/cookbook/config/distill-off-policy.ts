// Off-policy distillation with soft teacher targets: the reference's
// `distillation/train_off_policy.py::Config` fields and defaults, with `dataset_configs` as its
// list of DatasetWithTeacher (`dataset` standing in for `dataset_builder`: a supervised dataset,
// read in its file order as the reference's loop reads it, without per-epoch shuffling). One entry
// is single-teacher distillation; several are MOPD, each dataset routed to its own teacher.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { ChatDatasetConfigSchema } from '../supervised/dataset.js';
import { CommonTrainingFields } from './common.js';
import { TeacherConfigSchema } from './distill.js';

export const DatasetWithTeacherSchema = z.strictObject({
  dataset: ChatDatasetConfigSchema,
  teacher_config: TeacherConfigSchema,
  /** Relative share of each batch when several datasets are blended. */
  weight: z.number().positive().default(1.0),
});

export const OffPolicyDistillConfigSchema = z
  .strictObject({
    ...CommonTrainingFields,
    recipe_name: z.string().default('distillation_off_policy'),
    dataset_configs: z.array(DatasetWithTeacherSchema).min(1),
    /** Highest-probability teacher tokens per position used as soft targets. */
    n_teacher_targets: z.int().positive().default(20),
    /** Teacher forward passes in flight at once (per teacher here: each teacher's pass is its own activity). */
    teacher_concurrency: z.int().positive().default(64),
    /** Examples per training step, shared among the datasets by weight. */
    batch_size: z.int().positive().default(64),
    save_every: z.int().nonnegative().default(10),
    eval_every: z.int().nonnegative().default(20),
    /** Custom sampling evaluators (§7.5) on the pre-step weights every `eval_every` steps; keys under `test/`. */
    evaluators: EvaluatorsSchema,
  })
  .superRefine((cfg, ctx) => {
    if (cfg.batch_size < cfg.dataset_configs.length) {
      ctx.addIssue({ code: 'custom', path: ['batch_size'], message: `batch_size (${cfg.batch_size}) must be >= number of domains (${cfg.dataset_configs.length})` });
    }
  });

export type OffPolicyDistillConfig = z.output<typeof OffPolicyDistillConfigSchema>;
export type OffPolicyDistillConfigInput = z.input<typeof OffPolicyDistillConfigSchema>;
