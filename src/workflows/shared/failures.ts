// What an activity failure says about the run: the model or its backend lost (recovery's
// business), a checkpoint damaged or expired (fall back to an older one).
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { ErrorTypes } from '../../activities/types.js';

export function failedWith(err: unknown, type: string): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === type;
}
/** The model is gone, or its state unknown (a retried step on a server that ignores seq_id): restore the last checkpoint. */
export const isModelLost = (err: unknown) => failedWith(err, ErrorTypes.modelLost) || failedWith(err, ErrorTypes.stepOutcomeUnknown);
export const isBackendLost = (err: unknown) => failedWith(err, ErrorTypes.backendLost);
