// The run kinds a pipeline stage may have. Plain data (no Node imports) so the pipeline workflow's
// registry can be typed by it: a kind listed here without a workflow there fails the type check.
export const PIPELINE_STAGE_KINDS = ['sl', 'rl', 'dpo', 'distill', 'distill_off_policy', 'prompt_distill', 'sdft'] as const;
export type PipelineStageKind = (typeof PIPELINE_STAGE_KINDS)[number];
