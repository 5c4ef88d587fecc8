// `cookbook capture export`: captured rows, filtered, as a dataset file the SL or DPO workflow reads
// as it is (sft.ts, comparisons.ts), one JSON object per line.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Annotation, WireRow } from '../rows.js';
import { comparisonRecords } from './comparisons.js';
import { annotatedValues, DEFAULT_REWARD_KEY, filterRows, rewardOf, type RowFilter } from './filter.js';
import { sftRecords } from './sft.js';

export const EXPORT_FORMATS = ['sft', 'comparisons'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportRequest {
  format: ExportFormat;
  out: string;
  filter: RowFilter;
  /** The metadata field (or annotation kind) rewards are read from. */
  rewardKey?: string;
}

export interface ExportSummary {
  /** Rows the filters kept, records written, and what was left out (by reason). */
  rows: number;
  records: number;
  skipped: Record<string, number>;
}

/** Builds the dataset from rows (and the annotations that give them rewards or labels) and writes it. */
export function writeDataset(rows: readonly WireRow[], annotations: readonly Annotation[], req: ExportRequest): ExportSummary {
  const rewardKey = req.rewardKey ?? DEFAULT_REWARD_KEY;
  const kept = filterRows(rows, req.filter, rewardKey, annotations);
  const rewards = annotatedValues(annotations, rewardKey);
  const built = req.format === 'sft' ? sftRecords(kept) : comparisonRecords(kept, (r) => rewardOf(r, rewardKey, rewards));
  mkdirSync(dirname(req.out), { recursive: true });
  writeFileSync(req.out, built.records.map((r) => JSON.stringify(r)).join('\n') + (built.records.length ? '\n' : ''));
  return { rows: kept.length, records: built.records.length, skipped: built.skipped };
}
