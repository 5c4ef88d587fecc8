// MT19937, the generator under both numpy's legacy RandomState and CPython's `random`: they differ
// only in how a seed fills the state (init_genrand vs init_by_array) and in what they draw from
// the 32-bit outputs (rl/mt19937.ts, python-random.ts).

const N = 624;
const M = 397;

export class MersenneTwister {
  private readonly mt = new Uint32Array(N);
  private mti = N + 1;

  /** init_genrand(s): numpy's `RandomState(seed)`. */
  static fromSeed(s: number): MersenneTwister {
    const g = new MersenneTwister();
    g.initGenrand(s);
    return g;
  }

  /** init_by_array(key): CPython's `random.seed(n)` with n's 32-bit words as the key. */
  static fromKey(key: number[]): MersenneTwister {
    const g = new MersenneTwister();
    const mt = g.mt;
    g.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1664525)) + key[j] + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000;
    return g;
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
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
}
