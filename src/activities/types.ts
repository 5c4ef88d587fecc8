// The contract between workflows and activities. Everything here crosses Temporal as a payload, so
// it holds references and small summaries only: no token arrays, logprobs or weights (DESIGN §3.3).
import type { CheckpointRow, FailoverRow, RunRef } from '../cookbook/run-store.js';
import type { OffPolicyDistillActivities } from './distill-off-policy.js';
import type { DecisionsActivities } from './decisions.js';
import type { RLPlan, RLStreamFinishInput, RLStreamSubstepInput, RLStreamSubstepResult, RLTrainInput, RLTrainResult, RolloutGroupInput, RolloutGroupResult } from './rl.js';
import type { CustomEvalInput } from './evaluators.js';
import type { DPOFinishInput, DPOPlan, DPOReferenceAheadInput, DPOStepInput, DPOStepResult, DPOSubmitResult, DPOSubmitted, ReferenceSource } from './dpo.js';

export type { RLPlan, RLStreamFinishInput, RLStreamSubstepInput, RLStreamSubstepResult, RLTrainInput, RLTrainResult, RolloutGroupInput, RolloutGroupResult };
import type { DistillPlan, DistillRolloutInput, DistillRolloutResult, DistillTrainInput, DistillTrainResult, TeacherMergeResult, TeacherSamplePlan, TeacherShardResult } from './distill.js';
export type { DistillPlan, DistillRolloutInput, DistillRolloutResult, DistillTrainInput, DistillTrainResult, TeacherMergeResult, TeacherSamplePlan, TeacherShardResult };
import type { SDFTPlan, SDFTRolloutInput, SDFTRolloutResult, SDFTTeacherInput, SDFTTeacherResult, SDFTTrainInput, SDFTTrainResult } from './sdft.js';
export type { SDFTPlan, SDFTRolloutInput, SDFTRolloutResult, SDFTTeacherInput, SDFTTeacherResult, SDFTTrainInput, SDFTTrainResult };
export type { DPOFinishInput, DPOPlan, DPOReferenceAheadInput, DPOStepInput, DPOStepResult, DPOSubmitResult, DPOSubmitted, ReferenceSource };
export type { CustomEvalInput };

/** A training model on the backend and the next sequence id the workflow will hand out for it. */
export interface ModelRef {
  modelId: string;
  nextSeqId: number;
  /**
   * Its server neither orders nor deduplicates by seq_id (seq-guarantees.ts): one training request
   * in flight at a time, and a retried step restores instead of resending (activities/unsequenced.ts).
   * Absent: it does both (and in histories recorded before servers were told apart).
   */
  seqIdIgnored?: boolean;
}

/** Every activity that talks to a training model reports how many sequence ids it consumed. */
export interface SeqUse {
  seqIdsUsed: number;
}

export type SaveKind = 'state' | 'sampler' | 'both';

export interface CreateModelInput {
  run: RunRef;
}
export interface RestoreModelInput {
  run: RunRef;
  statePath: string;
  withOptimizer: boolean;
}
export interface SaveCheckpointInput {
  run: RunRef;
  model: ModelRef;
  name: string;
  kind: SaveKind;
  ttlSeconds: number | null;
  /** checkpoints.jsonl fields besides name and paths (loop state, extras such as elapsed_tokens). */
  row: Omit<CheckpointRow, 'name' | 'state_path' | 'sampler_path'>;
  /** false: weights for samplers only, not a checkpoint row (default true). */
  record?: boolean;
  /** Saved before the run's first step (async RL's initial checkpoint): timed in no step's row, as the reference's. */
  beforeFirstStep?: boolean;
}
export interface SaveCheckpointResult extends SeqUse {
  statePath?: string;
  samplerPath?: string;
}

export interface SlPlan {
  nBatches: number;
  testSize: number;
}
export interface SlStepInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  epoch: number;
  batch: number;
  learningRate: number;
  progressDenominator: number;
  /** Metrics measured before the step (evals on the pre-step weights), merged into its row. */
  preStepMetrics: Record<string, number>;
}
/**
 * What a step's metrics row needs from the steps before it: the tokens they trained (workflow
 * state when the row is written: a pipelined step's row is written after the previous step's).
 */
export interface SlRowState {
  elapsedTokensBefore: number;
}
export interface SlStepResult extends SeqUse {
  numTokens: number;
  metrics: Record<string, number>;
}
/** A step's training requests queued on the server and not yet awaited: their request ids. */
export interface SubmittedStep {
  /** The model and the first sequence id the step used (to resubmit it if its futures are lost). */
  model: ModelRef;
  forwardBackward: string[];
  optimStep: string;
}
export interface SlSubmitResult extends SeqUse {
  submitted: SubmittedStep;
  /** Tokens the step trains (absent from histories recorded before it was returned). */
  numTokens?: number;
}
export interface SlFinishInput extends Omit<SlStepInput, 'model'>, SlRowState {
  submitted: SubmittedStep;
}
export interface SlFinishResult {
  numTokens: number;
  metrics: Record<string, number>;
}
export interface EvalInput {
  run: RunRef;
  model: ModelRef;
  step: number;
}
export interface EvalResult extends SeqUse {
  metrics: Record<string, number>;
}
/** A move of the run to another training backend (its config's `failover`). */
export type FailoverRecord = FailoverRow;

export interface LogMetricsInput {
  run: RunRef;
  step: number;
  metrics: Record<string, number>;
}

