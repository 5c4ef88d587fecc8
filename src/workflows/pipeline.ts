// A staged pipeline (SFT → DPO, SFT → RL, SFT → reward model → RL, …): each stage is a child
// workflow with its own durability, started from the previous stage's final checkpoint (weights
// only, fresh optimizer, as the reference's load_checkpoint_path) — or from the base model or an
// earlier stage (`init_from`), with "@stage:<i>/sampler" references filled in (pipeline-refs.ts).
// The parent records finished stages, so after any crash the chain goes on where it stopped; `stop`
// is forwarded to the running stage and no later stage starts. Child ids are
// `<parent id>/<index>-<kind>`, their log dirs `<log_path>/<index>-<kind>`. `set` is forwarded to the
// running stage; its eval_every/save_every also go into later stages' configs (not lr_multiplier:
// a later stage is another paradigm with its own learning rate).
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { HotForwardActivities } from '../activities/hot-forward.js';
import type { Activities } from '../activities/types.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../activities/types.js';
import type { PipelineConfig, ResolvedStage } from '../cookbook/config/pipeline.js';
import type { PipelineStageKind } from '../cookbook/config/pipeline-kinds.js';
import { initSource, substituteStageRefs, type StageRef } from '../cookbook/config/pipeline-refs.js';
import { withHotSettings } from '../cookbook/config/sweep-points.js';
import type { RunKind, RunRef } from '../cookbook/run-store.js';
import { hotSettingsProblem, pauseSignal, progressQuery, resumeSignal, setSignal, setUpdate, stopSignal, validateHotSettings, type HotSettings, type Progress, type RunStatus } from './shared/messages.js';
import { RUN_WORKFLOWS, type RunWorkflow } from './shared/run-workflows.js';
import { KindKey, ModelKey, StatusKey, StepKey } from './shared/search-attributes.js';
import type { RunResult } from './shared/training-run.js';


export interface PipelineInput {
  run: RunRef;
  /** Resolved by the CLI: every stage holds its complete, validated config. */
  config: PipelineConfig & { stages: ResolvedStage[] };
  /** Stages finished before a continue-as-new (none otherwise). */
  done?: StageResult[];
}

export interface StageResult {
  index: number;
  kind: string;
  workflowId: string;
  logPath: string;
  result: RunResult;
}

export interface PipelineResult extends RunResult {
  stages: StageResult[];
}

export interface PipelineProgress extends Progress {
  stages: Array<{ index: number; kind: string; workflowId: string; status: 'pending' | 'running' | RunResult['status'] }>;
}

const acts = proxyActivities<Pick<Activities, 'initRun'> & HotForwardActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '20s', nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES },
});

/**
 * What a stage takes from the stage it starts from (`init_from`: the previous one by default): the
 * final checkpoint's weights, or — after a teacher sampling stage, which trains nothing — the
 * conversations file it wrote, as the SFT dataset. A stage from the base model takes nothing.
 */
function startingPoint(index: number, source: number | null, from: (RunResult & { outputPath?: string }) | undefined, stageConfig: Record<string, any>): Record<string, unknown> {
  if (source === null || !from) return {};
  if (from.outputPath) return { dataset: { ...stageConfig.dataset, builtin: undefined, hf: undefined, file_path: from.outputPath } };
  if (!from.finalCheckpoint) {
    throw ApplicationFailure.nonRetryable(`stage ${source} ended without a final checkpoint; stage ${index} has nothing to start from`, 'ConfigError');
  }
  return { load_checkpoint_path: from.finalCheckpoint.statePath };
}

/** The weights path an "@stage:<i>/sampler|state" reference of stage `index` names. */
function stageRefPath(index: number, ref: StageRef, done: StageResult[]): string {
  const checkpoint = done[ref.stage]?.result.finalCheckpoint;
  const path = ref.what === 'sampler' ? checkpoint?.samplerPath : checkpoint?.statePath;
  if (!path) throw ApplicationFailure.nonRetryable(`stage ${index} refers to "@stage:${ref.stage}/${ref.what}" but stage ${ref.stage} left no final ${ref.what} weights`, 'ConfigError');
  return path;
}

