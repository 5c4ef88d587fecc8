// Following a run until it closes (`watch`, `train --wait`, `sweep watch`, `eval`): its progress,
// and — once per change — why there is none (no worker polls its task queue) and which activities
// keep failing, so that a follower never sits silent while the run cannot move.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Progress } from '../workflows/shared/messages.js';
import { BUSY_QUERY_TIMEOUT_MS, lookAtRun, QUERY_TIMEOUT_MS, queryWithin, waitingKey, waitingOn, workerLine, workerStateKey, type WorkerState } from './liveness.js';

export interface FollowOptions {
  onProgress(p: Progress): void;
  /** A line about the run (no worker, a worker back, an activity that keeps failing): printed once per change. */
  note(line: string): void;
  pollMs?: number;
}

/** Polls a run's progress until it closes and returns its result (throws if it failed). */
export async function followRun<R>(client: Client, handle: WorkflowHandle, o: FollowOptions): Promise<R> {
  const result = handle.result() as Promise<R>;
  let closed = false;
  result.then(
    () => (closed = true),
    () => (closed = true),
  );
  let worker: WorkerState = { kind: 'answered' };
  let waiting = '';
  while (!closed) {
    try {
      const look = await lookAtRun(client, handle);
      // A busy worker or a failed query (between continue-as-new runs) is not news: ask again next poll.
      if (look.desc.status.name === 'RUNNING' && look.worker.kind !== 'busy' && look.worker.kind !== 'failed') {
        if (workerStateKey(look.worker) !== workerStateKey(worker)) {
          const line = workerLine(look.worker);
          o.note(line ? `${line}; waiting` : `a worker answers for ${handle.workflowId} again: following it`);
        }
        worker = look.worker;
      }
      if (look.progress) o.onProgress(look.progress);
      const pending = look.desc.raw.pendingActivities ?? [];
      const key = waitingKey(pending);
      if (key && key !== waiting) o.note(waitingOn(pending).join('\n'));
      waiting = key;
    } catch {
      // Temporal itself unreachable for a moment: the SDK reconnects; try again
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, o.pollMs ?? 1000))]);
  }
  // One last update with the final state (the run may have closed between two polls): a worker
  // replays the closed run to answer, which takes a moment; with none seen lately, a moment is enough.
  const last = await queryWithin(client, handle, worker.kind === 'answered' ? BUSY_QUERY_TIMEOUT_MS : QUERY_TIMEOUT_MS);
  if ('progress' in last) o.onProgress(last.progress);
  return result;
}
