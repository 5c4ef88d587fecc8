// Small helpers of the reference's tc/utils/misc_utils.py (spec §7.6).

/** Each key averaged over the dicts that contain it (float64, like np.mean). */
export function dictMean(dicts: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const sums = new Map<string, number[]>();
  for (const d of dicts) {
    for (const [k, v] of Object.entries(d)) {
      let xs = sums.get(k);
      if (!xs) sums.set(k, (xs = []));
      xs.push(v);
    }
  }
  const out: Record<string, number> = {};
  for (const [k, xs] of sums) out[k] = npMean(xs);
  return out;
}

/**
 * np.mean of a 1-d float64 array: numpy sums with pairwise summation (blocks of 8 partial sums
 * below 128 elements, recursive halves above), then divides by the count.
 */
export function npMean(xs: readonly number[]): number {
  return pairwiseSum(xs, 0, xs.length) / xs.length;
}

function pairwiseSum(a: readonly number[], start: number, n: number): number {
  if (n < 8) {
    let res = 0;
    for (let i = 0; i < n; i++) res += a[start + i];
    return res;
  }
  if (n <= 128) {
    const r = [a[start], a[start + 1], a[start + 2], a[start + 3], a[start + 4], a[start + 5], a[start + 6], a[start + 7]];
    let i = 8;
    for (; i < n - (n % 8); i += 8) for (let k = 0; k < 8; k++) r[k] += a[start + i + k];
    let res = r[0] + r[1] + (r[2] + r[3]) + (r[4] + r[5] + (r[6] + r[7]));
    for (; i < n; i++) res += a[start + i];
    return res;
  }
  let n2 = Math.floor(n / 2);
  n2 -= n2 % 8;
  return pairwiseSum(a, start, n2) + pairwiseSum(a, start + n2, n - n2);
}

/** Every element equals the first; true for an empty list. */
export function allSame<T>(xs: readonly T[]): boolean {
  return xs.every((x) => x === xs[0]);
}

/** Split into `numSplits` contiguous parts at numpy `linspace(0, n, k+1).astype(int)` edges. */
export function splitList<T>(xs: readonly T[], numSplits: number): T[][] {
  if (numSplits <= 0) throw new RangeError(`num_splits must be positive, got ${numSplits}`);
  if (numSplits > xs.length) throw new RangeError(`Cannot split list of length ${xs.length} into ${numSplits} parts`);
  const step = xs.length / numSplits;
  const edges = Array.from({ length: numSplits + 1 }, (_, j) => (j === numSplits ? xs.length : Math.trunc(j * step)));
  return Array.from({ length: numSplits }, (_, i) => xs.slice(edges[i], edges[i + 1]));
}

/** `log_path/iteration_{step:06d}`. */
export function iterationDir(logPath: string, step: number): string {
  return `${logPath.replace(/\/+$/, '')}/iteration_${String(step).padStart(6, '0')}`;
}

/** A strict zip: throws when the lists differ in length. */
export function safezip<A, B>(a: readonly A[], b: readonly B[]): Array<[A, B]> {
  if (a.length !== b.length) throw new RangeError(`safezip: lengths differ (${a.length} vs ${b.length})`);
  return a.map((x, i) => [x, b[i]]);
}

/** Python's round() on a float: to the nearest integer, halves to the even one. */
export function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}
