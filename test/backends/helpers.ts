import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import type { TinkerBackendOptions } from '../../src/backends/config.js';
import type { Datum } from '../../src/backends/types.js';

/** Millisecond-scale retry budgets so fault tests run fast; the shape of the policy is unchanged. */
export const FAST_RETRY = { baseDelayMs: 5, maxDelayMs: 40, pollMaxDelayMs: 40, budgetMs: 10_000 };

export function backendFor(baseUrl: string, opts: TinkerBackendOptions = {}): TinkerBackend {
  return createTinkerBackend({ baseUrl, apiKey: 'tml-test', retry: FAST_RETRY, env: {}, ...opts });
}

/** A next-token-prediction datum: input = seq[:-1], targets = seq[1:]. */
export function sftDatum(seq: number[], weights?: number[]): Datum {
  const input = seq.slice(0, -1);
  const targets = seq.slice(1);
  return {
    model_input: { chunks: [{ type: 'encoded_text', tokens: input }] },
    loss_fn_inputs: {
      target_tokens: { data: targets, dtype: 'int64', shape: [targets.length] },
      weights: { data: weights ?? targets.map(() => 1), dtype: 'float32', shape: [targets.length] },
    },
  };
}
