// History checks for workflow tests: every payload small (claim check), no secret anywhere, and
// the history bounded (continue-as-new), plus saving histories as replay fixtures.
import { writeFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';

export const PAYLOAD_HARD_CAP = 256 * 1024;

export interface HistoryStats {
  runs: number;
  maxEvents: number;
  maxPayloadBytes: number;
}

interface PayloadLike {
  data?: Uint8Array | null;
  metadata?: Record<string, Uint8Array> | null;
}

function* payloads(node: unknown): Generator<PayloadLike> {
  if (node === null || typeof node !== 'object') return;
  if (node instanceof Uint8Array) return;
  const obj = node as Record<string, unknown>;
  if (obj.data instanceof Uint8Array && obj.metadata && typeof obj.metadata === 'object') {
    yield obj as PayloadLike;
    return;
  }
  for (const value of Object.values(obj)) yield* payloads(value);
}

/** Walks every run of a workflow (across continue-as-new) and checks its history. */
export async function checkHistories(client: Client, workflowId: string, secrets: string[]): Promise<HistoryStats> {
  const stats: HistoryStats = { runs: 0, maxEvents: 0, maxPayloadBytes: 0 };
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const history = await client.workflow.getHandle(workflowId, wf.runId).fetchHistory();
    stats.runs += 1;
    stats.maxEvents = Math.max(stats.maxEvents, history.events?.length ?? 0);
    for (const p of payloads(history)) {
      const size = (p.data?.length ?? 0) + Object.values(p.metadata ?? {}).reduce((n, v) => n + v.length, 0);
      stats.maxPayloadBytes = Math.max(stats.maxPayloadBytes, size);
    }
    const text = historyToJSON(history);
    for (const secret of secrets) {
      if (text.includes(secret)) throw new Error(`history of ${workflowId} (run ${wf.runId}) contains a secret`);
    }
  }
  return stats;
}

/** Saves every run of a workflow as `<prefix>-<n>.json` for the replay suite. */
export async function saveHistories(client: Client, workflowId: string, prefix: string): Promise<string[]> {
  const files: string[] = [];
  const runs: Array<{ runId: string; start: number }> = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) runs.push({ runId: wf.runId, start: wf.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  for (const [i, { runId }] of runs.entries()) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const file = `${prefix}-${i}.json`;
    writeFileSync(file, historyToJSON(history));
    files.push(file);
  }
  return files;
}

/**
 * How often an activity of type `submitted` was scheduled while one of type `awaited` was still
 * open (scheduled, not yet closed), over a workflow's runs: the pipelined steps of a run.
 */
export async function overlappingActivities(client: Client, workflowId: string, submitted: string, awaited: string): Promise<number> {
  let overlaps = 0;
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const history = await client.workflow.getHandle(workflowId, wf.runId).fetchHistory();
    const open = new Map<string, string>(); // scheduled event id → activity type
    for (const e of history.events ?? []) {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) {
        const type = scheduled.activityType?.name ?? '';
        if (type === submitted && [...open.values()].includes(awaited)) overlaps += 1;
        open.set(String(e.eventId), type);
      }
      const closed =
        e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
      if (closed?.scheduledEventId != null) open.delete(String(closed.scheduledEventId));
    }
  }
  return overlaps;
}

/**
 * How many activities of `type` started on a retry (attempt > 1) across the workflow's runs: a
 * worker killed inside one leaves it to be retried on the next worker.
 */
export async function retriedActivities(client: Client, workflowId: string, type: string): Promise<number> {
  let n = 0;
  for await (const wf of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    const history = await client.workflow.getHandle(workflowId, wf.runId).fetchHistory();
    const types = new Map<string, string>();
    for (const e of history.events ?? []) {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) types.set(String(e.eventId), scheduled.activityType?.name ?? '');
      const started = e.activityTaskStartedEventAttributes;
      if (started && (started.attempt ?? 1) > 1 && types.get(String(started.scheduledEventId)) === type) n++;
    }
  }
  return n;
}
