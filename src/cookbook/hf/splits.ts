// Train and test rows of an `hf` source, split the way the reference's recipes split them:
//   * with `test_split`: train is `split` shuffled with the seed; test is `test_split` shuffled with
//     the seed, its first `test_size` rows when test_size > 0 (HHH, HelpSteer3), else all (NoRobots);
//   * without: `split` shuffled with the seed, its first `test_size` rows held out as the test set
//     (Tulu3, UltraFeedback, and this project's JSONL datasets).
// Streaming reads `split` as it goes (streaming.ts); there the held-out rows are the first
// `test_size` rows in file order, since a stream's shuffled order changes with the epoch.

import type { HfSource } from './config.js';
import { isSkipped, type BoundFormat, type Skipped } from './formats.js';
import { countSplit, loadSplit, shuffled, splitFiles, type HfLoadOptions, type HfRow } from './source.js';
import { headRows, type StreamPlan } from './streaming.js';

export type HfSplits<T> = {
  test?: HfRow<T>[];
  /** "at: reason" for each row the format skipped while loading. */
  skipped: string[];
} & ({ streaming: false; train: HfRow<T>[] } | { streaming: true; plan: StreamPlan<T> });

export async function loadHfSplits<T>(hf: HfSource, format: BoundFormat<T>, opts: HfLoadOptions & { testSize: number; seed: number }): Promise<HfSplits<T>> {
  const { testSize, seed } = opts;
  const testFrom = async (firstLine: number) => {
    const loaded = await loadSplit(hf, hf.test_split as string, format, { ...opts, firstLine });
    const rows = shuffled(loaded.rows, seed);
    return { rows: testSize > 0 ? rows.slice(0, testSize) : rows, skipped: loaded.skipped };
  };

  if (hf.streaming) {
    const files = await splitFiles(hf, hf.split, opts);
    const counts = await countSplit(files);
    const total = counts.reduce((a, b) => a + b, 0);
    const plan: StreamPlan<T> = { files, counts, format, holdOut: 0, seed, bufferSize: hf.shuffle_buffer_size };
    if (hf.test_split !== null) {
      // Test rows are numbered after every train row, so a row's line stays a unique id.
      const test = await testFrom(total + 1);
      return { streaming: true, plan, test: test.rows, skipped: test.skipped };
    }
    if (testSize === 0 || total <= testSize) return { streaming: true, plan, skipped: [] };
    plan.holdOut = testSize;
    const head = await headRows(files, format, testSize);
    const keep = (r: HfRow<T | Skipped>): r is HfRow<T> => !isSkipped(r.value);
    return { streaming: true, plan, test: head.filter(keep), skipped: head.filter((r) => !keep(r)).map((r) => `${r.at}: ${(r.value as Skipped).skip}`) };
  }

  const train = await loadSplit(hf, hf.split, format, opts);
  if (hf.test_split !== null) {
    const test = await testFrom(train.total + 1);
    return { streaming: false, train: shuffled(train.rows, seed), test: test.rows, skipped: [...train.skipped, ...test.skipped] };
  }
  const rows = shuffled(train.rows, seed);
  if (testSize > 0 && rows.length > testSize) {
    return { streaming: false, train: rows.slice(testSize), test: rows.slice(0, testSize), skipped: train.skipped };
  }
  return { streaming: false, train: rows, skipped: train.skipped };
}
