// Parity with the Python reference on the numbers a run depends on: the served-model table with
// its LR hint and LoRA parameter counts, LR schedules, RL group advantages (float32), math
// grading verdicts and the dataset shuffle order. Every expected value comes from the reference
// at test time.
import { describe, expect, it } from 'vitest';
import { lrMultiplier, type LrSchedule } from '../../src/cookbook/lr-schedule.js';
import { getLoraParamCount, getLr, getModelAttributes } from '../../src/cookbook/model-info.js';
import { computeAdvantages } from '../../src/cookbook/rl/advantages.js';
import { extractBoxed, gradeAnswer, normalizeAnswer } from '../../src/cookbook/rl/grading.js';
import type { TrajectoryGroup } from '../../src/cookbook/rl/types.js';
import { numpyPermutation } from '../../src/cookbook/shuffle.js';
import { outcome, referenceCases, sameOutcome, type Outcome, type ReferenceCase } from './reference.js';

const [modelInfo, lrSchedule, advantages, grading, shuffle] = await referenceCases([
  { topic: 'model_info' },
  { topic: 'lr_schedule' },
  { topic: 'advantages' },
  { topic: 'grading' },
  { topic: 'shuffle' },
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
