// What `cookbook eval` does to start and follow an eval workflow, a suite's or an Inspect task's:
// the same search attributes (an eval is listed as a run of kind eval), memo and id policy, and a
// failed eval told by its cause (the activity that gave up, after how many attempts, and why)
// rather than by the client's bare "Workflow execution failed".
import { ActivityFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';

export interface StartableEval {
  workflowId: string;
  run: unknown;
  config: { model: string; limit: number | null; max_attempts?: number };
}

/** Starts `workflowType` on the eval; `what` heads its summary (a suite, or `--inspect <task>`). */
export function startEvalWorkflow(client: Client, workflowType: 'evalWorkflow' | 'evalInspectWorkflow', r: StartableEval, what: string, taskQueue = DEFAULT_TASK_QUEUE) {
  return client.workflow.start(workflowType, {
    taskQueue,
    workflowId: r.workflowId,
    args: [{ run: r.run, config: r.config }],
    memo: { config: r.config },
    staticSummary: `eval ${what} · ${r.config.model}${r.config.limit ? ` · first ${r.config.limit}` : ''}`,
    typedSearchAttributes: [
      { key: KindKey, value: 'eval' },
      { key: ModelKey, value: r.config.model },
      { key: StepKey, value: 0 },
      { key: StatusKey, value: 'starting' },
    ],
    workflowIdConflictPolicy: 'FAIL',
  });
}

/** A failed eval's error named by its cause; any other error as it is. */
export function evalFailure(workflowId: string, err: unknown, maxAttempts?: number): unknown {
  if (!(err instanceof WorkflowFailedError)) return err;
  const activity = err.cause instanceof ActivityFailure ? err.cause : undefined;
  let root: Error | undefined = err.cause;
  while (root?.cause instanceof Error) root = root.cause;
  const why = root?.message ?? err.message;
  if (!activity) return new Error(`eval ${workflowId} failed: ${why}`, { cause: err });
  const gaveUp = activity.retryState === 'MAXIMUM_ATTEMPTS_REACHED' ? ` (gave up after ${maxAttempts ?? 'max_attempts'} attempts)` : '';
  return new Error(`eval ${workflowId} failed: ${activity.activityType}${gaveUp}: ${why}`, { cause: err });
}
