// The sweep's side effects: each finished point's final metrics written to
// `<sweep log dir>/points/<point name>.json`, one file per point so points finishing on different
// workers never race, and `results.jsonl` (one row per point, index order) when the sweep ends.
// The workflow gets back only the ranking metric's value: the table stays small.
import { join } from 'node:path';
import { writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { finalMetrics, POINTS_DIR, readPointRecords, RESULTS_FILE, type PointRecord } from '../cookbook/sweep-results.js';

export type { PointRecord, PointStatus } from '../cookbook/sweep-results.js';

export interface SweepActivities {
  sweepPointFinished(input: { sweep: RunRef; point: Omit<PointRecord, 'metrics'>; metric: string }): Promise<{ value: number | null }>;
  sweepFinished(input: { sweep: RunRef; metric: string; mode: 'min' | 'max' }): Promise<void>;
}

export function sweepActivities(): SweepActivities {
  return {
    async sweepPointFinished({ sweep, point, metric }) {
      const metrics = finalMetrics(point.metrics_log_path ?? point.log_path);
      const record: PointRecord = { ...point, metrics };
      writeFileAtomic(join(sweep.logPath, POINTS_DIR, `${point.name}.json`), `${JSON.stringify(record, null, 2)}\n`);
      const value = metrics[metric];
      return { value: typeof value === 'number' && Number.isFinite(value) ? value : null };
    },

    async sweepFinished({ sweep, metric, mode }) {
      const records = readPointRecords(sweep.logPath);
      const ranked = records.filter((r) => Number.isFinite(r.metrics[metric]));
      const best = ranked.sort((a, b) => (mode === 'min' ? a.metrics[metric] - b.metrics[metric] : b.metrics[metric] - a.metrics[metric]))[0];
      const rows = records.map((r) => JSON.stringify({ ...r, metric, value: r.metrics[metric] ?? null, best: r === best }));
      writeFileAtomic(join(sweep.logPath, RESULTS_FILE), rows.map((row) => `${row}\n`).join(''));
    },
  };
}
