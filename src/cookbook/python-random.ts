// Python's `random.Random(seed).random()` for integer and str seeds: MT19937 seeded by init_by_array with
// the seed's 32-bit words (CPython's random_seed), and random() = genrand_res53. The reward-model
// dataset's 50% swap and the multiplayer envs' word and number splits draw from it as the reference
// does. Goldens from real Python: test/fixtures/python_random_goldens.json.

import { createHash } from 'node:crypto';
import { MersenneTwister } from './mersenne-twister.js';

export class PythonRandom {
  private readonly mt: MersenneTwister;

  constructor(seed: number | string) {
    if (typeof seed === 'string') {
      this.mt = MersenneTwister.fromKey(stringSeedWords(seed));
      return;
    }
    if (!Number.isSafeInteger(seed)) throw new RangeError(`PythonRandom seed must be a safe integer, got ${seed}`);
    this.mt = MersenneTwister.fromKey(seedWords(Math.abs(seed)));
  }

  /** genrand_uint32 */
  nextUint32(): number {
    return this.mt.nextUint32();
  }

  /** `random()`: a float in [0, 1) with 53 random bits (genrand_res53). */
  random(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }
}

/** The seed's absolute value as little-endian 32-bit words; 0 is one zero word. */
function seedWords(n: number): number[] {
  const words: number[] = [];
  let rest = n;
  do {
    words.push(rest % 0x100000000);
    rest = Math.floor(rest / 0x100000000);
  } while (rest > 0);
  return words;
}

/**
 * A str seed (random.seed version 2): the int of `utf8 + sha512(utf8)` read big-endian, as its
 * little-endian 32-bit words without high zero words.
 */
function stringSeedWords(seed: string): number[] {
  const utf8 = Buffer.from(seed, 'utf8');
  const bytes = Buffer.concat([utf8, createHash('sha512').update(utf8).digest()]);
  const words: number[] = [];
  for (let end = bytes.length; end > 0; end -= 4) {
    let w = 0;
    for (let i = Math.max(0, end - 4); i < end; i++) w = w * 256 + bytes[i];
    words.push(w);
  }
  while (words.length > 1 && words[words.length - 1] === 0) words.pop();
  return words;
}

/** The first `count` values of `random.Random(seed).random()`, extended on demand and shared. */
export class PythonRandomStream {
  private readonly rng: PythonRandom;
  private readonly values: number[] = [];

  constructor(seed: number) {
    this.rng = new PythonRandom(seed);
  }

  /** The `index`-th draw (0-based) of the stream. */
  at(index: number): number {
    if (!Number.isInteger(index) || index < 0) throw new RangeError(`draw index must be a non-negative integer, got ${index}`);
    while (this.values.length <= index) this.values.push(this.rng.random());
    return this.values[index];
  }
}

// `shuffle` / `sample` (CPython's _randbelow by rejection on getrandbits), so the multiplayer
// recipes split their word and number lists like the reference.

export function randbelow(rng: PythonRandom, n: number): number {
  if (!Number.isInteger(n) || n <= 0 || n > 0xffffffff) throw new RangeError(`randbelow: n must be in [1, 2**32], got ${n}`);
  const k = 32 - Math.clz32(n); // n.bit_length()
  for (;;) {
    const r = rng.nextUint32() >>> (32 - k); // getrandbits(k)
    if (r < n) return r;
  }
}

/** `random.Random(seed).shuffle(items)` on a copy. */
export function pyShuffled<T>(items: readonly T[], seed: number | string): T[] {
  const rng = new PythonRandom(seed);
  const x = [...items];
  for (let i = x.length - 1; i >= 1; i--) {
    const j = randbelow(rng, i + 1);
    [x[i], x[j]] = [x[j], x[i]];
  }
  return x;
}

/** `random.Random(seed).sample(population, k)`: CPython's pool path for n ≤ setsize, else its set path. */
export function pySample<T>(population: readonly T[], k: number, seed: number): T[] {
  const n = population.length;
  if (k < 0 || k > n) throw new RangeError('Sample larger than population or is negative');
  let setsize = 21;
  if (k > 5) setsize += 4 ** Math.ceil(Math.log(k * 3) / Math.log(4));
  const rng = new PythonRandom(seed);
  const out: T[] = [];
  if (n > setsize) {
    // Draw indices until an unseen one comes up.
    const selected = new Set<number>();
    for (let i = 0; i < k; i++) {
      let j = randbelow(rng, n);
      while (selected.has(j)) j = randbelow(rng, n);
      selected.add(j);
      out.push(population[j]);
    }
    return out;
  }
  const pool = [...population];
  for (let i = 0; i < k; i++) {
    const j = randbelow(rng, n - i);
    out.push(pool[j]);
    pool[j] = pool[n - i - 1];
  }
  return out;
}
