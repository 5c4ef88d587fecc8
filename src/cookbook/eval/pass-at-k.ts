// pass@k from n samples per example: the unbiased estimator of the Codex paper (Chen et al. 2021),
// 1 − C(n−c, k)/C(n, k), in its product form 1 − Π_{i=n−c+1..n} (1 − k/i), which never forms the
// binomials (C(200, 100) is far past 2^53) and so stays exact to float64 rounding for any n.

/** pass@k of one example with `correct` of `n` samples correct (k ≤ n). */
export function passAtK(n: number, correct: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(correct) || !Number.isInteger(k) || n < 1 || k < 1 || k > n || correct < 0 || correct > n) {
    throw new RangeError(`pass@k needs integers 1 ≤ k ≤ n and 0 ≤ c ≤ n, got n=${n}, c=${correct}, k=${k}`);
  }
  // Fewer wrong samples than k: every draw of k holds a correct one.
  if (n - correct < k) return 1;
  let allWrong = 1;
  for (let i = n - correct + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** The reference's choice when none is configured: 1, the standard 5/10/25/50/100 that fit, and n. */
export function defaultPassAtKs(numSamples: number): number[] {
  const ks = [1, 5, 10, 25, 50, 100].filter((k) => k <= numSamples);
  if (!ks.includes(numSamples)) ks.push(numSamples);
  return ks;
}

/** The ks to report for a config: none for one sample, else the configured list or the reference's. */
export function passAtKsOf(cfg: { num_samples: number; pass_at_k: number[] | null }): number[] {
  if (cfg.pass_at_k) return [...new Set(cfg.pass_at_k)].sort((a, b) => a - b);
  return cfg.num_samples > 1 ? defaultPassAtKs(cfg.num_samples) : [];
}

/** `pass@<k>` → mean over examples of pass@k, each example given as (samples, correct samples). */
export function meanPassAtK(examples: ReadonlyArray<{ n: number; correct: number }>, ks: readonly number[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (examples.length === 0) return out;
  for (const k of ks) out[`pass@${k}`] = examples.reduce((sum, e) => sum + passAtK(e.n, e.correct, k), 0) / examples.length;
  return out;
}
