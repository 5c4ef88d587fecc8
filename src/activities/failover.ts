// Failover between training backends (a run's `failover`), the activity side:
// - an activity of such a run whose training backend keeps failing to answer for `after_s` gives
//   up with BackendLostError, failure type TrainingBackendLost (not retried), which the workflow answers by moving the run to the
//   next backend (workflows/shared/training-run.ts);
// - every checkpoint's state is mirrored into the run store when it is saved, so the next backend
//   can be given the last checkpoint although the backend that saved it is gone;
// - a restore on a backend that lacks the checkpoint imports the mirrored archive first.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { RetryInfo } from '../backends/config.js';
import { BackendError, BackendLostError, type CheckpointTransfer, type TrainingBackend } from '../backends/types.js';
import { parseTinkerPath } from '../backends/tinker-backend.js';
import type { FailoverConfig } from '../cookbook/config/common.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { readRunConfig } from './run-config.js';
import { ErrorTypes } from './types.js';

/** The failover limit of each running activity of a run that has one. */
const limits = new WeakMap<Context, number>();

/** Wraps every activity: one whose input names a run with `failover` gets its limit. */
export function withFailover<A extends object>(activities: A): A {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = (input: unknown) => {
      const run = (input as { run?: RunRef } | undefined)?.run;
      const failover = run?.logPath ? failoverOf(run) : undefined;
      if (failover) limits.set(Context.current(), failover.after_s * 1000);
      return fn(input);
    };
  }
  return wrapped as A;
}

/** Each run's `failover`, read once: a run's config never changes, and every activity asks. */
const failovers = new Map<string, FailoverConfig | null>();

function failoverOf(run: RunRef): FailoverConfig | undefined {
  let failover = failovers.get(run.logPath);
  if (failover === undefined) {
    try {
      failover = readRunConfig<{ failover?: FailoverConfig | null }>(run).failover ?? null;
    } catch {
      return undefined; // no run record yet (initRun writes it): nothing to fail over from
    }
    failovers.set(run.logPath, failover);
  }
  return failover ?? undefined;
}

/**
 * Called with each retry of a backend call (context.ts): once the server has not answered for the
 * run's `after_s`, the call gives up and the activity fails with TrainingBackendLost.
 */
export function checkFailover(ctx: Context, info: RetryInfo): void {
  const limit = limits.get(ctx);
  if (limit === undefined || !(info.kind === 'transport' || info.kind === 'timeout' || info.kind === 'server')) return;
  if (info.failingForMs >= limit) {
    throw new BackendLostError(`the training backend has not answered for ${Math.round(info.failingForMs / 1000)} s (${info.requestType}: ${info.reason})`, info.requestType);
  }
}

function transfer(backend: TrainingBackend, what: string): CheckpointTransfer {
  const t = backend as Partial<CheckpointTransfer>;
  if (typeof t.checkpointArchive !== 'function' || typeof t.importCheckpoint !== 'function') {
    throw ApplicationFailure.nonRetryable(`failover: this backend cannot ${what} checkpoint archives`, ErrorTypes.config);
  }
  return t as CheckpointTransfer;
}

const archiveBlob = (statePath: string): string => {
  const { trainingRunId, kind, name } = parseTinkerPath(statePath);
  return `checkpoint_archives/${trainingRunId.replace(/[^A-Za-z0-9_.-]/g, '_')}/${kind}/${name}.tar`;
};

/** A saved state's archive into the run store (before its checkpoint row is written). */
export async function mirrorCheckpoint(backend: TrainingBackend, run: RunRef, statePath: string): Promise<void> {
  const tar = await transfer(backend, 'download').checkpointArchive(statePath);
  new RunStore(run.logPath).writeBlob(archiveBlob(statePath), tar);
}

/** The checkpoint on `backend`, imported from the run store's mirror when the backend lacks it. */
export async function ensureCheckpointOn(backend: TrainingBackend, run: RunRef, statePath: string): Promise<void> {
  try {
    await backend.weightsInfo(statePath);
    return;
  } catch (err) {
    if (!(err instanceof BackendError && err.kind === 'not_found')) throw err;
  }
  const store = new RunStore(run.logPath);
  const blob = archiveBlob(statePath);
  // Not mirrored (saved before the run had `failover`): the restore reports the missing checkpoint.
  if (!store.hasBlob(blob)) return;
  await transfer(backend, 'import').importCheckpoint(statePath, store.readBlob(blob));
}
