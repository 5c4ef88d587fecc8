// Commands on existing runs: runs, status, watch, stop, pause, resume, set.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { applyOverrides, ConfigError } from '../cookbook/config/overrides.js';
import {
  pauseSignal,
  resumeSignal,
  setSignal,
  setUpdate,
  stopSignal,
  validateHotSettings,
  type HotSettings,
  type Progress,
  type SetResult,
} from '../workflows/shared/messages.js';
import type { RunResult } from '../workflows/shared/training-run.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';
import { followRun } from './follow.js';
import { BUSY_QUERY_TIMEOUT_MS, lookAtRun, noWorkerPolls, temporalKnows, waitingOn, workerLine, type WorkerState } from './liveness.js';
import { formatNumber } from './numbers.js';
import { ProgressPrinter, statusWords } from './progress.js';
import { runsTable, type RunRow } from './runs-table.js';
import { webUiLink } from './ui-link.js';

/** Every run (one row per workflow id: the executions a continue-as-new closed are left out), fit to `width` unless `wide`. */
export async function listRuns(client: Client, o: { limit?: number; wide?: boolean; width?: number } = {}): Promise<string> {
  const limit = o.limit ?? 50;
  const rows: RunRow[] = [];
  for await (const wf of client.workflow.list({ query: 'CookbookKind IS NOT NULL', pageSize: limit })) {
    if (wf.status.name === 'CONTINUED_AS_NEW') continue;
    const sa = wf.typedSearchAttributes;
    rows.push({
      id: wf.workflowId,
      kind: String(sa.get(KindKey) ?? ''),
      model: String(sa.get(ModelKey) ?? ''),
      step: String(sa.get(StepKey) ?? ''),
      status: String(sa.get(StatusKey) ?? ''),
      temporal: wf.status.name,
    });
    if (rows.length >= limit) break;
  }
  if (rows.length === 0) return 'no runs yet (start one with `npx cookbook train sl <config.json>`)';
  const { lines, elided } = runsTable(rows, o.wide ? Infinity : (o.width ?? 120));
  if (elided) lines.push('(… marks a shortened id: `npx cookbook runs --wide` prints them whole)');
  return lines.join('\n');
}

async function handleFor(client: Client, id: string): Promise<WorkflowHandle> {
  const handle = client.workflow.getHandle(id);
  try {
    await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Error(`no run with workflow id "${id}" (see \`npx cookbook runs\`)`);
    throw err;
  }
  return handle;
}

/** A run's log dir, from the resolved config in its memo (the CLI writes log_path there before starting it). */
export async function logDirOf(client: Client, id: string): Promise<string> {
  const desc = await (await handleFor(client, id)).describe();
  const memo = (await desc.memo) as { config?: { log_path?: unknown } } | undefined;
  const logPath = memo?.config?.log_path;
  if (typeof logPath !== 'string' || logPath === '') throw new Error(`run "${id}" has no log_path in its memo (was it started by \`cookbook train\`?)`);
  return logPath;
}

export async function runStatus(client: Client, id: string): Promise<string> {
  const handle = await handleFor(client, id);
  const { desc, progress: p, worker } = await lookAtRun(client, handle, { busyTimeoutMs: BUSY_QUERY_TIMEOUT_MS });
  const lines = [`${id}: ${desc.status.name}`];
  if (desc.status.name === 'RUNNING') {
    const why = workerLine(worker);
    if (why) lines.push(`  ${why}`);
    if (p) {
      lines.push(`  kind ${p.kind} · model ${p.model} · status ${statusWords(p)}`);
      lines.push(`  step ${p.step}/${p.totalSteps} · recoveries ${p.recoveries} · log dir ${p.logPath}`);
      lines.push(`  hot settings ${JSON.stringify(p.hot)}`);
      if (p.lastCheckpoint) lines.push(`  last checkpoint ${p.lastCheckpoint.name} (step ${p.lastCheckpoint.step}) ${p.lastCheckpoint.statePath}`);
    } else {
      lines.push(...temporalKnows(desc));
    }
    // Without a worker every pending activity matters (one may be stuck on the dead worker).
    lines.push(...waitingOn(desc.raw.pendingActivities ?? [], { all: !p }));
    if (p) lines.push(...formatMetrics(p.lastMetrics));
  } else if (desc.status.name === 'COMPLETED') {
    lines.push(...formatResult(await handle.result()));
  }
  const link = webUiLink(client, id);
  if (link) lines.push(`  web UI ${link}`);
  return lines.join('\n');
}

export function formatMetrics(metrics: Record<string, number>): string[] {
  const keys = Object.keys(metrics).sort();
  if (keys.length === 0) return [];
  const width = Math.min(Math.max(20, ...keys.map((k) => k.length)), 60);
  return ['  metrics:', ...keys.map((k) => `    ${k.padEnd(width)} ${formatNumber(metrics[k])}`)];
}

