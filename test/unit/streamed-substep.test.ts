// The run-store record of a streaming substep: exact round trip of what JSON cannot write, a
// refusal naming the blob for anything else, and the reference's last-wins metric merge.
import { describe, expect, it } from 'vitest';
import { deserializeStreamedSubstep, mergeStreamedSubsteps, serializeStreamedSubstep, type StreamedSubstep } from '../../src/cookbook/rl/streamed-substep.js';

const datum = (logprob: number) => ({
  model_input: { chunks: [{ type: 'encoded_text' as const, tokens: [1, 2] }] },
  loss_fn_inputs: { logprobs: { data: [logprob], dtype: 'float32' as const, shape: [1] } },
});
const substep = (over: Partial<StreamedSubstep>): StreamedSubstep => ({ groups: [], data_D: [], trainLogprobs_D: [], klMetrics: null, optimMetrics: null, ...over });

describe('streamed substep records', () => {
  it('round-trip NaN, ±Infinity, -0 and float32 values exactly', () => {
    const s = substep({
      groups: [{ meta: { ref: 'rollouts/a.json', batch: 0, group: 3, samplingStep: 2, errorTypes: [], meanReward: NaN }, advantages: [-0, 0.1 + 0.2], tags: ['x'] }],
      data_D: [datum(Math.fround(-1.2345678))],
      trainLogprobs_D: [[-Infinity, Math.fround(-0.3)]],
      klMetrics: { 'kl_policy_base': Infinity },
      optimMetrics: { 'optim/grad_norm': 1e-30 },
    });
    const back = deserializeStreamedSubstep(serializeStreamedSubstep(s), 'blob');
    expect(back).toEqual(s);
    expect(Object.is(back.groups[0].advantages[0], -0)).toBe(true);
    expect(Number.isNaN(back.groups[0].meta.meanReward)).toBe(true);
    expect(back.trainLogprobs_D[0][0]).toBe(-Infinity);
  });

  it('refuses a blob of another format, naming it', () => {
    expect(() => deserializeStreamedSubstep('{"format":"trajectory_group/v1"}', 'streaming/step_000001/substep_0000.json')).toThrow(
      /streaming\/step_000001\/substep_0000\.json: not a streamed_substep\/v1 record/,
    );
  });

  it('merges substeps in order; the last KL penalty and optim metrics that exist win', () => {
    const merged = mergeStreamedSubsteps([
      substep({ data_D: [datum(-1)], trainLogprobs_D: [[-1]], klMetrics: { kl: 1 }, optimMetrics: { g: 1 } }),
      substep({ data_D: [datum(-2)], trainLogprobs_D: [[-2]], klMetrics: { kl: 2 }, optimMetrics: { g: 2 } }),
      substep({}), // every group of the last substep dropped: no penalty, no optimizer step
    ]);
    expect(merged.trainLogprobs_D).toEqual([[-1], [-2]]);
    expect(merged.data_D.map((d) => d.loss_fn_inputs.logprobs.data[0])).toEqual([-1, -2]);
    expect(merged.klMetrics).toEqual({ kl: 2 });
    expect(merged.optimMetrics).toEqual({ g: 2 });
    expect(mergeStreamedSubsteps([substep({})]).optimMetrics).toBeNull();
  });

  it('sums the substeps\' token usage; records written before it existed count none', () => {
    const u = (sampled: number, trained = 0) => ({ sampled, prefill_cached: 0, prefill_uncached: 2 * sampled, trained });
    const merged = mergeStreamedSubsteps([substep({ usage: u(3), discarded: u(1) }), substep({}), substep({ usage: u(4), discarded: u(0) })]);
    expect(merged.usage).toEqual(u(7));
    expect(merged.discarded).toEqual(u(1));
  });
});
