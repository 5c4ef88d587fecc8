// mulberry32: a tiny, well-known 32-bit seeded PRNG (uniform in [0, 1)); only determinism
// matters where it is used (generated example data, seeded test faults and kill schedules).
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
