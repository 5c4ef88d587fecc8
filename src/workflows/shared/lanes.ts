// Chunked work in a workflow (an eval's examples, a TTS run's problems): chunk activities
// `concurrency` at a time, each lane taking the next chunk as it finishes one, so the chunks start
// in index order on every replay.
import type { ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_ERROR_TYPES } from '../../activities/types.js';

/** Runs `work(chunk)` for chunks 0 … numChunks − 1, at most `concurrency` at once. */
export async function inLanes(numChunks: number, concurrency: number, work: (chunk: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < numChunks) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, numChunks) }, lane));
}

/** The activity options of a chunked run: its durability settings, retried with backoff until a non-retryable error. */
export function chunkActivityOptions(durability: { step_timeout_s: number; heartbeat_timeout_s: number }): ActivityOptions {
  return {
    startToCloseTimeout: `${durability.step_timeout_s}s`,
    heartbeatTimeout: `${durability.heartbeat_timeout_s}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
  };
}
