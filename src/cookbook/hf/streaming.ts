// A streaming train split: rows are read from the data files as batches are asked for, through
// HF's seeded shuffle buffer (shuffle-buffer.ts), instead of being loaded whole — as the
// reference's StreamingSupervisedDatasetFromHFDataset. Unlike the reference (forward only), any
// batch of any epoch can be loaded again: the stream for that epoch is replayed from its start, so
// a retried or resumed step on another worker gets the same rows. Only the current stream, the
// shuffle buffer and the last few loaded batches are held in memory.

import { DataValidationError } from '../errors.js';
import type { BatchSource } from '../epoch-batches.js';
import type { BoundFormat, Skipped } from './formats.js';
import { readRows, type DataFile, type RawRow } from './readers.js';
import { effectiveSeed, shardOrder, shuffleBuffer } from './shuffle-buffer.js';
import type { HfRow } from './source.js';

export interface StreamPlan<T> {
  files: DataFile[];
  /** Rows per file (countSplit). */
  counts: number[];
  format: BoundFormat<T>;
  /** The first rows in file order, held out as the test set and never streamed. */
  holdOut: number;
  /** The shuffle seed (epoch 0's; later epochs derive theirs as HF's set_epoch does). */
  seed: number;
  bufferSize: number;
}

const KEPT_BATCHES = 4;

interface Cursor {
  epoch: number;
  it: AsyncGenerator<{ raw: RawRow; line: number }>;
  /** Rows consumed from `it`. */
  pos: number;
}

export class StreamingBatches<T, R, V> implements BatchSource<R, V> {
  readonly length: number;
  private epoch = 0;
  private cursor: Cursor | undefined;
  private readonly loaded = new Map<string, Array<{ row: R; value: V }>>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly firstLines: number[];

  constructor(
    private readonly plan: StreamPlan<T>,
    readonly batchSize: number,
    private readonly toRow: (row: HfRow<T | Skipped>) => R,
    private readonly build: (row: R) => V,
  ) {
    const total = plan.counts.reduce((a, b) => a + b, 0);
    this.length = Math.floor(Math.max(0, total - plan.holdOut) / batchSize);
    // A row's line is its position in file order, whatever order the files are streamed in.
    this.firstLines = plan.counts.map((_, k) => 1 + plan.counts.slice(0, k).reduce((a, b) => a + b, 0));
  }

  setEpoch(seed: number): void {
    this.epoch = seed;
  }

  /** Rows of one epoch in stream order, not yet mapped (mapping waits until a row is used). */
  private async *rows(epoch: number): AsyncGenerator<{ raw: RawRow; line: number }> {
    const { files, format, holdOut, bufferSize } = this.plan;
    const seed = effectiveSeed(this.plan.seed, epoch);
    const firstLines = this.firstLines;
    async function* inFileOrder() {
      for (const k of shardOrder(seed, files.length)) {
        let line = firstLines[k];
        for await (const raw of readRows(files[k], format.columns)) {
          const l = line++;
          if (l > holdOut) yield { raw, line: l };
        }
      }
    }
    yield* shuffleBuffer(inFileOrder(), bufferSize, seed);
  }

  load(index: number): Promise<void> {
    // One stream is shared, so loads run one at a time.
    const run = this.queue.then(() => this.loadNow(index, this.epoch));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async loadNow(index: number, epoch: number): Promise<void> {
    this.checkIndex(index);
    const key = `${epoch}:${index}`;
    if (this.loaded.has(key)) return;
    const start = index * this.batchSize;
    if (!this.cursor || this.cursor.epoch !== epoch || this.cursor.pos > start) {
      await this.cursor?.it.return(undefined);
      this.cursor = { epoch, it: this.rows(epoch), pos: 0 };
    }
    const cursor = this.cursor;
    const take = async () => {
      const next = await cursor.it.next();
      if (next.done) throw new DataValidationError(`the stream ended after ${cursor.pos} rows, before batch ${index} (the files changed since their rows were counted?)`);
      cursor.pos++;
      return next.value;
    };
    while (cursor.pos < start) await take();
    const batch: Array<{ row: R; value: V }> = [];
    for (let i = 0; i < this.batchSize; i++) {
      const { raw, line } = await take();
      const row = this.toRow({ value: this.plan.format.map(raw.data, raw.at), at: raw.at, line });
      batch.push({ row, value: this.build(row) });
    }
    this.loaded.set(key, batch);
    if (this.loaded.size > KEPT_BATCHES) this.loaded.delete(this.loaded.keys().next().value as string);
  }

  private checkIndex(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
  }

  batch(index: number): Array<{ row: R; value: V }> {
    this.checkIndex(index);
    const batch = this.loaded.get(`${this.epoch}:${index}`);
    if (!batch) throw new Error(`batch ${index} of epoch ${this.epoch} is not loaded: a streaming dataset reads its rows as needed, so await loadBatch(${index}) first`);
    return batch;
  }
}

/** The first `n` rows of `files` in file order (the held-out test rows of a streaming split). */
export async function headRows<T>(files: DataFile[], format: BoundFormat<T>, n: number): Promise<Array<HfRow<T | Skipped>>> {
  const out: Array<HfRow<T | Skipped>> = [];
  if (n <= 0) return out;
  for (const file of files) {
    for await (const raw of readRows(file, format.columns)) {
      out.push({ value: format.map(raw.data, raw.at), at: raw.at, line: out.length + 1 });
      if (out.length === n) return out;
    }
  }
  return out;
}
