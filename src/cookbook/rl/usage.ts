// What RL's requests are billed for (the reference's rl/train.py rollout_usage / training_usage and
// rl/metrics.py score_sequences), counted from what was sent and what each response reports.

import { BackendError, type Datum, type ModelInput, type SampleResponse, type SamplingSession } from '../../backends/types.js';
import { modelInputLength } from '../model-input.js';
import { tokenUsage, type TokenUsage } from '../token-usage.js';
import type { TrajectoryGroup } from './types.js';

/**
 * The sampling the groups' rollouts were billed for: every action token sampled, every turn's
 * observation prefilled, split by the prefix-cache hits the sampler reported for that turn.
 */
export function rolloutUsage(groups: readonly TrajectoryGroup[]): TokenUsage {
  let sampled = 0;
  let prompt = 0;
  let cached = 0;
  for (const g of groups) {
    for (const traj of g.trajectoriesG) {
      for (const t of traj.transitions) {
        sampled += t.ac.tokens.length;
        prompt += modelInputLength(t.ob);
        cached += t.ac.promptCacheHitTokens ?? 0;
      }
    }
  }
  return tokenUsage({ sampled, prefill_cached: cached, prefill_uncached: prompt - cached });
}

/** The tokens in the datums sent to forward_backward (shared prefixes across turns appear once). */
export function trainingUsage(data_D: readonly Datum[]): TokenUsage {
  return tokenUsage({ trained: data_D.reduce((n, d) => n + modelInputLength(d.model_input), 0) });
}

/** What scoring requests used: their prompts split by reported cache hits, and what they sampled. */
export function scoringUsage(prompts: readonly ModelInput[], responses: readonly SampleResponse[]): TokenUsage {
  const prompt = prompts.reduce((n, p) => n + modelInputLength(p), 0);
  const cached = responses.reduce((n, r) => n + (r.prompt_cache_hit_tokens ?? 0), 0);
  const sampled = responses.reduce((n, r) => n + r.sequences.reduce((m, s) => m + s.tokens.length, 0), 0);
  return tokenUsage({ sampled, prefill_cached: cached, prefill_uncached: prompt - cached });
}

/**
 * Prompt logprobs of each sequence under a sampler, and what the requests used: one `sample` with
 * prompt logprobs and max_tokens 1 per sequence (the request `computeLogprobs` makes), keeping the
 * whole response so its usage can be counted, as the reference's score_sequences.
 */
export async function scoreSequences(sampler: SamplingSession, prompts: readonly ModelInput[]): Promise<{ logprobs: Array<Array<number | null>>; usage: TokenUsage }> {
  const responses = await Promise.all(prompts.map((p) => sampler.sample(p, 1, { max_tokens: 1 }, { includePromptLogprobs: true })));
  const logprobs = responses.map((r) => {
    if (!r.prompt_logprobs) throw new BackendError('compute_logprobs: server returned no prompt_logprobs', 200, 'Sample', r, 'server');
    return r.prompt_logprobs;
  });
  return { logprobs, usage: scoringUsage(prompts, responses) };
}
