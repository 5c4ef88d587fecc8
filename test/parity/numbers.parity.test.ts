// Parity with the Python reference on the numbers a run depends on: the served-model table with
// its LR hint and LoRA parameter counts, LR schedules, RL group advantages (float32), math
// grading verdicts, the dataset shuffle order, datum construction and truncation, the DPO loss
// and its metrics, and the KL / entropy metrics. Every expected value comes from the reference
// at test time.
import { describe, expect, it } from 'vitest';
import { lrMultiplier, type LrSchedule } from '../../src/cookbook/lr-schedule.js';
import { dpoLoss } from '../../src/cookbook/preference/dpo-loss.js';
import { computeKlSampleTrain, discountedFutureSum } from '../../src/cookbook/rl/kl.js';
import { datumFromModelInputWeights, type Reduction } from '../../src/cookbook/supervised/datum.js';
import type { Datum } from '../../src/backends/types.js';
import { getLoraParamCount, getLr, getModelAttributes } from '../../src/cookbook/model-info.js';
import { computeAdvantages } from '../../src/cookbook/rl/advantages.js';
import { extractBoxed, gradeAnswer, normalizeAnswer } from '../../src/cookbook/rl/grading.js';
import type { TrajectoryGroup } from '../../src/cookbook/rl/types.js';
import { numpyPermutation } from '../../src/cookbook/shuffle.js';
import { outcome, referenceCases, sameOutcome, type Outcome, type ReferenceCase } from './reference.js';

const [modelInfo, lrSchedule, advantages, grading, shuffle, datum, dpo, kl] = await referenceCases([
  { topic: 'model_info' },
  { topic: 'lr_schedule' },
  { topic: 'advantages' },
  { topic: 'grading' },
  { topic: 'shuffle' },
  { topic: 'datum' },
  { topic: 'dpo' },
  { topic: 'kl' },
]);

const describeCase = (c: ReferenceCase, ts: unknown) =>
  `${c.id}\ninput: ${JSON.stringify(c.input)}\nreference: ${JSON.stringify(c.expected)}\nours: ${JSON.stringify(ts)}`;

function expectSame(c: ReferenceCase, ts: Outcome, ref: Outcome): void {
  const { ts: got, ref: want } = sameOutcome(ts, ref);
  expect(got, describeCase(c, ts)).toEqual(want);
}

describe('model info: attributes, get_lr, get_lora_param_count', () => {
  type Expected = { attributes: Outcome; lr_lora: Outcome; lr_full: Outcome; lora_params: Record<string, Outcome> };
  it.each((modelInfo as ReferenceCase<{ model_name: string }, Expected>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const name = c.input.model_name;
    const attributes = outcome(() => {
      const a = getModelAttributes(name);
      return {
        organization: a.organization,
        version_str: a.versionStr,
        size_str: a.sizeStr,
        is_chat: a.isChat,
        recommended_renderers: [...a.recommendedRenderers],
        is_vl: a.isVl,
        is_audio_in: a.isAudioIn,
      };
    });
    expectSame(c, attributes, c.expected.attributes);
    expectSame(c, outcome(() => getLr(name, true)), c.expected.lr_lora);
    expectSame(c, outcome(() => getLr(name, false)), c.expected.lr_full);
    for (const [key, ref] of Object.entries(c.expected.lora_params)) {
      const [rank, flags] = key.split('/');
      const [trainMlp, trainAttn, trainUnembed] = flags.split('-').map((f) => f === '1');
      expectSame(c, outcome(() => getLoraParamCount(name, Number(rank), { trainMlp, trainAttn, trainUnembed })), ref);
    }
  });
});

describe('LR schedules', () => {
  it.each((lrSchedule as ReferenceCase<{ schedule: LrSchedule; step: number; total: number }, Outcome>[]).map((c) => [c.id, c] as const))(
    '%s',
    (_id, c) => expectSame(c, outcome(() => lrMultiplier(c.input.schedule, c.input.step, c.input.total)), c.expected),
  );
});

// torch's float32 sum takes a different order by length and CPU vector width (this machine's
// AVX512 build sums 5 values as if in double and 16 values left to right), so the reference's
// mean is itself only defined to one float32 rounding. Ours accumulates in double and rounds once;
// agreement is to within two float32 roundings of the group's largest magnitude.
describe('RL group advantages (float32)', () => {
  it.each((advantages as ReferenceCase<{ rewards: number[] }, Outcome<number[]>>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const group = { getTotalRewards: () => c.input.rewards } as unknown as TrajectoryGroup;
    const ours = computeAdvantages([group])[0];
    if (!('ok' in c.expected)) throw new Error(`reference refused ${c.id}: ${c.expected.message}`);
    const scale = Math.max(...c.input.rewards.map(Math.abs));
    expect(ours.length, describeCase(c, ours)).toBe(c.expected.ok.length);
    ours.forEach((a, i) => {
      const ref = (c.expected as { ok: number[] }).ok[i];
      expect(Math.abs(a - ref), describeCase(c, ours)).toBeLessThanOrEqual(2 ** -22 * scale);
    });
  });
});

