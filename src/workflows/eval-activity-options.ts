// The activity options of both eval workflows (a suite's chunks, an Inspect task's run): a chunked
// run's options, with the eval config's `max_attempts` as Temporal's maximum attempts, so an
// activity that fails retryably every time ends the eval as failed, its last error the cause.
import type { ActivityOptions } from '@temporalio/workflow';
import { chunkActivityOptions } from './shared/lanes.js';

export interface EvalRetrySettings {
  durability: { step_timeout_s: number; heartbeat_timeout_s: number };
  /** Absent in the configs of evals started before the field existed: they retried without limit, and replay so. */
  max_attempts?: number;
}

export function evalActivityOptions(config: EvalRetrySettings): ActivityOptions {
  const options = chunkActivityOptions(config.durability);
  if (config.max_attempts === undefined) return options;
  return { ...options, retry: { ...options.retry, maximumAttempts: config.max_attempts } };
}
