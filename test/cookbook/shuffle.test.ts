// numpy parity: goldens from np.random.default_rng(seed).permutation(n) (see the fixture's generator).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { numpyPermutation, seedSequenceState64 } from '../../src/cookbook/shuffle.js';

interface Fixture {
  cases: Array<{ seed: string; n: number; permutation: number[] }>;
  large: Array<{ seed: string; n: number; head: number[]; sha256: string }>;
}
const fixture = JSON.parse(readFileSync(new URL('../fixtures/numpy-permutations.json', import.meta.url), 'utf8')) as Fixture;

describe('numpyPermutation', () => {
  it('SeedSequence(0).generate_state(4, uint64) matches numpy', () => {
    expect(seedSequenceState64(0, 4)).toEqual([
      15793235383387715774n,
      12390638538380655177n,
      2361836109651742017n,
      3188717715514472916n,
    ]);
  });

  it.each(fixture.cases.map((c) => [c.seed, c.n, c.permutation] as const))('seed %s, n %i', (seed, n, perm) => {
    expect(numpyPermutation(BigInt(seed), n)).toEqual(perm);
  });

  it.each(fixture.large.map((c) => [c.seed, c.n, c.head, c.sha256] as const))('large: seed %s, n %i', (seed, n, head, sha) => {
    const p = numpyPermutation(BigInt(seed), n);
    expect(p.slice(0, head.length)).toEqual(head);
    expect(createHash('sha256').update(p.join(',')).digest('hex')).toBe(sha);
  });

  it('accepts plain number seeds', () => {
    expect(numpyPermutation(0, 10)).toEqual([4, 6, 2, 7, 3, 5, 9, 0, 8, 1]);
  });
});
