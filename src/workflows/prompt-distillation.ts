// The prompt distillation data stage (the reference's create_data.py): the teacher answers the
// queries chunk by chunk — a wave of parallel chunk activities at a time, each seeded per query
// from the run seed — and the chunks are concatenated into the conversations file that the next
// (supervised) stage trains the student on. Resumable: a written chunk is never sampled again.
// Answers `stop` (finish the chunks in flight, write what is done) and `progress`.
import { allHandlersFinished, condition, proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { PromptDistillationActivities } from '../activities/prompt-distillation.js';
import type { Activities } from '../activities/types.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../activities/types.js';
import type { PromptDistillConfig } from '../cookbook/config/prompt-distill.js';
import { progressQuery, stopSignal, type RunStatus } from './shared/messages.js';
import { StatusKey, StepKey } from './shared/search-attributes.js';
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
  let status: RunStatus = 'starting';
  let stopRequested = false;
  let chunksDone = 0;
  let nChunks = 0;
  let conversations = 0;
  const publish = (s: RunStatus) => {
    status = s;
    setCurrentDetails(`${status} · prompt distillation data · chunk ${chunksDone}/${nChunks}`);
    upsertSearchAttributes([
      { key: StatusKey, value: status },
      { key: StepKey, value: chunksDone },
    ]);
  };
  setHandler(stopSignal, () => {
    stopRequested = true;
  });
  setHandler(progressQuery, () => ({
    kind: 'prompt_distill',
    model: cfg.model_name,
    status,
    step: chunksDone,
    totalSteps: nChunks,
    paused: false,
    stopRequested,
    lastMetrics: { conversations },
    hot: { lr_multiplier: 1, eval_every: cfg.eval_every, save_every: cfg.save_every },
    recoveries: 0,
    logPath: input.run.logPath,
  }));

  await acts.initRun({ run: input.run, config: cfg });
  nChunks = (await acts.promptDistillPlan({ run: input.run })).nChunks;
  publish('running');
  while (chunksDone < nChunks && !stopRequested) {
    const wave = Array.from({ length: Math.min(cfg.max_parallel_chunks, nChunks - chunksDone) }, (_, k) => chunksDone + k);
    const results = await Promise.all(wave.map((chunk) => acts.promptDistillChunk({ run: input.run, chunk })));
    conversations += results.reduce((n, r) => n + r.conversations, 0);
    chunksDone += wave.length;
    publish('running');
  }
  const merged = await acts.promptDistillMerge({ run: input.run, nChunks: chunksDone });
  const final: RunStatus = stopRequested && chunksDone < nChunks ? 'stopped' : 'completed';
  publish(final);
  await condition(allHandlersFinished);
  return {
    status: final === 'stopped' ? 'stopped' : 'completed',
    steps: chunksDone,
    lastMetrics: { conversations: merged.conversations },
    logPath: input.run.logPath,
    recoveries: 0,
    outputPath: merged.outputPath,
    conversations: merged.conversations,
    chunks: chunksDone,
  };
}
