// Checks of a run's token accounting (the reference's tokens/* metrics and the totals in its
// checkpoint rows) from the files it left behind: every total exact, nothing counted twice.
import { expect } from 'vitest';
import { NO_TOKEN_TOTALS, TOKEN_KINDS, type TokenTotals, type TokenUsage } from '../../src/cookbook/token-usage.js';

type Row = Record<string, unknown>;
const usageAt = (row: Row, prefix: string): TokenUsage => Object.fromEntries(TOKEN_KINDS.map((k) => [k, row[`${prefix}/${k}`] as number])) as unknown as TokenUsage;

/**
 * The totals after each step that logged tokens, checked as they go: a step row carries the step's
 * counts and the running totals, which grow by exactly the step's counts plus what was discarded
 * meanwhile (sampling only, never trained tokens), from `start` (a continued run's parent's).
 */
export function tokenTotalsByStep(rows: Row[], start: TokenTotals = NO_TOKEN_TOTALS): Map<number, TokenTotals> {
  const byStep = new Map<number, TokenTotals>();
  let cumulative = { ...start.cumulative };
  let discarded = { ...start.discarded };
  for (const row of rows.filter((r) => 'tokens/trained' in r)) {
    const step = usageAt(row, 'tokens');
    const after = usageAt(row, 'tokens/cumulative');
    const nextDiscarded = { ...discarded };
    for (const kind of TOKEN_KINDS) {
      const discardedMeanwhile = after[kind] - cumulative[kind] - step[kind];
      expect(discardedMeanwhile, `step ${row.step}: tokens/cumulative/${kind}`).toBeGreaterThanOrEqual(0);
      if (kind === 'trained') expect(discardedMeanwhile, `step ${row.step}: trained tokens are never discarded`).toBe(0);
      nextDiscarded[kind] += discardedMeanwhile;
    }
    cumulative = after;
    discarded = nextDiscarded;
    byStep.set(row.step as number, { cumulative, discarded });
  }
  return byStep;
}

/**
 * RL: the step rows' totals are exact, the closing row (step = `steps`, the end) holds the totals
 * and their discarded part, and every checkpoint row's loop state holds the totals after the last
 * step it contains. Returns the final totals.
 */
export function expectRlTokenTotals(rows: Row[], checkpoints: Row[], steps: number, start: TokenTotals = NO_TOKEN_TOTALS): TokenTotals {
  const byStep = tokenTotalsByStep(rows, start);
  const totalsAfter = (step: number) => [...byStep].filter(([s]) => s <= step).at(-1)?.[1] ?? start;
  const final = totalsAfter(steps - 1);
  const closing = rows.at(-1)!;
  expect(closing.step).toBe(steps);
  expect(Object.keys(closing)).toEqual(['step', ...TOKEN_KINDS.map((k) => `tokens/cumulative/${k}`), ...TOKEN_KINDS.map((k) => `tokens/discarded/${k}`)]);
  expect({ cumulative: usageAt(closing, 'tokens/cumulative'), discarded: usageAt(closing, 'tokens/discarded') }).toEqual(final);
  for (const ckpt of checkpoints) {
    const after = ckpt.name === 'final' ? final : totalsAfter((ckpt.batch as number) - 1);
    expect({ cumulative: ckpt.cumulative_tokens, discarded: ckpt.discarded_tokens }, `checkpoint ${ckpt.name}`).toEqual(after);
  }
  return final;
}

/** The rows of RL's steps: without its closing row (the token totals at step end, the only row with tokens/discarded/*). */
export const stepRows = (rows: Row[]): Row[] => rows.filter((r) => !('tokens/discarded/sampled' in r));
