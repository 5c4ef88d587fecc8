// The reference's InterleavedChatDatasetBuilder (supervised/data.py): several Hugging Face chat
// datasets mixed by weight with `interleave_datasets` (hf/interleave.ts). Without weights every
// source weighs its row count, so each original row is equally likely. A positive `test_size`
// first holds out unique rows as the reference's `_split_interleaved_sources` does: sources drawn
// by weight (or by rows left, without weights) while they can spare a row, each source shuffled
// with a seed drawn from the same generator, its first rows held out, the held-out rows
// concatenated and shuffled with `shuffle_seed` into the test set (one batch).

import { z } from 'zod';
import { DataValidationError } from '../errors.js';
import { HfSourceSchema } from '../hf/config.js';
import { bindFormat } from '../hf/formats.js';
import { interleavePositions, numpySum, NumpyRng, STOPPING_STRATEGIES, type StoppingStrategy } from '../hf/interleave.js';
import { loadSplit, shuffled, type HfLoadOptions, type HfRow } from '../hf/source.js';
import type { Message } from '../renderers/types.js';
import { numpyPermutation } from '../shuffle.js';

/** The reference's HFDatasetSource. */
export const HFDatasetSourceSchema = z.strictObject({
  /** A Hub id or a local folder/file in the Hub's layouts (docs/hf-datasets.md). */
  path: z.string().min(1),
  name: z.string().min(1).nullable().default(null),
  split: z.string().min(1).default('train'),
  /** Relative mixing weight; null on every source: each weighs its row count. */
  weight: z.number().nonnegative().nullable().default(null),
  /** The column holding the conversation. */
  message_field: z.string().min(1).default('messages'),
});
export type HFDatasetSource = z.output<typeof HFDatasetSourceSchema>;

export const InterleavedSourcesSchema = z.array(HFDatasetSourceSchema).min(1);
export const StoppingStrategySchema = z.enum(STOPPING_STRATEGIES);

type Rows = HfRow<Message[]>[];

/** Each source's rows in file order (a Hub id from the HF cache or a download; a local folder or file). */
export async function loadInterleavedSources(sources: readonly HFDatasetSource[], opts: HfLoadOptions): Promise<Rows[]> {
  return Promise.all(
    sources.map(async (s, i) => {
      const hf = HfSourceSchema.parse({ path: s.path, name: s.name, split: s.split, format: 'messages', columns: s.message_field === 'messages' ? {} : { messages: s.message_field } });
      try {
        return (await loadSplit(hf, hf.split, bindFormat('chat', 'messages', hf.columns), opts)).rows;
      } catch (e) {
        (e as Error).message = `dataset.sources.${i}: ${(e as Error).message}`;
        throw e;
      }
    }),
  );
}

/** Explicit weights, or every source's row count; a mix of both is refused as the reference refuses it. */
export function sourceWeights(sources: readonly HFDatasetSource[], rows: readonly Rows[]): { weights: number[]; uniformRows: boolean } {
  if (sources.every((s) => s.weight === null)) return { weights: rows.map((r) => r.length), uniformRows: true };
  const missing = sources.findIndex((s) => s.weight === null);
  if (missing >= 0) throw new DataValidationError(`dataset.sources.${missing}.weight: either all sources have explicit weights or none of them`);
  return { weights: sources.map((s) => s.weight as number), uniformRows: false };
}

/** `_split_interleaved_sources`: the training sources (zero weights dropped), their weights, and the held-out rows. */
export function splitInterleavedSources(rows: readonly Rows[], weights: readonly number[], testSize: number, seed: number, uniformRows: boolean): { train: Rows[]; weights: number[]; test: Rows } {
  rows.forEach((r, i) => {
    if (weights[i] > 0 && r.length === 0) throw new DataValidationError(`dataset.sources.${i}: cannot hold out rows of an empty source with a positive weight`);
  });
  if (!(numpySum(weights) > 0)) throw new DataValidationError('dataset.sources: the total weight must be positive');
  const capacities = rows.map((r, i) => (weights[i] > 0 ? r.length - 1 : 0));
  const maxTest = capacities.reduce((a, b) => a + b, 0);
  if (testSize > maxTest) {
    throw new DataValidationError(`dataset.test_size: ${testSize} exceeds the ${maxTest} rows that can be held out while keeping one training row per positively weighted source`);
  }
  const rng = new NumpyRng(seed);
  const remaining = rows.map((r) => r.length);
  const counts = rows.map(() => 0);
  for (let k = 0; k < testSize; k++) {
    const raw = capacities.map((c, i) => (c > 0 ? (uniformRows ? remaining[i] : weights[i]) : 0));
    const total = numpySum(raw);
    const s = rng.chooser(raw.map((p) => p / total))();
    counts[s]++;
    capacities[s]--;
    remaining[s]--;
  }
  const train: Rows[] = [];
  const trainWeights: number[] = [];
  const heldOut: Rows = [];
  rows.forEach((r, i) => {
    if (weights[i] === 0) return;
    const order = shuffled(r, rng.uint32());
    train.push(order.slice(counts[i]));
    trainWeights.push(uniformRows ? order.length - counts[i] : weights[i]);
    heldOut.push(...order.slice(0, counts[i]));
  });
  return { train, weights: trainWeights, test: numpyPermutation(seed, heldOut.length).map((j) => heldOut[j]) };
}

/** The interleaved train rows (a row may repeat) and the held-out test rows (none without test_size). */
export function interleaveChatRows(
  rows: readonly Rows[],
  sources: readonly HFDatasetSource[],
  settings: { test_size: number; shuffle_seed: number; stopping_strategy: StoppingStrategy },
): { train: Rows; test?: Rows } {
  let { weights, uniformRows } = sourceWeights(sources, rows);
  let trainSources = [...rows];
  let test: Rows | undefined;
  if (settings.test_size > 0) {
    const split = splitInterleavedSources(rows, weights, settings.test_size, settings.shuffle_seed, uniformRows);
    [trainSources, weights, test] = [split.train, split.weights, split.test];
    uniformRows = false;
  }
  const total = weights.reduce((a, b) => a + b, 0);
  if (!(total > 0)) throw new DataValidationError('dataset.sources: the total weight across all sources must be positive');
  const positions = interleavePositions(
    trainSources.map((r) => r.length),
    weights.map((w) => w / total),
    settings.shuffle_seed,
    settings.stopping_strategy,
  );
  return { train: positions.map((p) => trainSources[p.source][p.row]), test };
}
