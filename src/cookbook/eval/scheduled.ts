// Where scheduled evaluations of a training run live (`cookbook eval <run> --every …`): one eval
// run folder per (checkpoint, benchmark) under the training run's own folder, and one workflow id
// per (run, checkpoint, benchmark), so a schedule firing twice finds the same eval both times.
import { join } from 'node:path';

export const SCHEDULED_EVALS_DIR = 'evals';

/** A checkpoint name as a folder name (names are `000010`, `final`, …; anything else is made safe). */
const folderName = (name: string) => name.replace(/[^A-Za-z0-9_.-]+/g, '_') || '_';

export const scheduledEvalDir = (runLogPath: string, checkpoint: string, benchmark: string) => join(runLogPath, SCHEDULED_EVALS_DIR, folderName(checkpoint), benchmark);

export const scheduledEvalId = (runWorkflowId: string, checkpoint: string, benchmark: string) => `${runWorkflowId}/eval/${checkpoint}/${benchmark}`;

/**
 * The step whose weights a checkpoint row holds: the last step trained (`next_step` − 1, as the
 * periodic checkpoints' names count), else its `batch` (rows written before next_step was); null: neither.
 */
export function checkpointStep(row: { next_step?: unknown; batch?: unknown }): number | null {
  if (typeof row.next_step === 'number') return row.next_step - 1;
  return typeof row.batch === 'number' ? row.batch : null;
}

/** The input of one firing of an eval schedule: what to evaluate, and how. */
export interface EvalScheduleInput {
  /** The training run's log dir. */
  logPath: string;
  benchmarks: string[];
  /** `--set key=value` overrides of each eval's config (limit, max_tokens, …). */
  set: string[];
  /** Evals run at once. */
  concurrency: number;
  /** Pairs fetched per activity (default 16): their eval configs travel in its result. */
  perBatch?: number;
}
