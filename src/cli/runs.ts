// Commands on existing runs: runs, status, watch, stop, pause, resume, set.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { applyOverrides, ConfigError } from '../cookbook/config/overrides.js';
import {
  pauseSignal,
  progressQuery,
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
import { ProgressPrinter } from './progress.js';

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
  const desc = await handle.describe();
  const lines = [`${id}: ${desc.status.name}`];
  if (desc.status.name === 'RUNNING') {
    const p = await handle.query(progressQuery);
    lines.push(`  kind ${p.kind} · model ${p.model} · status ${p.status}${p.paused ? ' (paused)' : ''}${p.stopRequested ? ' (stop requested)' : ''}`);
    lines.push(`  step ${p.step}/${p.totalSteps} · recoveries ${p.recoveries} · log dir ${p.logPath}`);
    lines.push(`  hot settings ${JSON.stringify(p.hot)}`);
    if (p.lastCheckpoint) lines.push(`  last checkpoint ${p.lastCheckpoint.name} (step ${p.lastCheckpoint.step}) ${p.lastCheckpoint.statePath}`);
    lines.push(...waitingOn(desc.raw.pendingActivities ?? []));
    lines.push(...formatMetrics(p.lastMetrics));
  } else if (desc.status.name === 'COMPLETED') {
    lines.push(...formatResult(await handle.result()));
  }
  return lines.join('\n');
}

type PendingActivity = NonNullable<Awaited<ReturnType<WorkflowHandle['describe']>>['raw']['pendingActivities']>[number];

/**
 * Activities that are retrying or waiting on a failing backend, with the reason: the last failure
 * of an activity on its second or later attempt, and what the worker heartbeats while a backend
 * call backs off (see reportBackendRetry in src/workers/worker.ts).
 */
export function waitingOn(pending: PendingActivity[]): string[] {
  const lines: string[] = [];
  for (const a of pending) {
    const type = a.activityType?.name ?? 'activity';
    const attempt = a.attempt ?? 1;
    const backend = heartbeatBackend(a);
    const failure = a.lastFailure?.message;
    if (!backend && attempt <= 1) continue;
    const next = a.nextAttemptScheduleTime?.seconds ? ` · next attempt in ${Math.max(0, Number(a.nextAttemptScheduleTime.seconds) - Math.floor(Date.now() / 1000))} s` : '';
    lines.push(`  waiting: ${type} attempt ${attempt}${next}`);
    if (backend) lines.push(`    backend unavailable: ${backend.backend} (retry ${backend.retry}, failing for ${backend.failingForS} s, next try in ${backend.nextInS} s)`);
    if (failure && attempt > 1) lines.push(`    last failure: ${failure}`);
  }
  return lines;
}

function heartbeatBackend(a: PendingActivity): { backend: string; retry: number; failingForS: number; nextInS: number } | undefined {
  const payload = a.heartbeatDetails?.payloads?.[0];
  if (!payload?.data) return undefined;
  try {
    const details = JSON.parse(Buffer.from(payload.data).toString('utf8')) as { backend?: unknown };
    return typeof details.backend === 'string' ? (details as { backend: string; retry: number; failingForS: number; nextInS: number }) : undefined;
  } catch {
    return undefined;
  }
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

/** Shows the progress bar until the run closes; returns its result (throws if it failed). */
export async function watchRun(client: Client, id: string, pollMs = 1000): Promise<RunResult> {
  const handle = await handleFor(client, id);
  const printer = new ProgressPrinter();
  const result = handle.result() as Promise<RunResult>;
  let closed = false;
  result.then(
    () => (closed = true),
    () => (closed = true),
  );
  while (!closed) {
    try {
      printer.update(await handle.query(progressQuery));
    } catch {
      // between continue-as-new runs, or before the first workflow task: try again
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, pollMs))]);
  }
  // One last line with the final state: the run may have closed between two polls.
  await handle.query(progressQuery).then(
    (p) => printer.update(p),
    () => undefined,
  );
  printer.done();
  return result;
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
