// The shape both data-generation stages share (off-policy distillation's teacher sampling and
// prompt distillation's teacher answers): plan the shards, run them a wave of parallel activities
// at a time, concatenate them into one conversations file. Resumable because a shard on disk is
// never sampled again. Answers `stop` (finish the shards in flight, write what is done) and
// `progress`.
import { allHandlersFinished, condition, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { RunKind } from '../../cookbook/run-store.js';
import { progressQuery, stopSignal, type RunStatus } from './messages.js';
import { StatusKey, StepKey } from './search-attributes.js';
import type { RunInput, RunResult } from './training-run.js';

export interface ShardedGeneration {
  kind: RunKind;
  /** Shown in the Temporal UI's details, e.g. "teacher sampling · shard 3/8". */
  label: string;
  unit: string;
  /** Shards run at once. */
  width: number;
  init: () => Promise<void>;
  plan: () => Promise<number>;
  shard: (index: number) => Promise<{ conversations: number }>;
  merge: (done: number) => Promise<{ outputPath: string; conversations: number }>;
}

export interface ShardedGenerationResult extends RunResult {
  /** Absolute path of the conversations JSONL: the next (supervised) stage's data. */
  outputPath: string;
  conversations: number;
  /** Shards written (all of them unless stopped). */
  done: number;
}

export async function runShardedGeneration(
  input: RunInput<{ model_name: string; eval_every: number; save_every: number }, unknown>,
  g: ShardedGeneration,
): Promise<ShardedGenerationResult> {
  const cfg = input.config;
  let status: RunStatus = 'starting';
  let stopRequested = false;
  let done = 0;
  let total = 0;
  let conversations = 0;
  const publish = (s: RunStatus) => {
    status = s;
    setCurrentDetails(`${status} · ${g.label} · ${g.unit} ${done}/${total}`);
    upsertSearchAttributes([
      { key: StatusKey, value: status },
      { key: StepKey, value: done },
    ]);
  };
  setHandler(stopSignal, () => {
    stopRequested = true;
  });
  setHandler(progressQuery, () => ({
    kind: g.kind,
    model: cfg.model_name,
    status,
    step: done,
    totalSteps: total,
    paused: false,
    stopRequested,
    lastMetrics: { conversations },
    hot: { lr_multiplier: 1, eval_every: cfg.eval_every, save_every: cfg.save_every },
    recoveries: 0,
    logPath: input.run.logPath,
  }));

  await g.init();
  total = await g.plan();
  publish('running');
  while (done < total && !stopRequested) {
    const wave = Array.from({ length: Math.min(g.width, total - done) }, (_, k) => done + k);
    const results = await Promise.all(wave.map(g.shard));
    conversations += results.reduce((n, r) => n + r.conversations, 0);
    done += wave.length;
    publish('running');
  }
  const merged = await g.merge(done);
  const final: RunStatus = stopRequested && done < total ? 'stopped' : 'completed';
  publish(final);
  await condition(allHandlersFinished);
  return {
    status: final === 'stopped' ? 'stopped' : 'completed',
    steps: done,
    lastMetrics: { conversations: merged.conversations },
    logPath: input.run.logPath,
    recoveries: 0,
    outputPath: merged.outputPath,
    conversations: merged.conversations,
    done,
  };
}
