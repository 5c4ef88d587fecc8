// A hyper-parameter sweep: the points (grid × random samples, expanded here from the config, so
// the same on every replay) each train as a child workflow with its own durability, at most
// `max_concurrent` at once. The parent keeps the results table (status, steps, the ranking
// metric) as points finish; after a crash it goes on where it stopped, never re-running a finished
// point. `stop` reaches every running point (each ends with a final checkpoint) and no new point
// starts; `pause` pauses the running points and starts none until `resume`. The parent continues
// as new after `points_per_workflow_run` points, once its running points have finished (children
// outlive no parent run). Child ids are `<sweep id>/<point name>`, log dirs `<log_path>/<point name>`.
// A point may be a whole pipeline (kind "pipeline"): ranked by its metric stage, stop/pause reach
// its running stage through it. `set` (hot settings) is forwarded to every running point and kept
// in the state: eval_every/save_every also go into the configs of points started later.
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { HotForwardActivities } from '../activities/hot-forward.js';
import type { PointStatus, SweepActivities } from '../activities/sweep.js';
import type { Activities } from '../activities/types.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../activities/types.js';
import type { ResolvedSweepConfig } from '../cookbook/config/sweep.js';
import { bestIndex, expandPoints, metricSubdir, pointConfig, withHotSettings, type SweepPoint } from '../cookbook/config/sweep-points.js';
import type { RunRef } from '../cookbook/run-store.js';
import { hotSettingsProblem, pauseSignal, progressQuery, resumeSignal, setSignal, setUpdate, stopSignal, validateHotSettings, type HotSettings, type Progress, type RunStatus } from './shared/messages.js';
import { pipelineWorkflow } from './pipeline.js';
import { RUN_WORKFLOWS, type RunWorkflow } from './shared/run-workflows.js';
import { KindKey, ModelKey, StatusKey, StepKey } from './shared/search-attributes.js';
import type { RunResult } from './shared/training-run.js';


/** A finished point, as the parent keeps it (small: the table of a large sweep crosses continue-as-new). */
export interface PointOutcome {
  index: number;
  status: PointStatus;
  steps: number;
  /** The ranking metric's last logged value (null: never logged, or not finite). */
  value: number | null;
  recoveries: number;
  error?: string;
}

export interface SweepState {
  done: PointOutcome[];
  /** The next point to start. */
  next: number;
  paused: boolean;
  stopRequested: boolean;
  stopReason?: string;
  /** Every `set` so far, merged (absent in sweeps started before `set` reached sweeps). */
  hot?: Partial<HotSettings>;
}

export interface SweepInput {
  run: RunRef;
  /** Resolved by the CLI: the base is the paradigm's complete, validated config. */
  config: ResolvedSweepConfig;
  state?: SweepState;
}

export interface SweepRow {
  index: number;
  name: string;
  workflowId: string;
  params: Record<string, unknown>;
  status: 'pending' | 'running' | PointStatus;
  steps: number | null;
  value: number | null;
  error?: string;
}

export interface SweepTable {
  metric: string;
  mode: 'min' | 'max';
  points: SweepRow[];
  /** Index of the best finished point by the metric. */
  best?: number;
}

export type SweepProgress = Progress & SweepTable & { hotSet: Partial<HotSettings> };
export type SweepResult = RunResult & SweepTable;

const acts = proxyActivities<Pick<Activities, 'initRun'> & SweepActivities & HotForwardActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '20s', nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
});

const ERROR_CHARS = 300;

/** The innermost message of a child's failure (child → activity → application). */
function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && typeof e === 'object' && e.cause) e = e.cause as typeof e;
  return String(e?.message ?? err).slice(0, ERROR_CHARS);
}

