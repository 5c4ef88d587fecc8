// `cookbook eval <model> --inspect <task>`: an Inspect AI task run by Inspect's own runner against
// the model (served over the OpenAI API by the worker running the activity). One long activity
// holds the whole eval; its durability is Inspect's log, which a retried attempt resumes from.
import { proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { EvalInspectActivities, InspectOutcome } from '../activities/eval-inspect.js';
import type { InspectEvalConfig } from '../cookbook/eval/inspect-config.js';
import type { RunRef } from '../cookbook/run-store.js';
import { evalActivityOptions } from './eval-activity-options.js';
import { progressQuery, type Progress, type RunStatus } from './shared/messages.js';
import { StatusKey, StepKey } from './shared/search-attributes.js';
import type { RunResult } from './shared/training-run.js';

export interface EvalInspectInput {
  run: RunRef;
  config: InspectEvalConfig;
}

export interface EvalInspectResult extends InspectOutcome, RunResult {
  status: 'completed';
}

export async function evalInspectWorkflow({ run, config }: EvalInspectInput): Promise<EvalInspectResult> {
  const acts = proxyActivities<EvalInspectActivities>(evalActivityOptions(config));
  let status: RunStatus = 'starting';
  let metrics: Record<string, number> = {};
  setHandler(progressQuery, (): Progress => ({
    kind: 'eval',
    model: config.model,
    status,
    step: status === 'completed' ? 1 : 0,
    totalSteps: 1,
    paused: false,
    stopRequested: false,
    lastMetrics: metrics,
    hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 },
    recoveries: 0,
    logPath: run.logPath,
  }));

  const { baseModel } = await acts.evalInspectPrepare({ run, config });
  status = 'running';
  upsertSearchAttributes([{ key: StatusKey, value: status }]);
  setCurrentDetails(`Inspect task ${config.task} on ${config.model}: running`);
  const outcome = await acts.evalInspectRun.executeWithOptions({ summary: `inspect ${config.task}` }, [{ run, baseModel }]);
  metrics = outcome.metrics;
  status = 'completed';
  upsertSearchAttributes([
    { key: StatusKey, value: status },
    { key: StepKey, value: 1 },
  ]);
  setCurrentDetails(`Inspect task ${config.task}: ${outcome.numSamples} samples scored`);
  return { status: 'completed', logPath: run.logPath, steps: 1, lastMetrics: outcome.metrics, recoveries: 0, ...outcome };
}
