// Token accounting (the reference's utils/cost_estimation.py CostTracker and rl/train.py's usage
// functions) against hand-computed numbers; the expected rows are what the reference's tracker
// returns for the same calls (checked against tinker-cookbook 0.6.1).
import { describe, expect, it } from 'vitest';
import type { Datum, ModelInput, SampleResponse, SamplingSession } from '../../src/backends/types.js';
import { modelInputFromInts } from '../../src/cookbook/model-input.js';
import { rolloutUsage, scoreSequences, scoringUsage, trainingUsage } from '../../src/cookbook/rl/usage.js';
import { TrajectoryGroup } from '../../src/cookbook/rl/types.js';
import {
  addTokens,
  cumulativeTokenMetrics,
  tokenLoopState,
  tokenTotalsFromLoopState,
  TokenTracker,
  tokenUsage,
} from '../../src/cookbook/token-usage.js';
import { traj, transition } from './rl/helpers.js';

const usage = (sampled: number, prefill_cached: number, prefill_uncached: number, trained: number) => tokenUsage({ sampled, prefill_cached, prefill_uncached, trained });

describe('TokenTracker (the reference CostTracker without rates)', () => {
  it('records discarded sampling, a step and its post-KL extension as the reference does', () => {
    const tracker = new TokenTracker({ cumulative: usage(1, 2, 3, 4), discarded: usage(1, 0, 1, 0) });
    tracker.recordDiscardedSampling(usage(5, 1, 4, 0));
    expect(tracker.recordStep(usage(10, 2, 8, 30))).toEqual({
      'tokens/sampled': 10, 'tokens/prefill_cached': 2, 'tokens/prefill_uncached': 8, 'tokens/trained': 30,
      'tokens/cumulative/sampled': 16, 'tokens/cumulative/prefill_cached': 5, 'tokens/cumulative/prefill_uncached': 15, 'tokens/cumulative/trained': 34,
    });
    const extended = tracker.extendStep(usage(2, 0, 40, 0));
    expect(Object.keys(extended)).toEqual([
      'tokens/sampled', 'tokens/prefill_cached', 'tokens/prefill_uncached', 'tokens/trained',
      'tokens/cumulative/sampled', 'tokens/cumulative/prefill_cached', 'tokens/cumulative/prefill_uncached', 'tokens/cumulative/trained',
    ]);
    expect(extended).toMatchObject({ 'tokens/sampled': 12, 'tokens/prefill_uncached': 48, 'tokens/cumulative/sampled': 18, 'tokens/cumulative/prefill_uncached': 55 });
    expect(tracker.cumulativeMetrics()).toEqual({
      'tokens/cumulative/sampled': 18, 'tokens/cumulative/prefill_cached': 5, 'tokens/cumulative/prefill_uncached': 55, 'tokens/cumulative/trained': 34,
      'tokens/discarded/sampled': 6, 'tokens/discarded/prefill_cached': 1, 'tokens/discarded/prefill_uncached': 5, 'tokens/discarded/trained': 0,
    });
    expect(tracker.totals).toEqual({ cumulative: usage(18, 5, 55, 34), discarded: usage(6, 1, 5, 0) });
  });

  it('never changes the totals it was given (workflow state stays as it was until the result returns)', () => {
    const given = { cumulative: usage(1, 1, 1, 1), discarded: usage(0, 0, 0, 0) };
    new TokenTracker(given).recordStep(usage(5, 5, 5, 5));
    expect(given).toEqual({ cumulative: usage(1, 1, 1, 1), discarded: usage(0, 0, 0, 0) });
  });

  it('a supervised step: nothing sampled or prefilled, cumulative trained = elapsed_tokens after it', () => {
    const tracker = new TokenTracker({ cumulative: usage(0, 0, 0, 120), discarded: usage(0, 0, 0, 0) });
    expect(tracker.recordStep(tokenUsage({ trained: 37 }))).toEqual({
      'tokens/sampled': 0, 'tokens/prefill_cached': 0, 'tokens/prefill_uncached': 0, 'tokens/trained': 37,
      'tokens/cumulative/sampled': 0, 'tokens/cumulative/prefill_cached': 0, 'tokens/cumulative/prefill_uncached': 0, 'tokens/cumulative/trained': 157,
    });
  });
});