describe('math grading', () => {
  type Input = { given?: string; truth?: string; text?: string };
  it.each((grading as ReferenceCase<Input, Record<string, Outcome>>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const { given, truth, text } = c.input;
    if (c.expected.grade) expectSame(c, outcome(() => gradeAnswer(given!, truth!)), c.expected.grade);
    if (c.expected.normalized) expectSame(c, outcome(() => normalizeAnswer(given!)), c.expected.normalized);
    if (c.expected.boxed) expectSame(c, outcome(() => extractBoxed(text!)), c.expected.boxed);
  });
});

describe('dataset shuffle order (Hugging Face Dataset.shuffle)', () => {
  it.each((shuffle as ReferenceCase<{ seed: number; n: number }, Outcome>[]).map((c) => [c.id, c] as const))('%s', (_id, c) =>
    expectSame(c, outcome(() => numpyPermutation(c.input.seed, c.input.n)), c.expected),
  );
});

describe('datum construction and truncation', () => {
  type Input = { chunks: number[][]; weights: number[]; max_length: number | null; reduction: Reduction };
  it.each((datum as ReferenceCase<Input, Outcome>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const { chunks, weights, max_length, reduction } = c.input;
    const ts = outcome(() => {
      const modelInput = { chunks: chunks.map((tokens) => ({ type: 'encoded_text' as const, tokens })) };
      const d = datumFromModelInputWeights(modelInput, weights, max_length, reduction);
      return {
        chunks: d.model_input.chunks.map((ch) => (ch.type === 'encoded_text' ? ch.tokens : [])),
        weights: d.loss_fn_inputs.weights.data,
        target_tokens: d.loss_fn_inputs.target_tokens.data,
      };
    });
    expectSame(c, ts, c.expected);
  });
});

/**
 * Float32 means over many values: torch's summation order depends on length and CPU vector
 * width, so agreement is to a few float32 roundings, relative to the magnitudes summed.
 */
function expectCloseF32(c: ReferenceCase, ours: Record<string, number>, ref: Record<string, number>, scale: number): void {
  for (const [key, want] of Object.entries(ref)) {
    expect(ours[key], `${key} missing\n${describeCase(c, ours)}`).toBeTypeOf('number');
    expect(Math.abs(ours[key] - want), `${key}\n${describeCase(c, ours)}`).toBeLessThanOrEqual(2 ** -20 * Math.max(scale, Math.abs(want)));
  }
}

describe('DPO loss and metrics (float32)', () => {
  type Input = { chosen: number[]; rejected: number[]; ref_chosen: number[]; ref_rejected: number[]; beta: number };
  type Expected = { ok: { loss: number; metrics: Record<string, number> } };
  it.each((dpo as ReferenceCase<Input, Expected>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    const { chosen, rejected, ref_chosen, ref_rejected, beta } = c.input;
    const r = dpoLoss(chosen, rejected, ref_chosen, ref_rejected, beta);
    const scale = beta * Math.max(...[...chosen, ...rejected, ...ref_chosen, ...ref_rejected].map(Math.abs));
    expectCloseF32(c, { loss: r.loss, ...r.metrics }, { loss: c.expected.ok.loss, ...c.expected.ok.metrics }, scale);
  });
});

describe('KL and entropy metrics', () => {
  type Input = { sampled?: number[][]; training?: number[][]; masks?: number[][]; x?: number[]; gamma?: number };
  it.each((kl as ReferenceCase<Input, Outcome>[]).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    if (!('ok' in c.expected)) throw new Error(`reference refused ${c.id}: ${c.expected.message}`);
    if (c.id.startsWith('kl_sample_train')) {
      const { sampled, training, masks } = c.input;
      const data_D = sampled!.map(
        (lp, i) =>
          ({
            model_input: { chunks: [] },
            loss_fn_inputs: {
              logprobs: { data: lp, dtype: 'float32', shape: [lp.length] },
              mask: { data: masks![i], dtype: 'float32', shape: [lp.length] },
            },
          }) as unknown as Datum,
      );
      const scale = Math.max(...sampled!.flat().map(Math.abs));
      expectCloseF32(c, computeKlSampleTrain(data_D, training!), c.expected.ok as Record<string, number>, scale);
    } else {
      // A sequential scan in float32 on both sides: exact.
      expectSame(c, outcome(() => discountedFutureSum(c.input.x!, c.input.gamma!)), c.expected);
    }
  });
});