export interface Activities extends OffPolicyDistillActivities, DecisionsActivities {
  initRun(input: { run: RunRef; config: unknown }): Promise<void>;
  createModel(input: CreateModelInput): Promise<ModelRef>;
  restoreModel(input: RestoreModelInput): Promise<ModelRef>;
  saveCheckpoint(input: SaveCheckpointInput): Promise<SaveCheckpointResult>;
  /** Deletes a checkpoint on the backend (a superseded rolling one); one already gone is fine. */
  deleteCheckpoint(input: { run: RunRef; statePath: string }): Promise<void>;
  logMetrics(input: LogMetricsInput): Promise<void>;
  /** After a restore: forget metrics rows of steps the restored model no longer contains. */
  rollBackMetrics(input: { run: RunRef; fromStep: number }): Promise<void>;
  /** The run's failovers so far, all of them (failovers.json in the run directory). */
  recordFailovers(input: { run: RunRef; failovers: FailoverRecord[] }): Promise<void>;
  slPrepare(input: { run: RunRef }): Promise<SlPlan>;
  slStep(input: SlStepInput & SlRowState): Promise<SlStepResult>;
  slSubmit(input: SlStepInput): Promise<SlSubmitResult>;
  slFinish(input: SlFinishInput): Promise<SlFinishResult>;
  slEval(input: EvalInput): Promise<EvalResult>;
  rlPrepare(input: { run: RunRef }): Promise<RLPlan>;
  rlRolloutGroup(input: RolloutGroupInput): Promise<RolloutGroupResult>;
  rlTrain(input: RLTrainInput): Promise<RLTrainResult>;
  /** A streaming step's substep, trained while the step's later groups still sample. */
  rlStreamSubstep(input: RLStreamSubstepInput): Promise<RLStreamSubstepResult>;
  /** A streaming step's sampler save and metrics row, after its last substep. */
  rlStreamFinish(input: RLStreamFinishInput): Promise<RLTrainResult>;
  rlEval(input: { run: RunRef; step: number; samplerPath: string }): Promise<{ metrics: Record<string, number> }>;
  /** One custom sampling evaluator of the run's `evaluators` on a sampler (§7.5). */
  customSamplingEval(input: CustomEvalInput): Promise<{ metrics: Record<string, number> }>;
  distillPrepare(input: { run: RunRef }): Promise<DistillPlan>;
  distillRolloutGroup(input: DistillRolloutInput): Promise<DistillRolloutResult>;
  distillTrain(input: DistillTrainInput): Promise<DistillTrainResult>;
  teacherSamplePlan(input: { run: RunRef }): Promise<TeacherSamplePlan>;
  teacherSampleShard(input: { run: RunRef; shard: number }): Promise<TeacherShardResult>;
  teacherSampleMerge(input: { run: RunRef; nShards: number }): Promise<TeacherMergeResult>;
  sdftPrepare(input: { run: RunRef }): Promise<SDFTPlan>;
  sdftRolloutGroup(input: SDFTRolloutInput): Promise<SDFTRolloutResult>;
  sdftTeacherGroup(input: SDFTTeacherInput): Promise<SDFTTeacherResult>;
  sdftTrain(input: SDFTTrainInput): Promise<SDFTTrainResult>;
  dpoPrepare(input: { run: RunRef }): Promise<DPOPlan>;
  dpoStep(input: DPOStepInput): Promise<DPOStepResult>;
  dpoSubmit(input: DPOStepInput): Promise<DPOSubmitResult>;
  dpoFinish(input: DPOFinishInput): Promise<DPOStepResult>;
  dpoReferenceAhead(input: DPOReferenceAheadInput): Promise<void>;
  dpoEval(input: EvalInput): Promise<EvalResult>;
}

/**
 * ApplicationFailure types activities raise. `ModelLost` means the backend no longer knows the
 * model (engine restart): the workflow restores the last committed checkpoint and replays.
 * `CheckpointDamaged` (from restoreModel) means that checkpoint's files on the backend no longer
 * match the checksums recorded when it was saved: it can never be restored, an older one may.
 * `CheckpointExpired` (from restoreModel): its TTL ran out and the engine deleted it; likewise.
 * `RunStoreDamagedError` is the name of run-store.ts's error for a damaged run-directory file
 * (a thrown error's class name is its failure type), so those fail without retries too.
 * The others are permanent: retrying cannot help, so the run fails with the message.
 */
export const ErrorTypes = {
  modelLost: 'ModelLost',
  data: 'DataError',
  config: 'ConfigError',
  invalidRequest: 'InvalidRequest',
  seqConflict: 'SeqConflict',
  nonFiniteLoss: 'NonFiniteLoss',
  auth: 'AuthError',
  rollout: 'RolloutFailed',
  checkpointDamaged: 'CheckpointDamaged',
  checkpointExpired: 'CheckpointExpired',
  runStoreDamaged: 'RunStoreDamagedError',
  /** The training backend stopped answering for the run's `failover.after_s`: move to the next one. */
  backendLost: 'TrainingBackendLost',
  /**
   * A training step was retried on a server that ignores seq_id: whether its first attempt's
   * requests were applied is unknown, so the run restores its last checkpoint (as for ModelLost).
   */
  stepOutcomeUnknown: 'StepOutcomeUnknown',
} as const;

export const NON_RETRYABLE_ERROR_TYPES = Object.values(ErrorTypes);
