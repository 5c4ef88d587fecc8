// One firing of an eval schedule (`cookbook eval <run> --every 30m --benchmarks …`): find the run's
// sampler checkpoints not yet evaluated on each benchmark, then evaluate each pair as a child eval
// workflow whose id is fixed by (run, checkpoint, benchmark). A pair another firing is evaluating
// right now (its child still running) or has evaluated (its results.json written) is left alone,
// so overlapping or repeated firings evaluate each pair exactly once; a pair whose eval failed is
// tried again by the next firing.
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ApplicationFailure, executeChild, proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { EvalScheduleActivities, PendingEval } from '../activities/eval-schedule.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../activities/types.js';
import type { EvalScheduleInput } from '../cookbook/eval/scheduled.js';
import type { evalWorkflow, EvalWorkflowResult } from './eval.js';
import { inLanes } from './shared/lanes.js';
import { KindKey, ModelKey, StatusKey, StepKey } from './shared/search-attributes.js';

export interface ScheduledEvalOutcome {
  checkpoint: string;
  step: number | null;
  benchmark: string;
  workflowId: string;
  /** evaluated: by this firing; by_another_firing: one that overlapped this one evaluated it (or still is); failed: see error. */
  outcome: 'evaluated' | 'by_another_firing' | 'failed';
  score?: number;
  error?: string;
}

export interface EvalScheduleResult {
  /** Pairs whose results.json an earlier firing wrote. */
  alreadyDone: number;
  evals: ScheduledEvalOutcome[];
}

const acts = proxyActivities<EvalScheduleActivities>({
  startToCloseTimeout: '2m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
});

/** Pairs fetched per activity: their eval configs are in its result, so each result stays small. */
const PENDING_PER_BATCH = 16;

export async function evalScheduleWorkflow(input: EvalScheduleInput): Promise<EvalScheduleResult> {
  const evals: ScheduledEvalOutcome[] = [];
  let done = 0;
  // Stretch by stretch through the pairs; one that fails here is left to the next firing.
  for (let from = 0; ; ) {
    const batch = await acts.evalSchedulePending({ ...input, from, max: input.perBatch ?? PENDING_PER_BATCH });
    done += batch.done;
    const outcomes: ScheduledEvalOutcome[] = [];
    await inLanes(batch.pending.length, input.concurrency, async (i) => {
      outcomes[i] = await evaluate(batch.pending[i]!);
      setCurrentDetails(`${evals.length + outcomes.filter(Boolean).length} evals settled (${done} done before)`);
    });
    evals.push(...outcomes);
    if (batch.end) break;
    from = batch.next;
  }
  const failed = evals.filter((e) => e.outcome === 'failed');
  if (failed.length > 0) {
    // Failing the firing shows it in the schedule's recent actions; the next firing retries these.
    throw ApplicationFailure.nonRetryable(`${failed.length} of ${evals.length} scheduled evals failed: ${failed.map((e) => `${e.workflowId}: ${e.error}`).join('; ')}`, 'ScheduledEvalFailed', { alreadyDone: done, evals });
  }
  return { alreadyDone: done, evals };
}

async function evaluate(p: PendingEval): Promise<ScheduledEvalOutcome> {
  const base = { checkpoint: p.checkpoint, step: p.step, benchmark: p.benchmark, workflowId: p.workflowId };
  try {
    const result: EvalWorkflowResult = await executeChild<typeof evalWorkflow>('evalWorkflow', {
      workflowId: p.workflowId,
      args: [{ run: p.run, config: p.config }],
      // A failed eval may run again under its id; a running or completed one may not.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      // An eval outlives a firing that is terminated: the next firing finds it running, or done.
      parentClosePolicy: 'ABANDON',
      memo: { config: p.config },
      staticSummary: `scheduled eval ${p.benchmark} · checkpoint ${p.checkpoint}${p.step === null ? '' : ` (step ${p.step})`}`,
      typedSearchAttributes: [
        { key: KindKey, value: 'eval' },
        { key: ModelKey, value: p.config.model },
        { key: StepKey, value: 0 },
        { key: StatusKey, value: 'starting' },
      ],
    });
    return { ...base, outcome: 'evaluated', score: result.metrics.score };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return { ...base, outcome: 'by_another_firing' };
    return { ...base, outcome: 'failed', error: causeMessage(err) };
  }
}

function causeMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  // A child's failure wraps the eval's own error.
  while (e?.cause) e = e.cause as typeof e;
  return e?.message ?? String(err);
}
