// The training requests that reached the local engine (its debug/training_requests endpoint), read
// along the lineage of a run's models: which models the run created or restored (its logs.log), and
// from which checkpoint each restore started. What a kill test counts to show that every step's
// forward_backward and optim_step reached the server once, and nothing was resent to a model.
import { readFileSync } from 'node:fs';
import { RunStore } from '../../src/cookbook/run-store.js';

export interface TrainingRequest {
  type: 'ForwardBackward' | 'OptimStep';
  seq_id: number;
}

export async function trainingRequests(engineUrl: string): Promise<Record<string, TrainingRequest[]>> {
  const res = await fetch(`${engineUrl}/api/v1/debug/training_requests`, { headers: { 'X-API-Key': 'tml-test' } });
  if (!res.ok) throw new Error(`debug/training_requests: HTTP ${res.status}`);
  return ((await res.json()) as { models: Record<string, TrainingRequest[]> }).models;
}

/** A model the run trained, in the order the run made them: created fresh, or restored from a checkpoint (its model and name). */
export interface RunModel {
  modelId: string;
  restoredFrom?: { modelId: string; name: string };
}

export function runModels(logPath: string): RunModel[] {
  const lines = readFileSync(new RunStore(logPath).logFile, 'utf8').split('\n').filter(Boolean);
  const models: RunModel[] = [];
  for (const line of lines) {
    const entry = JSON.parse(line) as { msg?: string; modelId?: string; statePath?: string };
    if (entry.msg === 'model created' && entry.modelId) models.push({ modelId: entry.modelId });
    if (entry.msg === 'model restored from checkpoint' && entry.modelId && entry.statePath) {
      // tinker://<model>/weights/<name> (other servers may put more, or nothing, between the two).
      const m = /^tinker:\/\/([^/]+)\/(?:.*\/)?([^/]+)$/.exec(entry.statePath);
      if (!m) throw new Error(`${logPath}: a restore from ${entry.statePath}, not a tinker path`);
      models.push({ modelId: entry.modelId, restoredFrom: { modelId: m[1], name: m[2] } });
    }
  }
  return models;
}

/**
 * What is wrong with the requests a model received (none: []): forward_backward and optim_step
 * strictly alternate, starting with a forward_backward (a resend would put two of a kind in a row);
 * only a model the run abandoned may end on a forward_backward without its optim_step.
 */
export function alternationProblems(modelId: string, requests: TrainingRequest[], abandoned: boolean): string[] {
  const problems: string[] = [];
  requests.forEach((r, i) => {
    const expected = i % 2 === 0 ? 'ForwardBackward' : 'OptimStep';
    if (r.type !== expected) problems.push(`${modelId}: request ${i} (seq ${r.seq_id}) is ${r.type}, expected ${expected}`);
  });
  if (!abandoned && requests.length % 2 === 1) problems.push(`${modelId}: ends on a forward_backward without its optim_step`);
  return problems;
}

/**
 * What is wrong with the training requests an SL run's models received (none: []): alternation on
 * every model (abandoned ones may end mid-step), and the last model sent exactly one
 * forward_backward and one optim_step per step since the checkpoint it was restored from.
 */
export function lineageProblems(logPath: string, requests: Record<string, TrainingRequest[]>, totalSteps: number): string[] {
  const models = runModels(logPath);
  const problems = models.flatMap((m, i) => alternationProblems(m.modelId, requests[m.modelId] ?? [], i < models.length - 1));
  // The last model trained every step after the checkpoint it was restored from (SL names a checkpoint by its step).
  const last = models.at(-1)!;
  const firstStep = last.restoredFrom ? Number(last.restoredFrom.name) + 1 : 0;
  const pairs = (requests[last.modelId] ?? []).length / 2;
  if (pairs !== totalSteps - firstStep) problems.push(`${last.modelId} trained ${pairs} steps, expected ${totalSteps - firstStep} (steps ${firstStep}..${totalSteps - 1})`);
  return problems;
}
