// The activity of a scheduled evaluation's firing: the run's sampler checkpoints (checkpoints.jsonl,
// expired ones left out) times the benchmarks, less those whose results.json is written, each with
// its eval config resolved as `cookbook eval <sampler path> <benchmark>` would, into the checkpoint's
// folder under the run. A pair whose folder an earlier firing claimed keeps that firing's config.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { resolveEval } from '../cookbook/eval/resolve-eval.js';
import { rowExpired } from '../cookbook/checkpoint-expiry.js';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { checkpointStep, scheduledEvalDir, scheduledEvalId, type EvalScheduleInput } from '../cookbook/eval/scheduled.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { readRunConfig } from './run-config.js';
import { ErrorTypes } from './types.js';
import { mountNestedRuns } from '../cookbook/stores/mirror.js';

export interface PendingEval {
  checkpoint: string;
  /** The step whose weights the checkpoint holds (checkpointStep); null when its row does not say. */
  step: number | null;
  benchmark: string;
  workflowId: string;
  run: RunRef;
  config: EvalConfig;
}

/** A stretch of the run's (checkpoint, benchmark) pairs, in checkpoints.jsonl order then benchmark order. */
export interface PendingBatch {
  pending: PendingEval[];
  /** Pairs of the stretch whose results.json is written. */
  done: number;
  /** Where the next stretch starts. */
  next: number;
  /** No pairs after this stretch. */
  end: boolean;
}

export interface EvalScheduleActivities {
  /** From pair `from` on, the pairs not evaluated yet, at most `max` of them (their configs travel in the history). */
  evalSchedulePending(input: EvalScheduleInput & { from: number; max: number }): Promise<PendingBatch>;
}

export function evalScheduleActivities(): EvalScheduleActivities {
  return {
    async evalSchedulePending({ logPath, benchmarks, set, from, max }) {
      let runId: string;
      try {
        runId = new RunStore(logPath).read().workflowId;
      } catch (err) {
        throw ApplicationFailure.nonRetryable(`${logPath}: ${(err as Error).message}`, ErrorTypes.config);
      }
      const rows = new RunStore(logPath).readCheckpoints().filter((r) => typeof r.sampler_path === 'string' && !rowExpired(r));
      // A run in an object store: its evals so far (runs nested in it) are read from the store.
      await mountNestedRuns(logPath);
      const pairs = rows.flatMap((row) => benchmarks.map((benchmark) => ({ row, benchmark })));
      const pending: PendingEval[] = [];
      let done = 0;
      let next = from;
      for (; next < pairs.length && pending.length < max; next++) {
        const { row, benchmark } = pairs[next]!;
        const dir = scheduledEvalDir(logPath, row.name, benchmark);
        if (existsSync(join(dir, 'results.json'))) {
          done++;
          continue;
        }
        const workflowId = scheduledEvalId(runId, row.name, benchmark);
        const run: RunRef = { workflowId, kind: 'eval', logPath: dir };
        let config: EvalConfig;
        try {
          config = existsSync(join(dir, '.cookbook', 'run.json'))
            ? readRunConfig<EvalConfig>(run)
            : resolveEval(row.sampler_path!, benchmark, { set: [...set, `log_path=${dir}`] }, { workflowId }).config;
        } catch (err) {
          throw ApplicationFailure.nonRetryable(`eval of checkpoint "${row.name}" on ${benchmark}: ${(err as Error).message}`, ErrorTypes.config);
        }
        pending.push({ checkpoint: row.name, step: checkpointStep(row), benchmark, workflowId, run, config });
      }
      return { pending, done, next, end: next >= pairs.length };
    },
  };
}
