// numpy's legacy `RandomState(seed)` (MT19937, init_genrand seeding) and its `randint(low, high)`
// for int64 output: 32-bit draws masked to the smallest all-ones mask ≥ range, rejecting values
// past the range (spec §3.2, §9.3). Goldens from real numpy: test/fixtures/rl_arithmetic_numpy.json.

import { MersenneTwister } from '../mersenne-twister.js';

export class LegacyRandomState {
  private readonly mt: MersenneTwister;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`RandomState seed must be an integer in [0, 2**32), got ${seed}`);
    }
    this.mt = MersenneTwister.fromSeed(seed);
  }

  /** genrand_int32 */
  nextUint32(): number {
    return this.mt.nextUint32();
  }

  /** `randint(low, high)`: an integer in [low, high), for ranges that fit in 32 bits. */
  randint(low: number, high: number): number {
    const rng = high - 1 - low;
    if (!Number.isInteger(rng) || rng < 0) throw new RangeError(`randint: empty range [${low}, ${high})`);
    if (rng > 0xffffffff) throw new RangeError('randint: ranges above 2**32 are not supported');
    if (rng === 0) return low;
    let mask = rng;
    mask |= mask >>> 1;
    mask |= mask >>> 2;
    mask |= mask >>> 4;
    mask |= mask >>> 8;
    mask |= mask >>> 16;
    mask >>>= 0;
    for (;;) {
      const v = (this.nextUint32() & mask) >>> 0;
      if (v <= rng) return low + v;
    }
  }
}
