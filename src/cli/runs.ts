// Commands on existing runs: runs, status, watch, stop, pause, resume, set.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { applyOverrides, ConfigError } from '../cookbook/config/overrides.js';
import {
  pauseSignal,
  resumeSignal,
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
import { BUSY_QUERY_TIMEOUT_MS, lookAtRun, temporalKnows, waitingOn, workerLine } from './liveness.js';
import { ProgressPrinter } from './progress.js';
import { webUiLink } from './ui-link.js';

export async function listRuns(client: Client, limit = 50): Promise<string> {
  const rows: string[][] = [['WORKFLOW ID', 'KIND', 'MODEL', 'STEP', 'STATUS', 'TEMPORAL']];
  for await (const wf of client.workflow.list({ query: 'CookbookKind IS NOT NULL', pageSize: limit })) {
    const sa = wf.typedSearchAttributes;
    rows.push([
      wf.workflowId,
      String(sa.get(KindKey) ?? ''),
      String(sa.get(ModelKey) ?? ''),
      String(sa.get(StepKey) ?? ''),
      String(sa.get(StatusKey) ?? ''),
      wf.status.name,
    ]);
    if (rows.length > limit) break;
  }
  if (rows.length === 1) return 'no runs yet (start one with `npx cookbook train sl <config.json>`)';
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
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
      lines.push(`  kind ${p.kind} · model ${p.model} · status ${p.status}${p.paused ? ' (paused)' : ''}${p.stopRequested ? ' (stop requested)' : ''}`);
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
  return ['  metrics:', ...keys.map((k) => `    ${k.padEnd(width)} ${Number.isInteger(metrics[k]) ? metrics[k] : metrics[k].toFixed(6)}`)];
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

/** `set <id> key=value …`: validated locally for a clear message, then by the workflow's validator. */
export async function setHot(client: Client, id: string, assignments: string[]): Promise<SetResult> {
  if (assignments.length === 0) throw new ConfigError('set: give at least one key=value (lr_multiplier, eval_every, save_every)');
  const patch = applyOverrides({}, assignments) as Partial<HotSettings>;
  try {
    validateHotSettings(patch);
  } catch (err) {
    // The workflow-side validator throws plain errors; here they are config errors (exit code 2).
    throw new ConfigError((err as Error).message);
  }
  const handle = await handleFor(client, id);
  try {
    return await handle.executeUpdate(setUpdate, { args: [patch] });
  } catch (err) {
    // The workflow's validator explains a rejection in the cause.
    if (err instanceof WorkflowUpdateFailedError && err.cause) throw new ConfigError(err.cause.message);
    throw err;
  }
}

export type { Progress };
