// DPO datasets from an `hf` source (docs/hf-datasets.md): rows mapped by a preference format
// (hf/formats.ts: comparison, hhh, helpsteer3, ultrafeedback, tulu3_preference, arena; helpsteer2.ts pairs
// HelpSteer2's rated responses per prompt) into labeled
// comparisons, split as the reference's recipes split them (hf/splits.ts), then batched like the
// JSONL datasets — or streamed with `hf.streaming`, where rows a format skips show up in the
// batch's `filtered` list instead of being dropped up front.

import { DataValidationError } from '../errors.js';
import type { HfSource } from '../hf/config.js';
import { bindFormat, isSkipped } from '../hf/formats.js';
import type { HubOptions } from '../hf/hub.js';
import type { HfRow } from '../hf/source.js';
import { loadHfSplits, type HfSplits } from '../hf/splits.js';
import { StreamingBatches } from '../hf/streaming.js';
import type { Renderer } from '../renderers/types.js';
import type { ComparisonRow, LabeledComparison } from './comparisons.js';
import { HELPSTEER2_FORMAT, loadHelpSteer2Splits } from './helpsteer2.js';
import { checkCompletionsEndWithAssistant, comparisonDatumsBuilder, PreferenceDataset, type PreferenceRow } from './preference-dataset.js';

interface PreferenceSettings {
  batch_size: number;
  test_size: number;
  shuffle_seed: number;
  max_length: number | null;
}

export async function buildHfPreferenceDatasets(
  cfg: PreferenceSettings,
  hf: HfSource,
  renderer: Renderer,
  opts: { baseDir?: string; hub?: HubOptions } = {},
): Promise<{ train: PreferenceDataset; test?: PreferenceDataset; skipped: string[] }> {
  const splitOpts = { ...opts, testSize: cfg.test_size, seed: cfg.shuffle_seed };
  // HelpSteer2 pairs rated responses across the split, so it is not a per-row format.
  if (hf.format === HELPSTEER2_FORMAT) return finish(cfg, hf, { streaming: false, ...(await loadHelpSteer2Splits(hf, splitOpts)) }, renderer, HELPSTEER2_FORMAT);
  const format = bindFormat('preference', hf.format, hf.columns);
  return finish(cfg, hf, await loadHfSplits(hf, format, splitOpts), renderer, format.name);
}

function finish(
  cfg: PreferenceSettings,
  hf: HfSource,
  splits: HfSplits<LabeledComparison>,
  renderer: Renderer,
  formatName: string,
): { train: PreferenceDataset; test?: PreferenceDataset; skipped: string[] } {
  const toRow = (r: HfRow<LabeledComparison>): ComparisonRow => {
    checkCompletionsEndWithAssistant(r.value, r.at);
    return { ...r.value, line: r.line, at: r.at };
  };
  const toDatums = comparisonDatumsBuilder(renderer, cfg.max_length, (row) => row.at ?? `${hf.path}:${row.line}`);
  const testRows = splits.test?.map(toRow);
  const test = testRows?.length ? new PreferenceDataset(testRows, testRows.length, toDatums, hf.path) : undefined;

  if (splits.streaming) {
    const stream = new StreamingBatches(
      splits.plan,
      cfg.batch_size,
      (r): PreferenceRow => (isSkipped(r.value) ? { line: r.line, at: r.at, skip: r.value.skip } : toRow(r as HfRow<LabeledComparison>)),
      (row) => ('skip' in row ? { filtered: row.skip } : toDatums(row)),
    );
    if (stream.length === 0) throw new DataValidationError(`${hf.path}: split "${hf.split}" has fewer rows than batch_size ${cfg.batch_size} (after holding out ${testRows?.length ?? 0} for test), so there is not one full batch`);
    return { train: new PreferenceDataset(stream, cfg.batch_size, toDatums, hf.path), test, skipped: splits.skipped };
  }
  const trainRows = splits.train.map(toRow);
  if (trainRows.length < cfg.batch_size) {
    throw new DataValidationError(
      `${hf.path}: ${trainRows.length} training comparisons in split "${hf.split}" (${splits.skipped.length} rows skipped by format "${formatName}") ` +
        `is fewer than batch_size ${cfg.batch_size}, so there is not one full batch`,
    );
  }
  return { train: new PreferenceDataset(trainRows, cfg.batch_size, toDatums, hf.path), test, skipped: splits.skipped };
}
