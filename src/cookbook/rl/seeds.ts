// Deterministic seeds from a logical position (DESIGN §3.2): a run seed plus integers such as
// (step, group, sample, attempt, turn) hash to one sampling seed, independent of scheduling.

const M64 = (1n << 64n) - 1n;

/** splitmix64's finaliser: a bijective mix of a 64-bit word. */
function mix64(z: bigint): bigint {
  z = (z + 0x9e3779b97f4a7c15n) & M64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}

/** A seed in [0, 2^31) derived from integer parts; the same parts always give the same seed. */
export function deriveSeed(...parts: number[]): number {
  let h = 0x243f6a8885a308d3n;
  for (const p of parts) {
    if (!Number.isSafeInteger(p)) throw new RangeError(`deriveSeed: part ${p} is not a safe integer`);
    h = mix64(h ^ (BigInt.asUintN(64, BigInt(p)) & M64));
  }
  return Number(h & 0x7fffffffn);
}

/** A `seedFor` that yields deriveSeed(...prefix, 0), deriveSeed(...prefix, 1), … per call. */
export function sequentialSeeds(...prefix: number[]): () => number {
  let call = 0;
  return () => deriveSeed(...prefix, call++);
}
