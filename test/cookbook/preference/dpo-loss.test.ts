// DPO math against torch goldens (test/fixtures/dpo_gen_goldens.py: the reference's
// compute_dpo_loss + autograd, float32) and hand-computed values.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Datum } from '../../../src/backends/types.js';
import { dpoLoss, dpoLossFn, evenDatums, logSigmoidF32 } from '../../../src/cookbook/preference/dpo-loss.js';

interface Golden {
  beta: number;
  seq_logprobs: number[];
  ref_seq_logprobs: number[];
  logprobs: number[][];
  ref_logprobs: number[][];
  weights: number[][];
  loss: number;
  metrics: Record<string, number>;
  grads: number[][];
}
const goldens = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'dpo_goldens.json'), 'utf8')) as Golden[];

const datum = (weights: number[]): Datum => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens: weights.map((_, i) => i + 1) }] },
  loss_fn_inputs: {
    weights: { data: weights, dtype: 'float32', shape: [weights.length] },
    target_tokens: { data: weights.map((_, i) => i + 2), dtype: 'int64', shape: [weights.length] },
  },
});

const even = <T>(xs: T[]) => xs.filter((_, i) => i % 2 === 0);
const odd = <T>(xs: T[]) => xs.filter((_, i) => i % 2 === 1);
/** |a − b| within `ulps` float32 units of b (torch.dot's BLAS order differs from a left-to-right sum). */
const closeF32 = (a: number, b: number, ulps = 4) => Math.abs(a - b) <= ulps * Math.max(Math.abs(b), 1e-30) * 2 ** -23;

describe('DPO loss against torch (float32, autograd)', () => {
  goldens.forEach((g, k) => {
    const pairs = g.logprobs.length / 2;
    // torch evaluates exp/log1p with SIMD approximations (≤1 ulp); the port rounds the exact
    // log-sigmoid once, so the loss and σ(−z) may differ in the last bit and nothing else.
    it(`case ${k}: ${pairs} pairs, beta ${g.beta}: metrics bit for bit, loss and sequence gradients to 1 ulp`, () => {
      const r = dpoLoss(even(g.seq_logprobs), odd(g.seq_logprobs), even(g.ref_seq_logprobs), odd(g.ref_seq_logprobs), g.beta);
      const { dpo_loss, ...rest } = g.metrics;
      expect({ ...r.metrics, dpo_loss: undefined }).toEqual({ ...rest, dpo_loss: undefined });
      expect(r.metrics.dpo_loss).toBe(r.loss);
      expect(closeF32(r.loss, dpo_loss, 2 * pairs)).toBe(true); // ≤1 ulp per pair, then the mean
      // Autograd's per-token gradient of a chosen datum is g_i·w, so any token with w = 1 shows g_i.
      g.grads.forEach((grad, d) => {
        const t = g.weights[d].indexOf(1);
        expect(closeF32(grad[t], d % 2 === 0 ? r.pairGrads[d >> 1] : -r.pairGrads[d >> 1], 1), `datum ${d}`).toBe(true);
      });
    });
    it(`case ${k}: per-token gradients through dpoLossFn`, () => {
      const out = dpoLossFn(g.ref_logprobs, g.beta)(g.weights.map(datum), g.logprobs);
      expect(closeF32(out.loss, g.loss)).toBe(true);
      for (const [name, value] of Object.entries(g.metrics)) expect(closeF32(out.metrics[name], value, 16) || Math.abs(out.metrics[name] - value) < 1e-6, name).toBe(true);
      out.grads.forEach((grad, d) => grad.forEach((x, t) => expect(closeF32(x, g.grads[d][t], 16), `grad ${d}/${t}`).toBe(true)));
      out.grads.forEach((grad, d) => grad.forEach((x, t) => expect(x === 0).toBe(g.weights[d][t] === 0)));
    });
  });
});

describe('dpoLoss (hand-computed)', () => {
  it('one pair: loss −log σ(z), z = β(Δc − Δr); rewards, margin, accuracy; gradient ∓(β/P)σ(−z)', () => {
    // Δc = −1 − (−2) = 1, Δr = −3 − (−2.5) = −0.5, z = 0.5·1.5 = 0.75
    const r = dpoLoss([-1], [-3], [-2], [-2.5], 0.5);
    expect(r.loss).toBeCloseTo(Math.log1p(Math.exp(-0.75)), 6);
    expect(r.metrics).toEqual({ dpo_loss: r.loss, accuracy: 1, chosen_reward: 0.5, rejected_reward: -0.25, margin: 0.75 });
    expect(r.pairGrads[0]).toBeCloseTo(-0.5 / (1 + Math.exp(0.75)), 6);
  });

  it('accuracy is strict and averaged over pairs; loss is the mean', () => {
    // pair 0: Δc = Δr (tie, not counted), pair 1: Δc < Δr
    const r = dpoLoss([-1, -4], [-1, -1], [-1, -1], [-1, -1], 1);
    expect(r.metrics.accuracy).toBe(0);
    const expected = (Math.log(2) + Math.log1p(Math.exp(3))) / 2;
    expect(r.loss).toBeCloseTo(expected, 5);
    expect(r.metrics.margin).toBe(-1.5);
  });

  it('stays finite for very large |z| (stable log-sigmoid)', () => {
    expect(logSigmoidF32(-200)).toBe(-200);
    expect(logSigmoidF32(200) + 0).toBe(0);
    const r = dpoLoss([-500], [0], [0], [0], 1);
    expect(r.loss).toBe(500);
    expect(r.pairGrads[0]).toBe(-1);
  });

  it('rejects mismatched or empty inputs', () => {
    expect(() => dpoLoss([], [], [], [], 0.1)).toThrow(/no pairs/);
    expect(() => dpoLoss([-1], [-1, -2], [-1], [-1], 0.1)).toThrow(/rejectedLp has 2/);
  });

  it('the weights the server gets (−grad) are +(β/P)σ(−z)·w on chosen tokens and −(β/P)σ(−z)·w on rejected', () => {
    const data = [datum([1, 0, 1]), datum([0, 1])];
    const out = dpoLossFn([[0, 0, 0], [0, 0]], 0.1)(data, [[0, 0, 0], [0, 0]]);
    const s = Math.fround(0.1 * 0.5);
    expect(out.grads[0].map((g) => -g)).toEqual([s, 0, s]);
    expect(out.grads[1].map((g) => -g + 0)).toEqual([0, -s]);
  });

  it('needs chosen/rejected pairs: an odd datum count is refused by the loss and dropped by the guard', () => {
    const data = [datum([1]), datum([1]), datum([1])];
    expect(() => dpoLossFn([[0], [0], [0]], 0.1)(data, [[0], [0], [0]])).toThrow(/even number/);
    const warnings: string[] = [];
    expect(evenDatums(data, (m) => warnings.push(m))).toHaveLength(2);
    expect(warnings[0]).toMatch(/odd number of datums \(3\)/);
    expect(evenDatums(data.slice(0, 2), () => expect.fail('no warning for an even count'))).toHaveLength(2);
  });
});
