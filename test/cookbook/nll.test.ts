// compute_mean_nll (float32) and the reference's compute_bpb cases (spec §1.3).
import { describe, expect, it, vi } from 'vitest';
import { computeBpb, computeMeanNll, type BpbTokenizer } from '../../src/cookbook/supervised/nll.js';

function fakeTokenizer(vocab: Record<number, string>, special: number[] = []): BpbTokenizer {
  return {
    allSpecialIds: special,
    decode: (ids, opts) => ids.filter((i) => !(opts?.skipSpecialTokens && special.includes(i))).map((i) => vocab[i]).join(''),
  };
}
const close = (a: number, b: number) => expect(Math.abs(a - b) / Math.abs(b)).toBeLessThan(1e-6);

describe('computeMeanNll', () => {
  it('is −Σ lp·w / Σ w over the whole batch', () => {
    // Datum 1: −(1·1 + 2·1) = −3 over weight 2; datum 2: −(4·0.5) over 0.5 → 5/2.5 = 2.
    expect(computeMeanNll([[-1, -2], [-4]], [[1, 1], [0.5]])).toBe(2);
  });

  it('computes in float32', () => {
    const v = computeMeanNll([[-0.1, -0.2, -0.3]], [[1, 1, 1]]);
    expect(v).toBe(Math.fround(v));
    // float32: (0.1f + 0.2f) + 0.3f = 0.6000000238418579, / 3 → 0.20000000298023224
    expect(v).toBe(0.20000000298023224);
  });

  it('with mean-reduced weights it is the average per-sequence NLL', () => {
    const t = Math.fround(1 / 3);
    expect(computeMeanNll([[-3, -3, -3], [-1, -1]], [[t, t, t], [0.5, 0.5]])).toBeCloseTo(2, 6);
  });

  it('returns NaN when the total weight is zero', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(computeMeanNll([[-1, -2]], [[0, 0]])).toBeNaN();
    expect(computeMeanNll([], [])).toBeNaN();
    expect(warn).toHaveBeenCalled();
    warn.mockRestore();
  });
});

describe('computeBpb', () => {
  it('matches the hand computation', () => {
    close(computeBpb([[-0.5, -1.5]], [[1, 1]], [[1, 2]], fakeTokenizer({ 1: 'he', 2: 'llo' })), 2 / (Math.LN2 * 5));
  });

  it('ignores zero-weight tokens on both sides', () => {
    const tok = fakeTokenizer({ 1: 'AB', 2: 'x', 3: 'yz' });
    close(computeBpb([[-9, -1, -1]], [[0, 1, 1]], [[1, 2, 3]], tok), 2 / (Math.LN2 * 3));
  });

  it('uses the weight as a mask, not a multiplier', () => {
    const tok = fakeTokenizer({ 1: 'ab', 2: 'cd' });
    close(computeBpb([[-1, -3]], [[1, 1]], [[1, 2]], tok), 4 / (Math.LN2 * 4));
    close(computeBpb([[-1, -3]], [[0.5, 0.5]], [[1, 2]], tok), 4 / (Math.LN2 * 4));
  });

  it('counts UTF-8 bytes, not characters', () => {
    close(computeBpb([[-1, -1]], [[1, 1]], [[1, 2]], fakeTokenizer({ 1: 'café', 2: '中' })), 2 / (Math.LN2 * 8));
  });

  it('excludes special tokens from both sides (list and method)', () => {
    close(computeBpb([[-1, -5]], [[1, 1]], [[1, 99]], fakeTokenizer({ 1: 'hi', 99: '<|end|>' }, [99])), 1 / (Math.LN2 * 2));
    const methodOnly: BpbTokenizer = {
      isSpecialToken: (id) => id === 99,
      decode: (ids) => ids.map((i) => ({ 1: 'hi', 99: '<|end|>' })[i]).join(''),
    };
    close(computeBpb([[-1, -5]], [[1, 1]], [[1, 99]], methodOnly), 1 / (Math.LN2 * 2));
  });

  it('excludes specials under mean reduction', () => {
    const tok = fakeTokenizer({ 1: 'ab', 2: 'cd', 99: '<|end|>' }, [99]);
    const t = Math.fround(1 / 3);
    close(computeBpb([[-1, -3, -9]], [[t, t, t]], [[1, 2, 99]], tok), 4 / (Math.LN2 * 4));
  });

  it('splits runs at specials in multi-turn data', () => {
    const vocab = { 1: 'ab', 2: 'cd', 3: 'ef', 99: '<|end|>' };
    let decoded: number[][] = [];
    const tok: BpbTokenizer = { allSpecialIds: [99], decode: (ids) => (decoded.push(ids), ids.map((i) => vocab[i as 1]).join('')) };
    close(computeBpb([[-1, -2, -8, -3, -8]], [[1, 1, 1, 1, 1]], [[1, 2, 99, 3, 99]], tok), 6 / (Math.LN2 * 6));
    expect(decoded).toEqual([[1, 2], [3]]);
    decoded = [];
    computeBpb([[-1, -1, -1]], [[1, 0, 1]], [[1, 2, 3]], tok);
    expect(decoded).toEqual([[1], [3]]);
  });

  it('aggregates across the batch', () => {
    const tok = fakeTokenizer({ 1: 'ab', 2: 'cde' });
    close(computeBpb([[-1], [-3]], [[1], [1]], [[1], [2]], tok), 4 / (Math.LN2 * 5));
  });

  it('returns NaN with zero bytes', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(computeBpb([[-1]], [[0]], [[1]], fakeTokenizer({ 1: 'a' }))).toBeNaN();
    warn.mockRestore();
  });
});
