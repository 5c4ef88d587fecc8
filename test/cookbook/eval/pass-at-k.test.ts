import { describe, expect, it } from 'vitest';
import { EvalConfigSchema, BenchmarkEvaluatorSchema } from '../../../src/cookbook/eval/benchmark-config.js';
import { aggregateResults, benchmarkSeeds, exampleSeed } from '../../../src/cookbook/eval/benchmark-run.js';
import { defaultPassAtKs, meanPassAtK, passAtK, passAtKsOf } from '../../../src/cookbook/eval/pass-at-k.js';
import { suiteNamed } from '../../../src/cookbook/eval/benchmark-data.js';
import type { ExampleResult } from '../../../src/cookbook/eval/suites/index.js';

/** The definition, 1 − C(n−c, k)/C(n, k), in exact integers (the reference's math.comb form). */
function exact(n: number, c: number, k: number): number {
  const comb = (a: number, b: number): bigint => {
    if (b < 0 || b > a) return 0n;
    let r = 1n;
    for (let i = 1; i <= b; i++) r = (r * BigInt(a - b + i)) / BigInt(i);
    return r;
  };
  const num = comb(n - c, k);
  const den = comb(n, k);
  // 1 − num/den to float64: scale so the quotient keeps 60 bits before the division.
  const scaled = (num << 60n) / den;
  return 1 - Number(scaled) / 2 ** 60;
}

describe('pass@k (unbiased estimator, product form)', () => {
  it('no correct sample: 0 for every k', () => {
    for (const k of [1, 3, 10]) expect(passAtK(10, 0, k)).toBe(0);
  });
  it('every sample correct: 1 for every k', () => {
    for (const k of [1, 5, 10]) expect(passAtK(10, 10, k)).toBe(1);
  });
  it('fewer wrong samples than k: exactly 1 (every draw of k holds a correct one)', () => {
    expect(passAtK(10, 8, 3)).toBe(1);
    expect(passAtK(5, 1, 5)).toBe(1);
    expect(passAtK(4, 2, 3)).toBe(1);
  });
  it('pass@1 is the share of correct samples; k = n is "any correct"', () => {
    expect(passAtK(8, 3, 1)).toBeCloseTo(3 / 8, 15);
    expect(passAtK(8, 3, 8)).toBe(1);
    expect(passAtK(1, 0, 1)).toBe(0);
    expect(passAtK(1, 1, 1)).toBe(1);
  });
  it('small cases by hand: n=5, c=2, k=2 → 1 − C(3,2)/C(5,2) = 0.7', () => {
    expect(passAtK(5, 2, 2)).toBeCloseTo(0.7, 15);
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 15);
  });
  it('agrees with the exact binomial form, also where the binomials pass 2^53 (n = 200)', () => {
    for (const [n, c, k] of [[20, 3, 5], [50, 7, 10], [100, 1, 50], [200, 13, 100], [200, 100, 25], [200, 199, 1], [150, 0, 75]]) {
      expect(Math.abs(passAtK(n!, c!, k!) - exact(n!, c!, k!))).toBeLessThan(1e-12);
    }
  });
  it('refuses k > n, c > n and non-integers, naming the numbers', () => {
    expect(() => passAtK(4, 1, 5)).toThrow(/n=4, c=1, k=5/);
    expect(() => passAtK(4, 5, 1)).toThrow(/n=4, c=5/);
    expect(() => passAtK(4, 1.5, 1)).toThrow(RangeError);
  });
  it('averages over examples; default ks are the reference\'s (1, 5, 10, 25, 50, 100 that fit, and n)', () => {
    expect(meanPassAtK([{ n: 4, correct: 0 }, { n: 4, correct: 4 }, { n: 4, correct: 1 }], [1, 2])).toEqual({
      'pass@1': (0 + 1 + 0.25) / 3,
      'pass@2': (0 + 1 + 0.5) / 3,
    });
    expect(defaultPassAtKs(1)).toEqual([1]);
    expect(defaultPassAtKs(4)).toEqual([1, 4]);
    expect(defaultPassAtKs(12)).toEqual([1, 5, 10, 12]);
    expect(defaultPassAtKs(100)).toEqual([1, 5, 10, 25, 50, 100]);
    expect(passAtKsOf({ num_samples: 1, pass_at_k: null })).toEqual([]);
    expect(passAtKsOf({ num_samples: 8, pass_at_k: [4, 1, 4] })).toEqual([1, 4]);
  });
});

