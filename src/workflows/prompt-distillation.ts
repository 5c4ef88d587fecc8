// The prompt distillation data stage (the reference's create_data.py): the teacher answers the
// queries chunk by chunk — a wave of parallel chunk activities at a time, each seeded per query
// from the run seed — and the chunks are concatenated into the conversations file that the next
// (supervised) stage trains the student on. Resumable: a written chunk is never sampled again.
import { proxyActivities } from '@temporalio/workflow';
import type { PromptDistillationActivities } from '../activities/prompt-distillation.js';
import type { Activities } from '../activities/types.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../activities/types.js';
import type { PromptDistillConfig } from '../cookbook/config/prompt-distill.js';
import { runShardedGeneration } from './shared/sharded-generation.js';
import type { RunInput, RunResult } from './shared/training-run.js';

export type PromptDistillInput = RunInput<PromptDistillConfig, undefined>;

export interface PromptDistillResult extends RunResult {
  /** The conversations file: a following supervised stage's `"@previous_stage"`. */
  outputPath: string;
  conversations: number;
  chunks: number;
}

export async function promptDistillWorkflow(input: PromptDistillInput): Promise<PromptDistillResult> {
  const cfg = input.config;
  const d = cfg.durability;
  const acts = proxyActivities<PromptDistillationActivities & Pick<Activities, 'initRun'>>({
    startToCloseTimeout: `${d.step_timeout_s}s`,
    heartbeatTimeout: `${d.heartbeat_timeout_s}s`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
  });
  const { done, ...result } = await runShardedGeneration(input, {
    kind: 'prompt_distill',
    label: 'prompt distillation data',
    unit: 'chunk',
    width: cfg.max_parallel_chunks,
    init: () => acts.initRun({ run: input.run, config: cfg }),
    plan: async () => (await acts.promptDistillPlan({ run: input.run })).nChunks,
    shard: (chunk) => acts.promptDistillChunk({ run: input.run, chunk }),
    merge: (nChunks) => acts.promptDistillMerge({ run: input.run, nChunks }),
  });
  return { ...result, chunks: done };
}
