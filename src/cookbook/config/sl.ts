// The supervised config: the reference's `supervised/train.py::Config` fields and defaults
// (cookbook-spec §1.1), with `dataset` standing in for `dataset_builder`.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { ChatDatasetConfigSchema } from '../supervised/dataset.js';
import { CommonTrainingFields, LrScheduleSchema } from './common.js';

export const SupervisedConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  recipe_name: z.string().default('sl'),
  lr_schedule: LrScheduleSchema.default('linear'),
  dataset: ChatDatasetConfigSchema,
  num_epochs: z.int().positive().default(1),
  /**
   * Steps whose training requests are queued on the server before the current step's results are
   * back (the reference's pipelining, §1.2 step 6); 0: each step is awaited before the next.
   */
  submit_ahead: z.int().nonnegative().default(1),
  /** Custom sampling evaluators (§7.5), run before the step every `eval_every` steps, on a snapshot of the weights. */
  evaluators: EvaluatorsSchema,
});

export type SupervisedConfig = z.output<typeof SupervisedConfigSchema>;
export type SupervisedConfigInput = z.input<typeof SupervisedConfigSchema>;
