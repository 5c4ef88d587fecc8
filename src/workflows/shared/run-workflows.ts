// The workflow of each training run kind, for the workflows that start runs as children (pipeline
// stages, sweep points). Add a kind to PIPELINE_STAGE_KINDS and one line here.
import type { PipelineStageKind } from '../../cookbook/config/pipeline-kinds.js';
import { distillWorkflow } from '../distill.js';
import { offPolicyDistillWorkflow } from '../distill-off-policy.js';
import { dpoWorkflow } from '../dpo.js';
import { promptDistillWorkflow } from '../prompt-distillation.js';
import { rlWorkflow } from '../rl.js';
import { sdftWorkflow } from '../sdft.js';
import { supervisedWorkflow } from '../sl.js';
import type { RunInput, RunResult } from './training-run.js';

export type RunWorkflow = (input: RunInput<any, any>) => Promise<RunResult>;

export const RUN_WORKFLOWS: Record<PipelineStageKind, RunWorkflow> = {
  sl: supervisedWorkflow,
  rl: rlWorkflow,
  dpo: dpoWorkflow,
  distill: distillWorkflow,
  distill_off_policy: offPolicyDistillWorkflow,
  prompt_distill: promptDistillWorkflow,
  sdft: sdftWorkflow,
};
