// The workflow bundle's entry point: every workflow type the worker registers.
export { supervisedWorkflow } from './sl.js';
export { rlWorkflow } from './rl.js';
export { dpoWorkflow } from './dpo.js';
export { decisionsWorkflow } from './decisions.js';
export { distillWorkflow, teacherSamplingWorkflow } from './distill.js';
export { offPolicyDistillWorkflow } from './distill-off-policy.js';
export { pipelineWorkflow } from './pipeline.js';
export { sweepWorkflow } from './sweep.js';
export { evalWorkflow } from './eval.js';
export { evalInspectWorkflow } from './eval-inspect.js';
export { ttsWorkflow } from './tts.js';
export { promptDistillWorkflow } from './prompt-distillation.js';
export { sdftWorkflow } from './sdft.js';
export { evalScheduleWorkflow } from './eval-schedule.js';