export async function sweepWorkflow(input: SweepInput): Promise<SweepResult> {
  const { run, config } = input;
  const points = expandPoints(config);
  const state: SweepState = input.state ?? { done: [], next: 0, paused: false, stopRequested: false };
  const pointId = (p: SweepPoint) => `${run.workflowId}/${p.name}`;
  const pointLogPath = (p: SweepPoint) => `${run.logPath}/${p.name}`;
  const metricsDir = metricSubdir(config);
  const running = new Map<number, ChildWorkflowHandle<RunWorkflow>>();
  /** Points whose child has ended, waiting for the parent to record them. */
  const ended: Array<Omit<PointOutcome, 'value'>> = [];
  let startedThisRun = 0;
  let status: RunStatus = 'starting';

  const table = (): SweepTable => {
    const byIndex = new Map(state.done.map((o) => [o.index, o]));
    return {
      metric: config.metric,
      mode: config.mode,
      best: bestIndex(state.done, config.mode),
      points: points.map((p) => {
        const o = byIndex.get(p.index);
        const base = { index: p.index, name: p.name, workflowId: pointId(p), params: p.params };
        if (o) return { ...base, status: o.status, steps: o.steps, value: o.value, ...(o.error ? { error: o.error } : {}) };
        return { ...base, status: running.has(p.index) ? 'running' : 'pending', steps: null, value: null };
      }),
    };
  };

  /** `{metric: best value}` so far (what `cookbook status` shows as the sweep's metrics). */
  const bestMetric = (): Record<string, number> => {
    const best = state.done.find((o) => o.index === bestIndex(state.done, config.mode));
    return best?.value != null ? { [config.metric]: best.value } : {};
  };

  const setStatus = (s: RunStatus) => {
    status = s;
    const best = bestIndex(state.done, config.mode);
    const bestPart = best === undefined ? '' : ` · best ${points[best].name} ${config.metric} ${state.done.find((o) => o.index === best)!.value}`;
    setCurrentDetails(`${s} · ${state.done.length}/${points.length} points done · ${running.size} running${bestPart}`);
    upsertSearchAttributes([
      { key: StatusKey, value: s },
      { key: StepKey, value: state.done.length },
    ]);
  };

  // Forwarded to every running point; one that has just ended needs nothing (and refuses signals).
  const forward = async (send: (h: ChildWorkflowHandle<RunWorkflow>) => Promise<void>) => {
    await Promise.all([...running.values()].map((h) => send(h).catch(() => undefined)));
  };
  setHandler(stopSignal, async (reason) => {
    state.stopRequested = true;
    state.stopReason = reason;
    await forward((h) => h.signal(stopSignal, reason));
  });
  setHandler(pauseSignal, async () => {
    state.paused = true;
    await forward((h) => h.signal(pauseSignal));
  });
  setHandler(resumeSignal, async () => {
    state.paused = false;
    await forward((h) => h.signal(resumeSignal));
  });
  const setHot = async (patch: Partial<HotSettings>) => {
    state.hot = { ...state.hot, ...patch };
    const ids = [...running.keys()].map((i) => pointId(points[i]));
    const forwarded = ids.length > 0 ? await acts.forwardHotSettings({ workflowIds: ids, patch }) : [];
    return { settings: { lr_multiplier: 1, eval_every: 0, save_every: 0, ...state.hot }, fromStep: state.next, forwarded };
  };
  setHandler(setUpdate, setHot, { validator: validateHotSettings });
  setHandler(setSignal, async (patch) => {
    const problem = hotSettingsProblem(patch);
    if (problem) return log.warn(`recorded set ignored: ${problem}`, { patch });
    // A child the change cannot reach is logged, not a failure of the whole run.
    await setHot(patch).catch((err: Error) => log.warn(`recorded set not forwarded: ${err.message}`, { patch }));
  });
  setHandler(progressQuery, (): SweepProgress => ({
    kind: 'sweep',
    model: config.model_name,
    status,
    step: state.done.length,
    totalSteps: points.length,
    paused: state.paused,
    stopRequested: state.stopRequested,
    lastMetrics: bestMetric(),
    hot: { lr_multiplier: 1, eval_every: 0, save_every: 0, ...state.hot },
    hotSet: state.hot ?? {},
    recoveries: state.done.reduce((n, o) => n + o.recoveries, 0),
    logPath: run.logPath,
    ...table(),
  }));

  async function startPoint(p: SweepPoint): Promise<void> {
    const workflow: RunWorkflow | undefined = config.kind === 'pipeline' ? (pipelineWorkflow as RunWorkflow) : RUN_WORKFLOWS[config.kind];
    if (!workflow) throw ApplicationFailure.nonRetryable(`kind: this worker has no workflow for run kind "${config.kind}"`, 'ConfigError');
    const workflowId = pointId(p);
    const logPath = pointLogPath(p);
    const childConfig: Record<string, unknown> = { ...withHotSettings(config.kind, pointConfig(config.kind, config.base, p.params), state.hot ?? {}), log_path: logPath };
    const handle = await startChild(workflow, {
      workflowId,
      args: [{ run: { workflowId, kind: config.kind, logPath }, config: childConfig }],
      memo: { config: childConfig },
      staticSummary: `point ${p.index + 1} of ${points.length} of sweep ${run.workflowId}: ${JSON.stringify(p.params)}`,
      typedSearchAttributes: [
        { key: KindKey, value: config.kind },
        { key: ModelKey, value: String(childConfig.model_name) },
        { key: StepKey, value: 0 },
        { key: StatusKey, value: 'starting' },
      ],
    });
    running.set(p.index, handle);
    // A stop or pause that arrived while the child was starting had no child to reach.
    if (state.stopRequested) await handle.signal(stopSignal, state.stopReason).catch(() => undefined);
    else if (state.paused) await handle.signal(pauseSignal).catch(() => undefined);
    void handle.result().then(
      (r) => ended.push({ index: p.index, status: r.status, steps: r.steps, recoveries: r.recoveries }),
      (err) => ended.push({ index: p.index, status: 'failed', steps: 0, recoveries: 0, error: failureMessage(err) }),
    );
  }

  /** Writes the point's results file and keeps its ranking value in the table. */
  async function record(o: Omit<PointOutcome, 'value'>): Promise<void> {
    const p = points[o.index];
    const { value } = await acts.sweepPointFinished({
      sweep: run,
      metric: config.metric,
      point: { index: p.index, name: p.name, workflow_id: pointId(p), log_path: pointLogPath(p), ...(metricsDir ? { metrics_log_path: `${pointLogPath(p)}/${metricsDir}` } : {}), params: p.params, status: o.status, steps: o.steps, ...(o.error ? { error: o.error } : {}) },
    });
    running.delete(o.index);
    state.done.push({ ...o, value });
  }

  const mayStart = () =>
    !state.stopRequested && !state.paused && state.next < points.length && running.size < config.max_concurrent && !dueForContinueAsNew();
  const dueForContinueAsNew = () => startedThisRun >= config.points_per_workflow_run || workflowInfo().continueAsNewSuggested;

  if (!input.state) await acts.initRun({ run, config });
  setStatus(state.paused ? 'paused' : 'running');

  for (;;) {
    while (mayStart()) {
      await startPoint(points[state.next]);
      state.next += 1;
      startedThisRun += 1;
      setStatus('running');
    }
    while (ended.length > 0) {
      await record(ended.shift()!);
      setStatus(state.paused ? 'paused' : 'running');
    }
    if (running.size === 0) {
      if (state.stopRequested || state.next >= points.length) break;
      if (dueForContinueAsNew()) {
        await condition(allHandlersFinished);
        await continueAsNew<typeof sweepWorkflow>({ ...input, state });
      }
    }
    if (state.paused && running.size === 0) setStatus('paused');
    await condition(() => ended.length > 0 || mayStart() || (running.size === 0 && state.stopRequested));
  }

  // A point that failed or was stopped on its own is a row of the table; only a sweep stop stops the sweep.
  const outcome = state.stopRequested ? 'stopped' : 'completed';
  await acts.sweepFinished({ sweep: run, metric: config.metric, mode: config.mode });
  setStatus(outcome);
  await condition(allHandlersFinished);
  return {
    status: outcome,
    steps: state.done.length,
    lastMetrics: bestMetric(),
    logPath: run.logPath,
    recoveries: state.done.reduce((n, o) => n + o.recoveries, 0),
    ...table(),
  };
}
