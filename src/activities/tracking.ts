// Experiment tracking as a sink on the run store, outside the workflows: after an activity of a
// tracked run (`wandb_project` set) completes, the worker mirrors what the run directory now holds
// (src/cookbook/tracking/sync.ts). The activity's result never depends on it: a tracking failure
// (W&B unreachable) is logged and caught up by the next sync, since the sink's cursor only moves
// once rows are stored.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RunRef } from '../cookbook/run-store.js';
import { runLogger } from '../cookbook/logging.js';
import { syncRun, type TrackingEnv } from '../cookbook/tracking/sync.js';
import { heartbeating } from './context.js';
import type { Activities } from './types.js';

/** Activities after which the run store may hold new metrics rows, config or a final checkpoint. */
const WRITES_TRACKED_FILES = new Set<string>(['initRun', 'saveCheckpoint', 'logMetrics', 'slStep', 'slFinish', 'rlTrain', 'rlStreamFinish', 'dpoStep', 'dpoFinish', 'distillTrain', 'offPolicyDistillTrain']);

const runOf = (input: unknown): RunRef | undefined => {
  const run = (input as { run?: RunRef } | undefined)?.run;
  return run && typeof run.logPath === 'string' ? run : undefined;
};

/**
 * Runs found untracked (no `wandb_project`, or W&B disabled): a run's config and the worker's
 * environment do not change, so their step activities skip re-reading the run record.
 */
const untracked = new Set<string>();

export async function syncTracking(run: RunRef, env: TrackingEnv = process.env): Promise<void> {
  const key = `${run.workflowId}\u0000${run.logPath}`;
  if (untracked.has(key) || !existsSync(join(run.logPath, '.cookbook', 'run.json'))) return;
  try {
    if (!(await syncRun(run.logPath, env))) untracked.add(key);
  } catch (err) {
    runLogger(join(run.logPath, 'logs.log'), { run: run.workflowId }).warn({ err: (err as Error).message }, 'experiment tracking sync failed; the next activity retries it');
  }
}

/** The activities, each followed by a tracking sync of its run where it wrote tracked files. */
export function withTracking(activities: Activities, env: TrackingEnv = process.env): Activities {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = WRITES_TRACKED_FILES.has(name)
      ? async (input: unknown) => {
          const result = await fn(input);
          const run = runOf(input);
          // Heartbeating: a slow W&B must not make the attempt look dead (and the step run again).
          if (run) await heartbeating(syncTracking(run, env));
          return result;
        }
      : fn;
  }
  return wrapped as unknown as Activities;
}
