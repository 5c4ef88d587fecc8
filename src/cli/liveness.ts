// Whether a worker answers for a run, and what Temporal knows about the run without one.
//
// A query needs a worker: with none polling, Temporal holds it until the RPC deadline (`status`
// used to hang 30 s, then print only "Failed to query Workflow"). So the run's task queue is looked
// at first (DescribeTaskQueue needs no worker): Temporal lists each worker that polled it lately,
// dead or alive, with its last poll. A worker on this host is alive while its process is (the SDK
// names it pid@host); one elsewhere may be while its last poll is younger than a long poll. With
// none that may be alive, no query is sent; otherwise the query gets a short deadline, and an
// unanswered one is told apart: a worker that polled again meanwhile (it took the query) or that
// may be alive is busy, not gone. (A query may go to the worker's own sticky queue, so the shared
// queue's last poll alone says nothing about a live worker: an idle one's poll waits there a minute.)
import { hostname } from 'node:os';
import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { progressQuery, type Progress } from '../workflows/shared/messages.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';
import { isAlive } from './stack-state.js';

/** How long a query may wait for an answer before the task queue's pollers are looked at. */
export const QUERY_TIMEOUT_MS = 1000;
/** How long to wait for a worker that is polling (it took the query) but has not answered yet. */
export const BUSY_QUERY_TIMEOUT_MS = 10_000;

// temporal.api.enums.v1 values (@temporalio/proto is not a direct dependency).
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_WORKFLOW = 1;

export interface Poller {
  identity: string;
  lastAccessMs: number;
}

/**
 * Workers that polled the queue for workflow tasks lately, with when each last polled. Temporal
 * keeps a poller listed for a few minutes after its last poll, dead or not.
 */
export async function workflowPollers(client: Client, queue: string): Promise<Poller[]> {
  const res = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: queue, kind: TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (res.pollers ?? []).map((p) => ({ identity: p.identity ?? '', lastAccessMs: timestampMs(p.lastAccessTime) }));
}