export function formatResult(r: RunResult): string[] {
  return [
    `  ${r.status} after ${r.steps} steps${r.recoveries ? ` (${r.recoveries} recoveries)` : ''}`,
    `  log dir ${r.logPath}`,
    ...(r.finalCheckpoint ? [`  final checkpoint ${r.finalCheckpoint.statePath}`, `  sampler weights  ${r.finalCheckpoint.samplerPath ?? '-'}`] : []),
    ...formatMetrics(r.lastMetrics),
  ];
}

/** Shows the progress bar until the run closes (with followRun's notes); returns its result (throws if it failed). */
export async function watchRun(client: Client, id: string, pollMs = 1000, printer = new ProgressPrinter()): Promise<RunResult> {
  const handle = await handleFor(client, id);
  try {
    return await followRun<RunResult>(client, handle, {
      onProgress: (p) => printer.update(p),
      note: (line) => printer.note(line),
      pollMs,
    });
  } finally {
    printer.done();
  }
}

export async function sendControl(client: Client, id: string, what: 'stop' | 'pause' | 'resume', reason?: string): Promise<string> {
  const handle = await handleFor(client, id);
  if (what === 'stop') await handle.signal(stopSignal, reason ?? 'requested from the CLI');
  if (what === 'pause') await handle.signal(pauseSignal);
  if (what === 'resume') await handle.signal(resumeSignal);
  const verbs = { stop: 'stop requested: the run finishes its step, saves a final checkpoint and ends', pause: 'paused after the current step', resume: 'resumed' };
  return `${id}: ${verbs[what]}`;
}

/** How long `set` waits for a worker that polls to answer before it records the change instead. */
export const SET_ANSWER_TIMEOUT_MS = 15_000;

/** What `set` did: applied by the run (its answer), or recorded in the run's history for a worker to apply. */
export type SetOutcome = ({ applied: true } & SetResult) | { applied: false; recorded: Partial<HotSettings>; worker: WorkerState };

/**
 * `set <id> key=value …`: validated locally for a clear message, then by the workflow's validator
 * (an update, answered with the step the settings apply from). An update needs a worker to answer
 * and Temporal keeps none that no worker accepted, so with no worker polling (or none answering)
 * the change goes as a signal instead: kept in the run's history, applied when a worker is back.
 */
export async function setHot(client: Client, id: string, assignments: string[]): Promise<SetOutcome> {
  if (assignments.length === 0) throw new ConfigError('set: give at least one key=value (lr_multiplier, eval_every, save_every)');
  const patch = applyOverrides({}, assignments) as Partial<HotSettings>;
  try {
    validateHotSettings(patch);
  } catch (err) {
    // The workflow-side validator throws plain errors; here they are config errors (exit code 2).
    throw new ConfigError((err as Error).message);
  }
  const handle = await handleFor(client, id);
  const desc = await handle.describe();
  if (desc.status.name !== 'RUNNING') throw new Error(`${id} is ${desc.status.name.toLowerCase()}: hot settings change a running run only`);
  const record = async (worker: WorkerState): Promise<SetOutcome> => {
    await handle.signal(setSignal, patch);
    return { applied: false, recorded: patch, worker };
  };
  const absent = await noWorkerPolls(client, desc.taskQueue);
  if (absent) return record(absent);
  const started = Date.now();
  try {
    return { applied: true, ...(await client.withDeadline(started + SET_ANSWER_TIMEOUT_MS, () => handle.executeUpdate(setUpdate, { args: [patch] }))) };
  } catch (err) {
    // The workflow's validator explains a rejection in the cause.
    if (err instanceof WorkflowUpdateFailedError && err.cause) throw new ConfigError(err.cause.message);
    if (Date.now() - started < SET_ANSWER_TIMEOUT_MS - 1000) throw err; // failed, not unanswered
    // A worker seen lately (on another host, or just killed) did not answer. Should the update still
    // reach the run, it sets the same absolute values as the signal: applying both is harmless.
    return record((await noWorkerPolls(client, desc.taskQueue)) ?? { kind: 'busy', queue: desc.taskQueue, waitedMs: SET_ANSWER_TIMEOUT_MS });
  }
}

export function formatRecordedSet(id: string, o: Extract<SetOutcome, { applied: false }>): string {
  return [
    `${id}: ${workerLine(o.worker)}`,
    `  recorded ${JSON.stringify(o.recorded)} in the run's history (a signal: an update needs a worker to answer it);`,
    `  the run applies it when a worker picks it up, from the step it runs next (\`npx cookbook status ${id}\` then shows it)`,
  ].join('\n');
}

export type { Progress };
