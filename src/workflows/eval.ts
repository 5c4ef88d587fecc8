// Evaluating a model on a benchmark suite (`cookbook eval`): prepare, then the examples in chunks,
// `concurrency` chunk activities at a time, then the aggregate. Seeds come from (seed, suite,
// example index), so a chunk sampled again after a crash gives the same responses; chunks already
// finished are in the history and never run again.
import { proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { EvalActivities, EvalChunkResult, EvalOutcome, EvalPlan } from '../activities/eval.js';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import type { RunRef } from '../cookbook/run-store.js';
import { evalActivityOptions } from './eval-activity-options.js';
import { inLanes } from './shared/lanes.js';
import { progressQuery, type Progress, type RunStatus } from './shared/messages.js';
import { StatusKey, StepKey } from './shared/search-attributes.js';
import type { RunResult } from './shared/training-run.js';

export interface EvalInput {
  run: RunRef;
  config: EvalConfig;
}

/** A training run's result shape too (steps = chunks), so `cookbook status` shows a finished eval. */
export interface EvalWorkflowResult extends EvalOutcome, RunResult {
  status: 'completed';
  numExamples: number;
}

export async function evalWorkflow({ run, config }: EvalInput): Promise<EvalWorkflowResult> {
  const acts = proxyActivities<EvalActivities>(evalActivityOptions(config));

  let status: RunStatus = 'starting';
  let plan: EvalPlan | undefined;
  let chunksDone = 0;
  let examplesDone = 0;
  let correct = 0;
  let metrics: Record<string, number> = {};

  // The training runs' progress shape, so `cookbook status`, `watch` and `runs` show evals too:
  // a "step" is a chunk of examples.
  setHandler(progressQuery, (): Progress => ({
    kind: 'eval',
    model: config.model,
    status,
    step: chunksDone,
    totalSteps: plan?.numChunks ?? 0,
    paused: false,
    stopRequested: false,
    lastMetrics: { examples_done: examplesDone, num_examples: plan?.numExamples ?? 0, num_correct: correct, ...metrics },
    hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 },
    recoveries: 0,
    logPath: run.logPath,
  }));

  plan = await acts.evalPrepare({ run, config });
  const { numChunks, baseModel, modelPath } = plan;
  status = 'running';
  upsertSearchAttributes([{ key: StatusKey, value: status }]);

  const results: EvalChunkResult[] = [];
  await inLanes(numChunks, config.concurrency, async (chunk) => {
    const r = await acts.evalChunk.executeWithOptions({ summary: `${config.suite} chunk ${chunk + 1}/${numChunks}` }, [{ run, chunk, baseModel, modelPath }]);
    results[chunk] = r;
    chunksDone++;
    examplesDone += r.examples;
    correct += r.correct;
    setCurrentDetails(`${config.suite}: ${examplesDone}/${plan!.numExamples} examples, ${correct} correct`);
  });
  upsertSearchAttributes([{ key: StepKey, value: chunksDone }]);

  const outcome = await acts.evalFinish({ run, numChunks, baseModel, modelPath });
  metrics = outcome.metrics;
  status = 'completed';
  upsertSearchAttributes([{ key: StatusKey, value: status }]);
  setCurrentDetails(`${config.suite}: score ${outcome.metrics.score.toFixed(4)} on ${plan.numExamples} examples`);
  return { status: 'completed', logPath: run.logPath, numExamples: plan.numExamples, steps: numChunks, lastMetrics: outcome.metrics, recoveries: 0, ...outcome };
}
