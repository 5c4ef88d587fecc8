// Reading what a run left behind, for comparisons between an interrupted and a clean run.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RunStore } from '../../src/cookbook/run-store.js';
import { CHECKPOINT_METADATA_KEYS } from '../../src/cookbook/checkpoint-metadata.js';
import { createTinkerBackend } from '../../src/backends/index.js';

/**
 * metrics.jsonl rows without the keys two equal runs may differ in: wall-clock timings (`time/*`,
 * DPO's `batch_time`), and the checkpoint paths DPO logs (they name each run's own server-side model).
 */
export function metricsOf(logPath: string): Array<Record<string, unknown>> {
  const differsPerRun = (k: string) => k.startsWith('time/') || k === 'batch_time' || k === 'state_path' || k === 'sampler_path';
  return new RunStore(logPath).readMetrics().map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !differsPerRun(k))));
}

/**
 * checkpoints.jsonl rows without the paths, which name the server-side model of each run, and
 * without what every row records for loading it (checkpoint-metadata.ts, next_step, resume_state
 * (which may name the run's own reference weights), expires_at: a wall-clock time).
 */
export function checkpointsOf(logPath: string): Array<Record<string, unknown>> {
  const recordedForLoading = new Set<string>([...CHECKPOINT_METADATA_KEYS, 'next_step', 'expires_at', 'resume_state']);
  return new RunStore(logPath)
    .readCheckpoints()
    .map(({ state_path: _s, sampler_path: _p, ...rest }) => Object.fromEntries(Object.entries(rest).filter(([k]) => !recordedForLoading.has(k))));
}

/**
 * What is wrong with a run's timing (none: []): each of `steps` has `time/*` keys in its metrics row
 * (`time/total` iff `total`), timing_spans.jsonl has exactly one row per timed metrics row, in step
 * order, and every span has the reference's four fields, its wall times relative to the row's
 * earliest span. Wall-clock values differ between runs: only their shape is checked.
 */
export function timingProblems(logPath: string, steps: readonly number[], opts: { total: boolean }): string[] {
  const store = new RunStore(logPath);
  const out: string[] = [];
  const timedRows = store.readMetrics().filter((r) => Object.keys(r).some((k) => k.startsWith('time/')));
  const timedSteps = timedRows.map((r) => r.step as number);
  for (const step of steps) if (!timedSteps.includes(step)) out.push(`step ${step}: no time/* keys in its metrics row`);
  for (const row of timedRows) if ((typeof row['time/total'] === 'number') !== opts.total) out.push(`step ${row.step}: time/total ${opts.total ? 'missing' : 'present'}`);
  const rows = store.readTimingSpans();
  if (JSON.stringify(rows.map((r) => r.step)) !== JSON.stringify(timedSteps)) out.push(`timing_spans.jsonl steps ${JSON.stringify(rows.map((r) => r.step))}, timed metrics rows ${JSON.stringify(timedSteps)}`);
  for (const row of rows) {
    if (row.spans.length === 0) out.push(`step ${row.step}: a timing row without spans`);
    const bad = row.spans.filter((s) => typeof s.name !== 'string' || !(s.wall_start >= 0) || !(s.wall_end >= s.wall_start) || Math.abs(s.duration - (s.wall_end - s.wall_start)) > 1e-3);
    if (bad.length) out.push(`step ${row.step}: spans without the reference's four fields: ${JSON.stringify(bad.slice(0, 2))}`);
    if (Math.min(...row.spans.map((s) => s.wall_start)) !== 0) out.push(`step ${row.step}: wall times not relative to the earliest span`);
  }
  return out;
}

const PROBE_TOKENS = [785, 6722, 315, 9625, 374, 12095, 13, 576, 6722, 315, 9856, 374, 19846, 13, 151645, 198, 151644, 77091, 198];

/**
 * A fingerprint of sampler weights: the sha256 of the logprobs they assign to a fixed token
 * sequence. Any changed weight changes the float32 logprobs, so equal fingerprints mean the same
 * model function; it reads the weights through the protocol, whatever the server's file layout.
 */
export async function weightsFingerprint(baseUrl: string, samplerPath: string, apiKey = 'tml-test'): Promise<string> {
  const backend = createTinkerBackend({ baseUrl, apiKey });
  try {
    const sampler = await backend.createSamplingSession({ modelPath: samplerPath });
    const logprobs = await sampler.computeLogprobs({ chunks: [{ type: 'encoded_text', tokens: PROBE_TOKENS }] });
    return createHash('sha256').update(JSON.stringify(logprobs)).digest('hex');
  } finally {
    await backend.close();
  }
}

/** train_rollout_summaries.jsonl of each iteration_* directory of a run (null: the directory has none). */
function rolloutSummaries(logPath: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const dir of readdirSync(logPath).filter((d) => d.startsWith('iteration_')).sort()) {
    const file = join(logPath, dir, 'train_rollout_summaries.jsonl');
    out[dir] = existsSync(file) ? readFileSync(file, 'utf8') : null;
  }
  return out;
}

/** Where a run logged, the sampler path of its final checkpoint, and the server that holds it. */
export interface RunEnd {
  logPath: string;
  samplerPath: string;
  baseUrl: string;
}

/**
 * Expects an interrupted run to have ended as a clean one did: equal metrics and checkpoints (without
 * what differs per run), and final weights with the same fingerprint (each read from its own server).
 * `metrics`: how to read a run's rows (default metricsOf).
 */
export async function expectSameTraining(crashed: RunEnd, clean: RunEnd, metrics: (logPath: string) => unknown[] = metricsOf): Promise<void> {
  // Imported here, not at the top: the benches import this module outside vitest, where loading vitest throws.
  const { expect } = await import('vitest');
  expect(metrics(crashed.logPath), 'metrics').toEqual(metrics(clean.logPath));
  expect(checkpointsOf(crashed.logPath), 'checkpoints').toEqual(checkpointsOf(clean.logPath));
  const [mine, theirs] = await Promise.all([weightsFingerprint(crashed.baseUrl, crashed.samplerPath), weightsFingerprint(clean.baseUrl, clean.samplerPath)]);
  expect(mine, 'final weights').toBe(theirs);
}

/** expectSameTraining, and the same iteration_* directories with the same rollout summaries byte for byte. */
export async function expectSameRun(crashed: RunEnd, clean: RunEnd): Promise<void> {
  const { expect } = await import('vitest');
  const summaries = rolloutSummaries(clean.logPath);
  expect(Object.values(summaries).some((s) => s !== null), `rollout summaries in ${clean.logPath}`).toBe(true);
  expect(rolloutSummaries(crashed.logPath), 'rollout summaries').toEqual(summaries);
  await expectSameTraining(crashed, clean);
}
