import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../src/cookbook/errors.js';
import { lrMultiplier } from '../../src/cookbook/lr-schedule.js';

describe('lrMultiplier (spec §7.3)', () => {
  it('linear is 1 − step/total and never reaches 0', () => {
    expect([0, 1, 2, 3].map((s) => lrMultiplier('linear', s, 4))).toEqual([1, 0.75, 0.5, 0.25]);
  });

  it('cosine for total=10 matches the spec table', () => {
    const expected = [1.0, 0.97553, 0.90451, 0.79389, 0.65451, 0.5, 0.34549, 0.20611, 0.09549, 0.02447];
    expected.forEach((v, s) => expect(lrMultiplier('cosine', s, 10)).toBeCloseTo(v, 5));
    expect(lrMultiplier('cosine', 3, 10)).toBe(0.7938926261462366); // Python repr of the same formula
  });

  it('constant is 1', () => {
    expect(lrMultiplier('constant', 7, 10)).toBe(1);
  });

  it('rejects total_steps ≤ 0 and unknown schedules', () => {
    expect(() => lrMultiplier('linear', 0, 0)).toThrow(ConfigurationError);
    expect(() => lrMultiplier('warmup' as never, 0, 10)).toThrow(/Unknown learning rate schedule: warmup/);
  });
});
