// Token accounting as the reference's utils/cost_estimation.py (TokenUsage, CostTracker): what a
// training step sampled, prefilled (prefix-cache hits apart) and trained, as `tokens/<kind>`
// metrics, with running totals (`tokens/cumulative/<kind>`) and the sampling of groups dropped
// before training (`tokens/discarded/<kind>`). The reference adds `cost/*` USD estimates only when
// it can download the model's prices; runs here never can, so they log token counts only.
//
// Plain data and pure functions: the totals live in workflow state (small ints, restored with a
// checkpoint), and the activity that writes a step's row gets them as input, so a retried or
// replayed activity writes the same row.

/** Billed token counts by kind, keys in the reference's order. */
export interface TokenUsage {
  sampled: number;
  prefill_cached: number;
  prefill_uncached: number;
  trained: number;
}

export const TOKEN_KINDS = ['sampled', 'prefill_cached', 'prefill_uncached', 'trained'] as const;

/** Every `tokens/…` metric the accounting writes; all of them Python ints. */
export const TOKEN_METRIC_PREFIX = 'tokens/';

export const tokenUsage = (counts: Partial<TokenUsage> = {}): TokenUsage => ({
  sampled: counts.sampled ?? 0,
  prefill_cached: counts.prefill_cached ?? 0,
  prefill_uncached: counts.prefill_uncached ?? 0,
  trained: counts.trained ?? 0,
});

export const NO_TOKENS: Readonly<TokenUsage> = Object.freeze(tokenUsage());

export function addTokens(...usages: TokenUsage[]): TokenUsage {
  const sum = tokenUsage();
  for (const u of usages) for (const kind of TOKEN_KINDS) sum[kind] += u[kind];
  return sum;
}

/** The counts as `<prefix>/<kind>` metrics (`TokenUsage.metrics`). */
export function tokenMetrics(prefix: string, usage: TokenUsage): Record<string, number> {
  return Object.fromEntries(TOKEN_KINDS.map((kind) => [`${prefix}/${kind}`, usage[kind]]));
}

/** A run's running totals: everything counted so far, and the part of it sampled for dropped groups. */
export interface TokenTotals {
  cumulative: TokenUsage;
  discarded: TokenUsage;
}

export const NO_TOKEN_TOTALS: Readonly<TokenTotals> = Object.freeze({ cumulative: NO_TOKENS, discarded: NO_TOKENS });

/**
 * The reference's CostTracker without rates, over totals handed in: record what one step used and
 * read back its metrics and the totals after it.
 */
export class TokenTracker {
  private cumulative: TokenUsage;
  private discarded: TokenUsage;
  private step: TokenUsage = tokenUsage();

  constructor(totals: TokenTotals = NO_TOKEN_TOTALS) {
    this.cumulative = tokenUsage(totals.cumulative);
    this.discarded = tokenUsage(totals.discarded);
  }

  /** Sampling of a group dropped before training: in the totals at once, in no step's counts. */
  recordDiscardedSampling(usage: TokenUsage): void {
    this.cumulative = addTokens(this.cumulative, usage);
    this.discarded = addTokens(this.discarded, usage);
  }

  /** One step's usage; returns its `tokens/<kind>` and `tokens/cumulative/<kind>` metrics. */
  recordStep(usage: TokenUsage): Record<string, number> {
    this.step = tokenUsage(usage);
    this.cumulative = addTokens(this.cumulative, usage);
    return this.stepMetrics();
  }

  /** Usage of the latest step known only after it was recorded (post-update KL scoring); its metrics again. */
  extendStep(usage: TokenUsage): Record<string, number> {
    this.step = addTokens(this.step, usage);
    this.cumulative = addTokens(this.cumulative, usage);
    return this.stepMetrics();
  }

  /** The running totals only (the reference's last row, at step end_batch). */
  cumulativeMetrics(): Record<string, number> {
    return cumulativeTokenMetrics(this.totals);
  }

  get totals(): TokenTotals {
    return { cumulative: tokenUsage(this.cumulative), discarded: tokenUsage(this.discarded) };
  }

  private stepMetrics(): Record<string, number> {
    return { ...tokenMetrics('tokens', this.step), ...tokenMetrics('tokens/cumulative', this.cumulative) };
  }
}

export function cumulativeTokenMetrics(totals: TokenTotals): Record<string, number> {
  return { ...tokenMetrics('tokens/cumulative', totals.cumulative), ...tokenMetrics('tokens/discarded', totals.discarded) };
}

/** The totals as the reference's checkpoint `loop_state` carries them (`asdict` of each TokenUsage). */
export function tokenLoopState(totals: TokenTotals): { cumulative_tokens: TokenUsage; discarded_tokens: TokenUsage } {
  return { cumulative_tokens: tokenUsage(totals.cumulative), discarded_tokens: tokenUsage(totals.discarded) };
}

/** Totals read back from a checkpoint row's loop state; a row written before it carried them: zero. */
export function tokenTotalsFromLoopState(row: Readonly<Record<string, unknown>>): TokenTotals {
  return { cumulative: usageFrom(row.cumulative_tokens), discarded: usageFrom(row.discarded_tokens) };
}

function usageFrom(value: unknown): TokenUsage {
  if (!value || typeof value !== 'object') return tokenUsage();
  const counts = value as Record<string, unknown>;
  return tokenUsage(Object.fromEntries(TOKEN_KINDS.filter((k) => typeof counts[k] === 'number').map((k) => [k, counts[k] as number])));
}