describe('token totals in checkpoint rows', () => {
  it('are the reference loop state dicts, and read back to the same totals', () => {
    const totals = { cumulative: usage(18, 5, 55, 34), discarded: usage(6, 1, 5, 0) };
    const row = { batch: 3, ...tokenLoopState(totals) };
    expect(JSON.stringify(row)).toBe(
      '{"batch":3,"cumulative_tokens":{"sampled":18,"prefill_cached":5,"prefill_uncached":55,"trained":34},"discarded_tokens":{"sampled":6,"prefill_cached":1,"prefill_uncached":5,"trained":0}}',
    );
    expect(tokenTotalsFromLoopState(JSON.parse(JSON.stringify(row)))).toEqual(totals);
  });
  it('rows written before they existed resume from zero, as the reference', () => {
    expect(tokenTotalsFromLoopState({ batch: 3 })).toEqual({ cumulative: usage(0, 0, 0, 0), discarded: usage(0, 0, 0, 0) });
    expect(cumulativeTokenMetrics(tokenTotalsFromLoopState({ cumulative_tokens: { trained: 9 } }))['tokens/cumulative/trained']).toBe(9);
  });
});

describe('RL usage', () => {
  const cachedTurn = (ob: number[], ac: number[], hits: number) => {
    const t = transition(ob, ac, { episodeDone: true });
    return { ...t, ac: { ...t.ac, promptCacheHitTokens: hits } };
  };

  it('rollouts: every action token sampled, every observation prefilled, split by the reported cache hits', () => {
    // Two trajectories of one and two turns: 1+2+1 sampled; prompts 4+3+5 = 12 tokens, 3+2+0 cached.
    const g1 = new TrajectoryGroup([traj([cachedTurn([1, 2, 3, 4], [5], 3)])], [0], [{}]);
    const g2 = new TrajectoryGroup([traj([cachedTurn([1, 2, 3], [6, 7], 2), transition([1, 2, 3, 6, 7], [8])])], [0], [{}]);
    expect(rolloutUsage([g1, g2])).toEqual(usage(4, 5, 7, 0));
    expect(rolloutUsage([])).toEqual(usage(0, 0, 0, 0));
  });

  it('training: the tokens of the datums sent to forward_backward', () => {
    const datum = (n: number): Datum => ({ model_input: modelInputFromInts(Array.from({ length: n }, (_, i) => i)), loss_fn_inputs: {} });
    expect(trainingUsage([datum(7), datum(5)])).toEqual(usage(0, 0, 0, 12));
  });

  it('scoring: the prompts split by each response’s cache hits, and what the responses sampled', async () => {
    const prompts = [modelInputFromInts([1, 2, 3]), modelInputFromInts([1, 2, 3, 4, 5])];
    const response = (prompt: ModelInput, hits: number): SampleResponse => ({
      sequences: [{ tokens: [9], stop_reason: 'length' }],
      prompt_logprobs: [null, ...prompt.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens.slice(1) : [])).map((t) => -t)],
      ...(hits ? { prompt_cache_hit_tokens: hits } : {}),
    });
    expect(scoringUsage(prompts, [response(prompts[0], 0), response(prompts[1], 3)])).toEqual(usage(2, 3, 5, 0));

    const sent: Array<{ max_tokens?: number; promptLogprobs?: boolean }> = [];
    const sampler = {
      async sample(prompt: ModelInput, _n: number, params: { max_tokens?: number }, opts?: { includePromptLogprobs?: boolean }) {
        sent.push({ max_tokens: params.max_tokens, promptLogprobs: opts?.includePromptLogprobs });
        return response(prompt, prompt.chunks[0].type === 'encoded_text' && prompt.chunks[0].tokens.length > 3 ? 4 : 0);
      },
    } as unknown as SamplingSession;
    const scored = await scoreSequences(sampler, prompts);
    expect(sent).toEqual([{ max_tokens: 1, promptLogprobs: true }, { max_tokens: 1, promptLogprobs: true }]);
    expect(scored.logprobs).toEqual([[null, -2, -3], [null, -2, -3, -4, -5]]);
    expect(scored.usage).toEqual(addTokens(usage(1, 0, 3, 0), usage(1, 4, 1, 0)));
  });
});
