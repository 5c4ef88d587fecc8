// The DPO config: the reference's `preference/train_dpo.py::Config` fields and defaults
// (cookbook-spec §4.1), with `dataset` standing in for `dataset_builder` and `reference_model`
// saying where the reference logprobs come from.
import { z } from 'zod';
import { EvaluatorsSchema } from '../eval/custom-sampling.js';
import { PreferenceDatasetConfigSchema } from '../preference/dataset.js';
import { CommonTrainingFields, LrScheduleSchema, SubmitAheadSchema } from './common.js';

export const ReferenceModelSchema = z.discriminatedUnion('kind', [
  /**
   * The reference's choice: the policy's own starting weights (the base model, or the weights of
   * `load_checkpoint_path`), frozen as sampler weights before the first step. Unlike the
   * reference, a resumed run keeps the original snapshot instead of snapshotting resumed weights.
   */
  z.strictObject({ kind: z.literal('initial') }),
  /** A base model's sampler (defaults to `model_name`). */
  z.strictObject({ kind: z.literal('base_model'), base_model: z.string().min(1).nullable().default(null) }),
  /** Saved sampler weights, `tinker://…/sampler_weights/…`. */
  z.strictObject({ kind: z.literal('sampler_path'), path: z.string().min(1) }),
]);
export type ReferenceModel = z.output<typeof ReferenceModelSchema>;

export const DPOConfigSchema = z.strictObject({
  ...CommonTrainingFields,
  recipe_name: z.string().default('dpo'),
  learning_rate: z.number().positive().default(1e-5),
  lr_schedule: LrScheduleSchema.default('linear'),
  num_epochs: z.int().positive().default(1),
  dpo_beta: z.number().positive().default(0.1),
  /** As in supervised training (the reference's DPO loop awaits every step). */
  submit_ahead: SubmitAheadSchema,
  dataset: PreferenceDatasetConfigSchema,
  reference_model: ReferenceModelSchema.default({ kind: 'initial' }),
  /** Unused, as in the reference (kept so reference configs parse). */
  reference_model_name: z.string().nullable().default(null),
  /** Custom sampling evaluators (§7.5), run with the test-set NLL on a snapshot of the pre-step weights. */
  evaluators: EvaluatorsSchema,
  /** The reference's `infrequent_evaluator_builders`: run before the step every `infrequent_eval_every` steps, on a snapshot of their own. */
  infrequent_evaluators: EvaluatorsSchema,
  infrequent_eval_every: z.int().nonnegative().default(100),
});

export type DPOConfig = z.output<typeof DPOConfigSchema>;
export type DPOConfigInput = z.input<typeof DPOConfigSchema>;
