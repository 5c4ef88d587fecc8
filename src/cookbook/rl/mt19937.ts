// numpy's legacy `RandomState(seed)` (MT19937, init_genrand seeding) and its `randint(low, high)`
// for int64 output: 32-bit draws masked to the smallest all-ones mask ≥ range, rejecting values
// past the range (spec §3.2, §9.3). Goldens from real numpy: test/fixtures/rl_arithmetic_numpy.json.

const N = 624;
const M = 397;

export class LegacyRandomState {
  private readonly mt = new Uint32Array(N);
  private mti = N + 1;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`RandomState seed must be an integer in [0, 2**32), got ${seed}`);
    }
    this.mt[0] = seed >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = this.mt[i - 1] ^ (this.mt[i - 1] >>> 30);
      this.mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.mti = N;
  }

  private generate(): void {
    const mt = this.mt;
    const mix = (a: number, b: number) => (a & 0x80000000) | (b & 0x7fffffff);
    let kk = 0;
    for (; kk < N - M; kk++) {
      const y = mix(mt[kk], mt[kk + 1]);
      mt[kk] = mt[kk + M] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    for (; kk < N - 1; kk++) {
      const y = mix(mt[kk], mt[kk + 1]);
      mt[kk] = mt[kk + (M - N)] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    const y = mix(mt[N - 1], mt[0]);
    mt[N - 1] = mt[M - 1] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    this.mti = 0;
  }

  /** genrand_int32 */
  nextUint32(): number {
    if (this.mti >= N) this.generate();
    let y = this.mt[this.mti++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
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
