// §2.10 KL terms against numpy float32 goldens (test/fixtures/rl_kl_goldens.json).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Datum } from '../../../src/backends/types.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import {
  alignScoredLogprobs,
  computeKlSampleTrain,
  computePostKl,
  discountedFutureSum,
  fullSequenceForScoring,
  incorporateKlPenalty,
} from '../../../src/cookbook/rl/kl.js';

const g = JSON.parse(readFileSync(new URL('../../fixtures/rl_kl_goldens.json', import.meta.url), 'utf8'));

function makeData(): Datum[] {
  return (g.data as Array<{ logprobs: number[]; mask: number[]; advantages: number[] }>).map((d, i) => {
    const n = d.logprobs.length;
    const f32 = (xs: number[]) => ({ data: xs.map(Math.fround), dtype: 'float32' as const, shape: [n] });
    return {
      model_input: { chunks: [{ type: 'encoded_text', tokens: Array.from({ length: n }, (_, t) => 100 * i + t) }] },
      loss_fn_inputs: {
        target_tokens: { data: Array.from({ length: n }, (_, t) => 100 * i + t + 1), dtype: 'int64', shape: [n] },
        logprobs: f32(d.logprobs),
        mask: f32(d.mask),
        advantages: f32(d.advantages),
      },
    };
  });
}

describe('incorporateKlPenalty', () => {
  it('matches the float32 goldens with a discount', () => {
    const data = makeData();
    const out = incorporateKlPenalty(data, g.base, g.coef, g.gamma);
    expect(out.kl_policy_base).toBe(g.kl_policy_base);
    expect(data.map((d) => d.loss_fn_inputs.advantages.data)).toEqual(g.advantages_gamma);
    // The discount spreads penalties onto prompt positions before actions (the reference quirk).
    expect(data[1].loss_fn_inputs.advantages.data[0]).not.toBe(0);
  });

  it('without a discount only action positions change', () => {
    const data = makeData();
    incorporateKlPenalty(data, g.base, g.coef, 0);
    expect(data.map((d) => d.loss_fn_inputs.advantages.data)).toEqual(g.advantages_no_discount);
    expect(data[1].loss_fn_inputs.advantages.data.slice(0, 2)).toEqual([0, 0]);
  });

  it('rejects misaligned base logprobs', () => {
    expect(() => incorporateKlPenalty(makeData(), [[0], [0]], 0.1, 0)).toThrow(/base logprobs/);
  });
});

describe('computeKlSampleTrain / computePostKl', () => {
  it('match the float32 goldens', () => {
    expect(computeKlSampleTrain(makeData(), g.train)).toEqual({
      'optim/kl_sample_train_v1': g.kl_sample_train.v1,
      'optim/kl_sample_train_v2': g.kl_sample_train.v2,
      'optim/entropy': g.kl_sample_train.entropy,
    });
    expect(computePostKl(makeData(), g.train)).toEqual({ kl_pre_post_v1: g.kl_sample_train.v1, kl_pre_post_v2: g.kl_sample_train.v2 });
  });
  it('asserts at least one action token', () => {
    const data = makeData();
    for (const d of data) d.loss_fn_inputs.mask.data = d.loss_fn_inputs.mask.data.map(() => 0);
    expect(() => computeKlSampleTrain(data, g.train)).toThrow(/no action tokens/);
  });
});

describe('helpers', () => {
  it('discountedFutureSum is a backward scan', () => {
    expect(discountedFutureSum([1, 1, 1], 0.5)).toEqual([1.75, 1.5, 1]);
    expect(discountedFutureSum([], 0.9)).toEqual([]);
  });
  it('fullSequenceForScoring appends the last target token', () => {
    const [d] = makeData();
    expect(modelInputToInts(fullSequenceForScoring(d))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(modelInputToInts(d.model_input)).toEqual([0, 1, 2, 3, 4]);
  });
  it('alignScoredLogprobs drops the leading null', () => {
    expect(alignScoredLogprobs([null, -1, -2])).toEqual([-1, -2]);
    expect(() => alignScoredLogprobs([null, null])).toThrow();
  });
});
