// numpy `np.random.default_rng(seed).permutation(n)`, bit for bit: the order HF
// `Dataset.shuffle(seed)` gives (spec §1.4, §9.3). Three pieces:
//   * SeedSequence(seed) → four uint64 words (numpy's hash-mix entropy pool, pool size 4);
//   * PCG64 (128-bit LCG, XSL-RR output) seeded from them; 32-bit draws halve a 64-bit output;
//   * Generator.shuffle on an int64 array: Fisher–Yates from the end, with j drawn by numpy's
//     `random_interval` (masked rejection sampling, 32-bit draws when the bound fits in 32 bits).
// Goldens from real numpy live in test/fixtures/numpy-permutations.json.

const M32 = 0xffffffffn;
const M64 = (1n << 64n) - 1n;
const M128 = (1n << 128n) - 1n;

// SeedSequence constants (numpy/random/bit_generator.pyx).
const INIT_A = 0x43b0d7e5;
const MULT_A = 0x931e8875;
const INIT_B = 0x8b51f9dd;
const MULT_B = 0x58f38ded;
const MIX_MULT_L = 0xca01f9dd;
const MIX_MULT_R = 0x4973f715;
const POOL_SIZE = 4;

const mul32 = (a: number, b: number): number => Math.imul(a, b) >>> 0;

/** A non-negative integer as little-endian uint32 words ([0] for 0), like numpy's coercion. */
function intToUint32Words(n: bigint): number[] {
  if (n < 0n) throw new RangeError('seed must be non-negative');
  if (n === 0n) return [0];
  const words: number[] = [];
  while (n > 0n) {
    words.push(Number(n & M32));
    n >>= 32n;
  }
  return words;
}

/** SeedSequence(entropy).generate_state(nWords64, uint64) for an integer entropy, no spawn key. */
export function seedSequenceState64(entropy: number | bigint, nWords64: number): bigint[] {
  const ent = intToUint32Words(BigInt(entropy));
  let hashConst = INIT_A;
  const hashmix = (value: number): number => {
    value = (value ^ hashConst) >>> 0;
    hashConst = mul32(hashConst, MULT_A);
    value = mul32(value, hashConst);
    return (value ^ (value >>> 16)) >>> 0;
  };
  const mix = (x: number, y: number): number => {
    let r = (mul32(MIX_MULT_L, x) - mul32(MIX_MULT_R, y)) >>> 0;
    r = (r ^ (r >>> 16)) >>> 0;
    return r;
  };
  const pool = new Array<number>(POOL_SIZE);
  for (let i = 0; i < POOL_SIZE; i++) pool[i] = hashmix(i < ent.length ? ent[i] : 0);
  for (let src = 0; src < POOL_SIZE; src++) {
    for (let dst = 0; dst < POOL_SIZE; dst++) {
      if (src !== dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
    }
  }
  for (let src = POOL_SIZE; src < ent.length; src++) {
    for (let dst = 0; dst < POOL_SIZE; dst++) pool[dst] = mix(pool[dst], hashmix(ent[src]));
  }

  let hb = INIT_B;
  const words32: number[] = [];
  for (let i = 0; i < nWords64 * 2; i++) {
    let v = (pool[i % POOL_SIZE] ^ hb) >>> 0;
    hb = mul32(hb, MULT_B);
    v = mul32(v, hb);
    words32.push((v ^ (v >>> 16)) >>> 0);
  }
  const out: bigint[] = [];
  for (let i = 0; i < nWords64; i++) out.push(BigInt(words32[2 * i]) | (BigInt(words32[2 * i + 1]) << 32n));
  return out;
}

const PCG_MULT = 0x2360ed051fc65da44385df649fccf645n;

/** numpy's PCG64 bit generator (pcg_setseq_128_xsl_rr_64). */
export class Pcg64 {
  private state = 0n;
  private readonly inc: bigint;
  private hasUint32 = false;
  private uinteger = 0;

  constructor(seed: number | bigint) {
    const [s0, s1, i0, i1] = seedSequenceState64(seed, 4);
    const initState = (s0 << 64n) | s1;
    const initSeq = (i0 << 64n) | i1;
    this.inc = ((initSeq << 1n) | 1n) & M128;
    this.step();
    this.state = (this.state + initState) & M128;
    this.step();
  }

  private step(): void {
    this.state = (this.state * PCG_MULT + this.inc) & M128;
  }

  nextUint64(): bigint {
    this.step();
    const s = this.state;
    const x = ((s >> 64n) ^ s) & M64;
    const rot = s >> 122n;
    return ((x >> rot) | (x << ((64n - rot) & 63n))) & M64;
  }

  nextUint32(): number {
    if (this.hasUint32) {
      this.hasUint32 = false;
      return this.uinteger;
    }
    const next = this.nextUint64();
    this.hasUint32 = true;
    this.uinteger = Number(next >> 32n);
    return Number(next & M32);
  }

  /** numpy `random_interval(max)`: uniform in [0, max] by masked rejection. */
  interval(max: number): number {
    if (max === 0) return 0;
    if (max <= 0xffffffff) {
      let mask = max;
      mask |= mask >>> 1;
      mask |= mask >>> 2;
      mask |= mask >>> 4;
      mask |= mask >>> 8;
      mask |= mask >>> 16;
      mask >>>= 0;
      for (;;) {
        const v = (this.nextUint32() & mask) >>> 0;
        if (v <= max) return v;
      }
    }
    let mask = BigInt(max);
    for (const sh of [1n, 2n, 4n, 8n, 16n, 32n]) mask |= mask >> sh;
    const bmax = BigInt(max);
    for (;;) {
      const v = this.nextUint64() & mask;
      if (v <= bmax) return Number(v);
    }
  }
}

/** `np.random.default_rng(seed).permutation(n)`. */
export function numpyPermutation(seed: number | bigint, n: number): number[] {
  const arr = Array.from({ length: n }, (_, i) => i);
  if (n <= 1) return arr;
  const rng = new Pcg64(seed);
  for (let i = n - 1; i >= 1; i--) {
    const j = rng.interval(i);
    const t = arr[i];
    arr[i] = arr[j];
    arr[j] = t;
  }
  return arr;
}