export function timestampMs(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  if (!ts) return 0;
  return Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

const latestPoll = (pollers: Poller[]) => Math.max(0, ...pollers.map((p) => p.lastAccessMs));

/** How long Temporal holds a live worker's poll before it polls again. */
const LONG_POLL_SPAN_MS = 70_000;

/** Whether a poller may still be there: on this host its process says so; elsewhere, a poll within a long poll's span. */
export function pollerMayLive(p: Poller, nowMs = Date.now()): boolean {
  const [pid, host] = p.identity.split('@');
  if (host === hostname() && /^\d+$/.test(pid)) return isAlive({ pid: Number(pid) });
  return nowMs - p.lastAccessMs < LONG_POLL_SPAN_MS;
}

/**
 * Why no worker can answer on `queue` (none polled lately, or each that did is gone), or undefined
 * when one may be there or the workers cannot be listed.
 */
export async function noWorkerPolls(client: Client, queue: string): Promise<WorkerState | undefined> {
  const pollers = await workflowPollers(client, queue).catch(() => undefined);
  if (!pollers || pollers.some((p) => pollerMayLive(p))) return undefined;
  return pollers.length === 0 ? { kind: 'none', queue } : { kind: 'gone', queue, sinceMs: latestPoll(pollers) };
}

/** True when some worker polled after `before` was taken (a new worker, or one that took a task). */
function polledSince(before: Poller[], after: Poller[]): boolean {
  const seen = new Map(before.map((p) => [p.identity, p.lastAccessMs]));
  return after.some((p) => p.lastAccessMs > (seen.get(p.identity) ?? 0));
}

/** Who answers for a run: the query's outcome, explained. */
export type WorkerState =
  | { kind: 'answered' }
  /** No worker polled the queue in the last few minutes (or ever). */
  | { kind: 'none'; queue: string }
  /** Workers polled the queue, the last one at `sinceMs`; none of them can be there now. */
  | { kind: 'gone'; queue: string; sinceMs: number }
  /** A worker polls but did not answer within the deadline (busy, or replaying a long history). */
  | { kind: 'busy'; queue: string; waitedMs: number }
  /** The query failed for another reason (e.g. between two runs of a continue-as-new). */
  | { kind: 'failed'; message: string };

export interface RunLook {
  desc: WorkflowExecutionDescription;
  progress?: Progress;
  worker: WorkerState;
}

export interface LookOptions {
  /** Wait this long once a worker is seen to poll but has not answered (status; watch polls again instead). */
  busyTimeoutMs?: number;
}

/** The run's description and, for a running run, its progress or why there is none. */
export async function lookAtRun(client: Client, handle: WorkflowHandle, o: LookOptions = {}): Promise<RunLook> {
  const desc = await handle.describe();
  if (desc.status.name !== 'RUNNING') return { desc, worker: { kind: 'answered' } };
  const queue = desc.taskQueue;
  const before = await workflowPollers(client, queue).catch((err: Error) => err);
  if (before instanceof Error) {
    // Workers cannot be listed (a cluster may not allow it): the query alone has to tell.
    const asked = await queryWithin(client, handle, o.busyTimeoutMs ?? QUERY_TIMEOUT_MS);
    if ('progress' in asked) return { desc, progress: asked.progress, worker: { kind: 'answered' } };
    return { desc, worker: { kind: 'failed', message: `${asked.message} (the workers of task queue ${queue} could not be listed: ${before.message})` } };
  }
  const noWorker = (pollers: Poller[]): WorkerState => (pollers.length === 0 ? { kind: 'none', queue } : { kind: 'gone', queue, sinceMs: latestPoll(pollers) });
  // No worker that may be alive: a query would only wait out its deadline.
  if (!before.some((p) => pollerMayLive(p))) return { desc, worker: noWorker(before) };

  const asked = await queryWithin(client, handle, QUERY_TIMEOUT_MS);
  if ('progress' in asked) return { desc, progress: asked.progress, worker: { kind: 'answered' } };
  if (!asked.timedOut) return { desc, worker: { kind: 'failed', message: asked.message } };
  const after = await workflowPollers(client, queue).catch(() => before);
  if (!polledSince(before, after) && !after.some((p) => pollerMayLive(p))) return { desc, worker: noWorker(after) };
  if (o.busyTimeoutMs) {
    const again = await queryWithin(client, handle, o.busyTimeoutMs);
    if ('progress' in again) return { desc, progress: again.progress, worker: { kind: 'answered' } };
  }
  return { desc, worker: { kind: 'busy', queue, waitedMs: QUERY_TIMEOUT_MS + (o.busyTimeoutMs ?? 0) } };
}

type Asked = { progress: Progress } | { timedOut: boolean; message: string };

/** The progress query with a deadline; a timeout is told apart from other failures. */
export async function queryWithin(client: Client, handle: WorkflowHandle, timeoutMs: number): Promise<Asked> {
  const started = Date.now();
  try {
    return { progress: await client.withDeadline(started + timeoutMs, () => handle.query(progressQuery)) };
  } catch (err) {
    const timedOut = grpcCodes(err).includes(GRPC_DEADLINE_EXCEEDED) || Date.now() - started >= timeoutMs;
    return { timedOut, message: (err as Error).message };
  }
}

const GRPC_DEADLINE_EXCEEDED = 4;

function grpcCodes(err: unknown): unknown[] {
  const codes: unknown[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) codes.push(e.code);
  return codes;
}

/** The command that starts a worker for `queue`. */
export const workerCommand = (queue: string) => `npx cookbook worker${queue === DEFAULT_TASK_QUEUE ? '' : ` --task-queue ${queue}`}`;

/** One line on who answers for the run, or undefined when a worker answered. */
export function workerLine(w: WorkerState, nowMs = Date.now()): string | undefined {
  switch (w.kind) {
    case 'answered':
      return undefined;
    case 'none':
      return `no worker has polled task queue ${w.queue}: start one with \`${workerCommand(w.queue)}\``;
    case 'gone':
      return `no worker is polling task queue ${w.queue} since ${new Date(w.sinceMs).toISOString()} (${Math.max(0, Math.round((nowMs - w.sinceMs) / 1000))} s ago): start one with \`${workerCommand(w.queue)}\``;
    case 'busy':
      return `a worker polls task queue ${w.queue} but did not answer within ${w.waitedMs / 1000} s (busy or replaying a long history; or, on another host, gone within the last minute)`;
    case 'failed':
      return `the run's progress query failed: ${w.message}`;
  }
}

/** What a state change is about, so a follower prints each state once ("none" and "gone" alike: no worker). */
export function workerStateKey(w: WorkerState): string {
  return w.kind === 'gone' ? 'none' : w.kind;
}

/** What Temporal itself records about a running run: search attributes (kept by the workflow every few steps) and memo. */
export function temporalKnows(desc: WorkflowExecutionDescription): string[] {
  const sa = desc.typedSearchAttributes;
  const memo = desc.memo as { config?: { log_path?: unknown } } | undefined;
  const logPath = typeof memo?.config?.log_path === 'string' ? ` · log dir ${memo.config.log_path}` : '';
  return [
    `  from Temporal (progress, hot settings and metrics need a worker):`,
    `  kind ${sa.get(KindKey) ?? desc.type} · model ${sa.get(ModelKey) ?? '?'} · status ${sa.get(StatusKey) ?? '?'} · step ${sa.get(StepKey) ?? '?'} (as last recorded)`,
    `  ${desc.type} on task queue ${desc.taskQueue} · started ${desc.startTime.toISOString()} · ${desc.historyLength} history events${logPath}`,
  ];
}

type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

const ACTIVITY_STATES: Record<number, string> = { 1: 'scheduled', 2: 'running', 3: 'cancel requested', 4: 'paused', 5: 'pause requested' };

/**
 * Activities that are retrying or waiting on a failing backend, with the reason: the last failure
 * of an activity on its second or later attempt, and what the worker heartbeats while a backend
 * call backs off (see reportBackendRetry in src/workers/worker.ts). `all`: every pending activity,
 * with its state and the worker that ran it last (for a run whose worker is gone).
 */
export function waitingOn(pending: PendingActivity[], o: { all?: boolean; nowMs?: number } = {}): string[] {
  const lines: string[] = [];
  const now = o.nowMs ?? Date.now();
  for (const a of pending) {
    const type = a.activityType?.name ?? 'activity';
    const attempt = a.attempt ?? 1;
    const backend = heartbeatBackend(a);
    const failure = a.lastFailure?.message;
    if (!o.all && !backend && typeof heartbeatDetails(a)?.store !== 'string' && attempt <= 1) continue;
    const nextMs = timestampMs(a.nextAttemptScheduleTime);
    const next = nextMs ? ` · next attempt in ${Math.max(0, Math.round((nextMs - now) / 1000))} s` : '';
    const state = o.all ? ` · ${ACTIVITY_STATES[Number(a.state)] ?? 'pending'}${a.lastWorkerIdentity ? ` (last worker ${a.lastWorkerIdentity})` : ''}` : '';
    lines.push(`  waiting: ${type} attempt ${attempt}${state}${next}`);
    if (backend) lines.push(`    backend unavailable: ${backend.backend} (retry ${backend.retry}, failing for ${backend.failingForS} s, next try in ${backend.nextInS} s)`);
    const store = heartbeatDetails(a)?.store;
    if (typeof store === 'string') lines.push(`    run store unavailable, waiting: ${store}`);
    if (failure && attempt > 1) lines.push(`    last failure: ${failure}`);
  }
  return lines;
}

/** What the waiting lines are about, without the counters that change every poll: a follower prints each change once. */
export function waitingKey(pending: PendingActivity[]): string {
  return pending
    .filter((a) => (a.attempt ?? 1) > 1 || heartbeatBackend(a) || typeof heartbeatDetails(a)?.store === 'string')
    .map((a) => `${a.activityType?.name}|${a.lastFailure?.message ?? ''}|${heartbeatBackend(a)?.backend ?? ''}|${typeof heartbeatDetails(a)?.store === 'string' ? 'store' : ''}`)
    .join('\n');
}

function heartbeatBackend(a: PendingActivity): { backend: string; retry: number; failingForS: number; nextInS: number } | undefined {
  const details = heartbeatDetails(a);
  return typeof details?.backend === 'string' ? (details as { backend: string; retry: number; failingForS: number; nextInS: number }) : undefined;
}

/** The activity's last heartbeat details (the backend's retry status, a wait for the run store), if JSON. */
function heartbeatDetails(a: PendingActivity): Record<string, unknown> | undefined {
  const payload = a.heartbeatDetails?.payloads?.[0];
  if (!payload?.data) return undefined;
  try {
    const details = JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown;
    return details && typeof details === 'object' ? (details as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
