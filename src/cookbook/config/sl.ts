// The supervised config: the reference's `supervised/train.py::Config` fields and defaults
// (cookbook-spec §1.1), with `dataset` standing in for `dataset_builder`.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { ChatDatasetConfigSchema } from '../supervised/dataset.js';
import { CommonTrainingFields, LrScheduleSchema, PeriodicSaveTriggerFields, SubmitAheadSchema } from './common.js';

export const SupervisedConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  recipe_name: z.string().default('sl'),
  lr_schedule: LrScheduleSchema.default('linear'),
  dataset: ChatDatasetConfigSchema,
  num_epochs: z.int().positive().default(1),
  submit_ahead: SubmitAheadSchema,
  /** Custom sampling evaluators (§7.5), run before the step every `eval_every` steps, on a snapshot of the weights. */
  evaluators: EvaluatorsSchema,
  /** The reference's `infrequent_evaluator_builders`: evaluators run before the step every `infrequent_eval_every` steps, on a snapshot of their own. */
  infrequent_evaluators: EvaluatorsSchema,
  infrequent_eval_every: z.int().nonnegative().default(100),
  ...PeriodicSaveTriggerFields,
});

export type SupervisedConfig = z.output<typeof SupervisedConfigSchema>;
export type SupervisedConfigInput = z.input<typeof SupervisedConfigSchema>;
