// Fixed-size batches over rows whose order is reshuffled per epoch exactly like HF
// `Dataset.shuffle(seed)` (numpy PCG64 permutation of the original order); the last partial batch
// is dropped. What a row turns into (datums) is built lazily and cached per row.
import { numpyPermutation } from './shuffle.js';

/** Batches of rows with what each row was built into, reshuffled per epoch. */
export interface BatchSource<R, V> {
  readonly batchSize: number;
  /** Full batches (a last partial batch is dropped). */
  readonly length: number;
  setEpoch(seed: number): void;
  /**
   * Reads batch `index` of the current epoch before `batch(index)` can return it. Only streaming
   * sources (which read their rows from files as they go) have it; in-memory ones answer at once.
   */
  load?(index: number): Promise<void>;
  batch(index: number): Array<{ row: R; value: V }>;
}

/** What every dataset over a batch source exposes: its size, its epochs, the streaming read. */
export abstract class BatchedDataset<R, V, B = unknown> {
  /** Serialises `batchAt`: the epoch is shared state, and a streaming read awaits in between. */
  private pending: Promise<unknown> = Promise.resolve();

  constructor(protected readonly batches: BatchSource<R, V>) {}

  abstract getBatch(index: number): B;

  /**
   * Batch `index` of epoch `epoch`, safe to call from concurrent activities (a pipelined step's
   * collection beside the next one's submission, runs sharing a dataset): no other call's
   * `setEpoch` can land between this one's and its read.
   */
  batchAt(epoch: number, index: number): Promise<B> {
    const result = this.pending.then(async () => {
      this.setEpoch(epoch);
      await this.loadBatch(index);
      return this.getBatch(index);
    });
    this.pending = result.catch(() => undefined);
    return result;
  }

  /** Full batches of rows (a last partial batch is dropped). */
  get length(): number {
    return this.batches.length;
  }

  setEpoch(seed: number): void {
    this.batches.setEpoch(seed);
  }

  /** Streaming (`hf.streaming`) datasets read batch `index` here; `getBatch` needs it first. */
  async loadBatch(index: number): Promise<void> {
    await this.batches.load?.(index);
  }
}

export class EpochBatches<R, V> implements BatchSource<R, V> {
  private order: number[];
  private epochSeed: number | undefined;
  private readonly built = new Map<number, V>();

  /**
   * `prepare`, when given, is the asynchronous part of building a row (decoding its images): it
   * runs in `load`, so a batch must be loaded before `batch` returns it.
   */
  constructor(
    private readonly rows: readonly R[],
    readonly batchSize: number,
    private readonly build: (row: R) => V,
    private readonly prepare?: (row: R) => Promise<R>,
  ) {
    this.order = rows.map((_, i) => i);
  }

  private batchRows(index: number): number[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) {
      throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
    }
    return this.order.slice(index * this.batchSize, (index + 1) * this.batchSize);
  }

  async load(index: number): Promise<void> {
    const prepare = this.prepare;
    if (!prepare) return;
    const todo = this.batchRows(index).filter((r) => !this.built.has(r));
    const prepared = await Promise.all(todo.map((r) => prepare(this.rows[r])));
    todo.forEach((r, i) => this.built.set(r, this.build(prepared[i])));
  }

  get length(): number {
    return Math.floor(this.rows.length / this.batchSize);
  }

  setEpoch(seed: number): void {
    if (seed === this.epochSeed) return;
    this.order = numpyPermutation(seed, this.rows.length);
    this.epochSeed = seed;
  }

  /** The rows of batch `index` in the current epoch's order, each with what it was built into. */
  batch(index: number): Array<{ row: R; value: V }> {
    return this.batchRows(index).map((r) => {
      let value = this.built.get(r);
      if (value === undefined) {
        if (this.prepare) throw new Error(`batch ${index} was not loaded: call load(${index}) (batchAt) first`);
        value = this.build(this.rows[r]);
        this.built.set(r, value);
      }
      return { row: this.rows[r], value };
    });
  }
}
