// The streaming shuffle of HF `IterableDataset.shuffle(seed, buffer_size)`, which the reference's
// StreamingSupervisedDatasetFromHFDataset uses: the data files are read in a seeded order, and
// rows pass through a buffer of `buffer_size` — once it is full, each new row replaces (and emits)
// the row at a random slot; at the end the remainder is shuffled and emitted. The draws follow
// numpy's Generator on PCG64 (shuffle.ts): `integers(0, buffer_size, size=1000)` batches (Lemire's
// bounded method), `shuffle` (random_interval), and HF's per-epoch seed
// `default_rng(seed).integers(0, 2**63) - epoch`. The draws are checked against numpy 2.4 goldens
// (test/cookbook/hf-datasets.test.ts); the buffer and file-order logic follow `datasets`' code but
// were not compared with a run of `datasets` itself.

import { numpyPermutation, Pcg64 } from '../shuffle.js';

const M64 = (1n << 64n) - 1n;

/** numpy Generator draws needed by the buffer shuffle. */
export class NumpyGenerator {
  private readonly bits: Pcg64;

  constructor(seed: number | bigint) {
    this.bits = new Pcg64(seed);
  }

  /** `integers(0, high)` for 1 ≤ high ≤ 2**32: numpy's buffered_bounded_lemire_uint32. */
  integer32(high: number): number {
    const rng = high - 1;
    if (rng === 0) return 0;
    const excl = BigInt(high);
    let m = BigInt(this.bits.nextUint32()) * excl;
    let leftover = m & 0xffffffffn;
    if (leftover < excl) {
      const threshold = (0xffffffffn - BigInt(rng)) % excl;
      while (leftover < threshold) {
        m = BigInt(this.bits.nextUint32()) * excl;
        leftover = m & 0xffffffffn;
      }
    }
    return Number(m >> 32n);
  }

  /** `integers(0, high)` for 2**32 < high < 2**64: numpy's bounded_lemire_uint64. */
  integer64(high: bigint): bigint {
    const rng = high - 1n;
    let m = this.bits.nextUint64() * high;
    let leftover = m & M64;
    if (leftover < high) {
      const threshold = (M64 - rng) % high;
      while (leftover < threshold) {
        m = this.bits.nextUint64() * high;
        leftover = m & M64;
      }
    }
    return m >> 64n;
  }

  /** `shuffle(list)`: Fisher–Yates from the end with random_interval. */
  shuffle<T>(arr: T[]): void {
    for (let i = arr.length - 1; i >= 1; i--) {
      const j = this.bits.interval(i);
      [arr[i], arr[j]] = [arr[j], arr[i]];
    }
  }
}

/** HF `IterableDataset._effective_generator` seed for an epoch (epoch 0: the shuffle seed itself). */
export function effectiveSeed(seed: number, epoch: number): bigint {
  if (epoch === 0) return BigInt(seed);
  const s = new NumpyGenerator(seed).integer64(1n << 63n) - BigInt(epoch);
  return s < 0n ? (1n << 63n) + s : s;
}

/** The order HF reads a streaming dataset's data files in for a seed (`_shuffle_gen_kwargs`). */
export function shardOrder(seed: bigint, nShards: number): number[] {
  return numpyPermutation(seed, nShards);
}

const RANDOM_BATCH = 1000;

/** Rows of `source` through a seeded shuffle buffer of `bufferSize` (HF BufferShuffledExamplesIterable). */
export async function* shuffleBuffer<T>(source: AsyncIterable<T>, bufferSize: number, seed: bigint): AsyncGenerator<T> {
  const rng = new NumpyGenerator(seed);
  let draws: number[] = [];
  let next = 0;
  const buffer: T[] = [];
  for await (const item of source) {
    if (buffer.length < bufferSize) {
      buffer.push(item);
      continue;
    }
    // numpy draws the slots 1000 at a time; the unused rest still advances the generator.
    if (next === draws.length) {
      draws = Array.from({ length: RANDOM_BATCH }, () => rng.integer32(bufferSize));
      next = 0;
    }
    const i = draws[next++];
    yield buffer[i];
    buffer[i] = item;
  }
  rng.shuffle(buffer);
  yield* buffer;
}