export async function pipelineWorkflow(input: PipelineInput): Promise<PipelineResult> {
  const { run, config } = input;
  const stages = config.stages;
  const done: StageResult[] = input.done ? [...input.done] : [];
  const stageId = (i: number) => `${run.workflowId}/${i}-${stages[i].kind}`;
  let status: RunStatus = 'starting';
  let stopRequested = false;
  let stopReason: string | undefined;
  let paused = false;
  let running: { index: number; handle: ChildWorkflowHandle<RunWorkflow> } | undefined;
  let hotSet: Partial<HotSettings> = {};

  const setStatus = (s: RunStatus) => {
    status = s;
    const current = running ? ` · stage ${running.index} (${stages[running.index].kind}) ${stageId(running.index)}` : '';
    setCurrentDetails(`${s} · ${done.length}/${stages.length} stages done${current}`);
    upsertSearchAttributes([
      { key: StatusKey, value: s },
      { key: StepKey, value: done.length },
    ]);
  };

  // Forwarded to the running stage; one that has just finished needs nothing (and refuses signals).
  const forward = async (send: (h: NonNullable<typeof running>['handle']) => Promise<void>) => {
    if (running) await send(running.handle).catch(() => undefined);
  };
  setHandler(stopSignal, async (reason) => {
    stopRequested = true;
    stopReason = reason;
    await forward((h) => h.signal(stopSignal, reason));
  });
  setHandler(pauseSignal, async () => {
    paused = true;
    await forward((h) => h.signal(pauseSignal));
  });
  setHandler(resumeSignal, async () => {
    paused = false;
    await forward((h) => h.signal(resumeSignal));
  });
  const setHot = async (patch: Partial<HotSettings>) => {
    hotSet = { ...hotSet, ...patch };
    const forwarded = running ? await acts.forwardHotSettings({ workflowIds: [stageId(running.index)], patch }) : [];
    return { settings: { lr_multiplier: 1, eval_every: 0, save_every: 0, ...hotSet }, fromStep: done.length, forwarded };
  };
  setHandler(setUpdate, setHot, { validator: validateHotSettings });
  setHandler(setSignal, async (patch) => {
    const problem = hotSettingsProblem(patch);
    if (problem) return log.warn(`recorded set ignored: ${problem}`, { patch });
    // A child the change cannot reach is logged, not a failure of the whole run.
    await setHot(patch).catch((err: Error) => log.warn(`recorded set not forwarded: ${err.message}`, { patch }));
  });
  setHandler(progressQuery, (): PipelineProgress => {
    const last = done[done.length - 1]?.result;
    return {
      kind: 'pipeline',
      model: config.model_name ?? '',
      status,
      step: done.length,
      totalSteps: stages.length,
      paused,
      stopRequested,
      lastMetrics: last?.lastMetrics ?? {},
      lastCheckpoint: last?.finalCheckpoint,
      hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 },
      recoveries: done.reduce((n, s) => n + s.result.recoveries, 0),
      logPath: run.logPath,
      stages: stages.map((s, index) => ({
        index,
        kind: s.kind,
        workflowId: stageId(index),
        status: done[index]?.result.status ?? (running?.index === index ? 'running' : 'pending'),
      })),
    };
  });

  if (done.length === 0) await acts.initRun({ run, config });
  setStatus('running');

  for (let i = done.length; i < stages.length && !stopRequested; i++) {
    if (paused) {
      setStatus('paused');
      await condition(() => !paused || stopRequested);
      if (stopRequested) break;
      setStatus('running');
    }
    const { kind, config: stageConfig, init_from } = stages[i];
    const workflow = RUN_WORKFLOWS[kind as PipelineStageKind];
    if (!workflow) throw ApplicationFailure.nonRetryable(`stages.${i}.kind: this worker has no workflow for stage kind "${kind}"`, 'ConfigError');
    const logPath = `${run.logPath}/${i}-${kind}`;
    const source = initSource(i, init_from);
    const linked = substituteStageRefs(stageConfig, (ref) => stageRefPath(i, ref, done));
    const childConfig: Record<string, unknown> = { ...withHotSettings(kind, linked, hotSet), log_path: logPath, ...startingPoint(i, source, source === null ? undefined : done[source]?.result, stageConfig) };
    const workflowId = stageId(i);
    const handle = await startChild(workflow, {
      workflowId,
      args: [{ run: { workflowId, kind: kind as RunKind, logPath }, config: childConfig }],
      memo: { config: childConfig },
      staticSummary: `stage ${i} of ${stages.length} (${kind}) of pipeline ${run.workflowId}`,
      typedSearchAttributes: [
        { key: KindKey, value: kind },
        { key: ModelKey, value: String(childConfig.model_name) },
        { key: StepKey, value: 0 },
        { key: StatusKey, value: 'starting' },
      ],
    });
    running = { index: i, handle };
    setStatus(status);
    // A stop or pause that arrived while the child was starting had no child to reach.
    if (stopRequested) await forward((h) => h.signal(stopSignal, stopReason));
    else if (paused) await forward((h) => h.signal(pauseSignal));
    const result = await handle.result();
    done.push({ index: i, kind, workflowId, logPath, result });
    running = undefined;
    // A stage stopped on its own (`cookbook stop <child id>`) did not finish: the chain ends too.
    if (result.status === 'stopped') stopRequested = true;
    setStatus('running');
  }

  const final = done[done.length - 1]?.result;
  const outcome = done.length < stages.length || done.some((s) => s.result.status === 'stopped') ? 'stopped' : 'completed';
  setStatus(outcome);
  await condition(allHandlersFinished);
  return {
    status: outcome,
    steps: done.length,
    finalCheckpoint: final?.finalCheckpoint,
    lastMetrics: final?.lastMetrics ?? {},
    logPath: run.logPath,
    recoveries: done.reduce((n, s) => n + s.result.recoveries, 0),
    stages: done,
  };
}