describe('pass@k in eval configs and results', () => {
  it('a k above num_samples is refused, naming pass_at_k and the index (eval config and benchmark evaluator)', () => {
    const bad = EvalConfigSchema.safeParse({ model: 'm', suite: 'gsm8k', num_samples: 4, pass_at_k: [1, 5] });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(['pass_at_k', 1]);
    expect(bad.error!.issues[0]!.message).toMatch(/pass@5 needs num_samples ≥ 5 \(num_samples is 4\)/);
    expect(BenchmarkEvaluatorSchema.safeParse({ kind: 'benchmark', suite: 'gsm8k', pass_at_k: [2] }).success).toBe(false);
    const ok = EvalConfigSchema.parse({ model: 'm', suite: 'gsm8k', num_samples: 4, pass_at_k: [1, 4] });
    expect(ok.num_samples).toBe(4);
    expect(EvalConfigSchema.parse({ model: 'm', suite: 'gsm8k' })).toMatchObject({ num_samples: 1, pass_at_k: null });
  });

  it('sample seeds: sample 0 keeps the one-sample seed, every (example, sample) has its own', () => {
    const seeds = benchmarkSeeds(7, 'gsm8k');
    expect(seeds(3, 0)).toBe(exampleSeed(7, 'gsm8k', 3));
    const all = new Set<number>();
    for (let i = 0; i < 20; i++) for (let s = 0; s < 8; s++) all.add(seeds(i, s));
    expect(all.size).toBe(160);
    expect(benchmarkSeeds(8, 'gsm8k')(3, 1)).not.toBe(seeds(3, 1));
    expect(benchmarkSeeds(7, 'math500')(3, 1)).not.toBe(seeds(3, 1));
  });

  it('aggregates score over every sample and pass@k over examples; one sample per example reports no pass@k unless asked', () => {
    const suite = suiteNamed('gsm8k');
    const ex = (index: number, correct: boolean[]): ExampleResult => ({
      index, id: String(index), prompt: 'p', response: 'r0', expected: '1', extracted: '', correct: correct[0]!,
      ...(correct.length > 1 ? { samples: correct.map((c, s) => ({ response: `r${s}`, extracted: '', correct: c })) } : {}),
    });
    const multi = aggregateResults(suite, [ex(0, [false, false, false, false]), ex(1, [true, false, true, false])], [1, 2, 4]);
    expect(multi).toMatchObject({ score: 2 / 8, num_correct: 2, num_examples: 2, num_samples: 8 });
    // Examples as the unit: scores 0 and 1/2, standard deviation √(1/8), over √2.
    expect(multi.score_stderr).toBeCloseTo(0.25, 15);
    expect(multi['pass@1']).toBeCloseTo(0.25, 15);
    expect(multi['pass@2']).toBeCloseTo((0 + (1 - 1 / 6)) / 2, 15);
    expect(multi['pass@4']).toBe(0.5);
    const single = aggregateResults(suite, [ex(0, [true]), ex(1, [false])]);
    expect(single).toEqual({ score: 0.5, num_correct: 1, num_examples: 2, score_stderr: 0.5 });
    expect(aggregateResults(suite, [ex(0, [true]), ex(1, [false])], [1])).toEqual({ score: 0.5, num_correct: 1, num_examples: 2, score_stderr: 0.5, 'pass@1': 0.5 });
    // No standard error from one example.
    expect(aggregateResults(suite, [ex(0, [true])])).toEqual({ score: 1, num_correct: 1, num_examples: 1 });
  });
});
