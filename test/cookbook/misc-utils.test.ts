// Expected values from numpy 2.4 (np.mean, np.linspace(...).astype(int)).
import { describe, expect, it } from 'vitest';
import { allSame, dictMean, iterationDir, npMean, safezip, splitList } from '../../src/cookbook/misc-utils.js';

describe('misc utils (spec §7.6)', () => {
  it('npMean uses numpy pairwise summation', () => {
    const ys = [0.1, 0.2, 0.3, 0.7, 1e-9, 3.3, 2.2, 1.1, 0.05, 9.9, 0.01];
    expect(npMean(ys)).toBe(1.6236363637272726); // a naive left-to-right sum gives …273
    const xs = Array.from({ length: 300 }, (_, i) => 0.1 * i + 1e-3 * (i % 7));
    expect(npMean(xs)).toBe(14.952990000000003);
  });

  it('dictMean averages each key over the dicts that have it', () => {
    expect(dictMean([{ a: 1, b: 2 }, { a: 3 }])).toEqual({ a: 2, b: 2 });
  });

  it('splitList uses floor(linspace) edges and validates', () => {
    const sizes = (n: number, k: number) => splitList(Array.from({ length: n }, (_, i) => i), k).map((p) => p.length);
    expect(sizes(5, 2)).toEqual([2, 3]);
    expect(sizes(5, 3)).toEqual([1, 2, 2]);
    expect(sizes(10, 3)).toEqual([3, 3, 4]);
    expect(sizes(100, 6)).toEqual([16, 17, 17, 16, 17, 17]);
    expect(sizes(7, 7)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(() => splitList([], 0)).toThrow();
    expect(() => splitList([1], 2)).toThrow();
  });

  it('allSame, iterationDir, safezip', () => {
    expect(allSame([])).toBe(true);
    expect(allSame([1, 1])).toBe(true);
    expect(allSame([1, 2])).toBe(false);
    expect(iterationDir('/logs/run', 7)).toBe('/logs/run/iteration_000007');
    expect(safezip([1, 2], ['a', 'b'])).toEqual([[1, 'a'], [2, 'b']]);
    expect(() => safezip([1], [])).toThrow();
  });
});
