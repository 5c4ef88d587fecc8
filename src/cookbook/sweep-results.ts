// A sweep's result files: `points/<point name>.json` per finished point (its final metrics: the
// last logged value of every metrics.jsonl key, as the reference's results.collect reads a run
// dir) and `results.jsonl` when the sweep ends. Read by the sweep's activities and the report.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RunStore } from './run-store.js';

export type PointStatus = 'completed' | 'stopped' | 'failed';

export interface PointRecord {
  index: number;
  name: string;
  workflow_id: string;
  log_path: string;
  /** Where the ranking metric is logged when not in log_path: a pipeline point's metric stage. */
  metrics_log_path?: string;
  params: Record<string, unknown>;
  status: PointStatus;
  steps: number;
  error?: string;
  /** Last logged value of each numeric metrics.jsonl key. */
  metrics: Record<string, number>;
}

export const POINTS_DIR = 'points';
export const RESULTS_FILE = 'results.jsonl';

/** The last value each numeric key took in the run's metrics.jsonl (a key logged only at evals keeps its last eval). */
export function finalMetrics(logPath: string): Record<string, number> {
  const store = new RunStore(logPath);
  if (!existsSync(store.metricsJsonl)) return {};
  const last: Record<string, number> = {};
  for (const row of store.readMetrics()) {
    for (const [k, v] of Object.entries(row)) if (typeof v === 'number') last[k] = v;
  }
  return last;
}

export function readPointRecords(sweepLogPath: string): PointRecord[] {
  const dir = join(sweepLogPath, POINTS_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as PointRecord)
    .sort((a, b) => a.index - b.index);
}
