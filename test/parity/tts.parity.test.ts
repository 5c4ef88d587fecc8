// The True-Thinking Score recipe beside the reference's (tinker-cookbook 0.6.1, run at test time):
// step splitting and the self-verification tag, number perturbation from the same seeded draws,
// a whole CoT scored against the same fixed logprob function (every token sequence asked for, each
// step's four confidences, its TTS and the CoT's summary), analyze.py's per-problem rows and
// aggregate on given scores, the problem loading and shuffle, and Python's float formatting.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { PythonRandom } from '../../src/cookbook/python-random.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { getShippedTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { aggregate, problemSummary, type ProblemOutcome } from '../../src/cookbook/tts/analysis.js';
import { hasNumbers, perturbNumbers } from '../../src/cookbook/tts/perturb.js';
import { loadTtsProblems, shippedProblems } from '../../src/cookbook/tts/problems.js';
import { pyFixed, pyRoundTo } from '../../src/cookbook/tts/py-format.js';
import { modelCorrect, planCot, scorePlans, type StepScore } from '../../src/cookbook/tts/score.js';
import { isSelfVerificationStep, segmentCotSteps } from '../../src/cookbook/tts/steps.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const SEGMENT = [
  'Let me think.\nFirst, 3 + 4 = 7.\nSo the answer is 7 and more text.\nWait',
  "I need to count multiples.\n1. Multiples of 3: 33\n2. Multiples of 5: 19\n**Inclusion-exclusion** gives 33 + 19 - 6 = 46.\nHmm, let me re-check that.\nActually it's fine. Therefore the total is 46.",
  "\n\n## Setup\nWe have x = 2.\nWe can then write y = 3x = 6.\nThis means y is 6.\nI think there's a mistake here, wait.\nNo, that's right.",
  'no markers at all on this line\nnor on this one, just plain text\n  Then indented cue does not split\nThen a real one starts here.',
  'Step 1: add.\nStep 2: multiply the result by ten to get the final value.\r\nNext we check.\r\nFinally done with everything here.',
  '',
  '   \n  \n',
  'x',
  '١٢. Arabic-Indic numbered item that is long enough\n**é bold start is a word char in Python\n#no space header\n### Real header with enough text',
  'Because the value is 5, we double it.\nGiven that, If we add 3 we get 13.\nHowever the sum differs.\nBut Note the sign.\nSubstituting back: 2(5)+3 = 13.\nComputing gives 13. Evaluating: ok.\nApplying the rule again.\nRecall that 13 is prime.',
  "Wait, Let me double-check.\nLet me reconsider about this.\nHold on, that can't be right.\nthat doesn't be right\nLET ME VERIFY\nlet me double\ncheck",
  'For each n in 1..10 we compute n^2.\nUsing the formula we get 385.\nSo 385 is the sum.\n🙂 emoji line with 🙂 surrogate pairs counts ok',
];

const PERTURB = [
  { seed: 42, texts: ['x1 12a 3.50 -2 and 1e5 ١٢', '(33 + 19 + 14) - (6 + 4 + 2) + 0', 'no numbers here'] },
  { seed: 7, texts: ['-0.5 and 0.125 and 2.675 and 100.0001', '12345678901234567890 and 9007199254740993', 'step2 v3_x _4 4_ a5b 5-3 -3', '𝟏𝟐 math digits and ๓.๕ thai'] },
  { seed: 0, texts: ['1'.repeat(400), 'after overflow 5', `${'9'.repeat(400)}.5 then 1`, '0.0001 and -3 and -3.0 and 3'] },
];

const COTS = [
  {
    question: 'How many positive integers less than 100 are divisible by 3 or 5?',
    answer: '46',
    seed: 42,
    cot: "Let me count multiples.\nFirst, multiples of 3 below 100: 33.\nThen multiples of 5: 19.\nNow multiples of 15: 6.\nSo 33 + 19 - 6 = 46.\nWait, let me double check the count of 15s: 15, 30, 45, 60, 75, 90 is 6.\nTherefore the answer is 46.",
  },
  { question: 'What is 2+2?', answer: '4', seed: 3, cot: 'Simple.\nThe answer is clear without any calculation at all.\nHmm, nothing else to say here really.' },
  { question: 'Compute 1/2 + 1/4.', answer: '\\frac{3}{4}', seed: 11, cot: 'We have 1/2 = 0.50 and 1/4 = 0.25.\nSo the sum is 0.75 which is 3/4.' },
  { question: 'Empty thinking', answer: '1', seed: 1, cot: '' },
];

/** The reference test's logprob function: position 0 unscored, then a fixed function of (token, position). */
const fakeLogprobs = (tokens: number[]): Array<number | null> => [null, ...tokens.slice(1).map((t, i) => -((t * 31 + (i + 1) * 17) % 97) / 50)];

type Steps = Array<[number, number, boolean]>;
const ANALYSIS: Array<{ model: string; dataset: string; problems: Array<{ question: string; answer: string; steps?: Steps; error?: string }> }> = [
  {
    model: 'tiny-qwen3',
    dataset: 'math',
    problems: [
      { question: 'q1 '.repeat(50), answer: '1', steps: [[0.7, 0.9, false], [0.005, 0.6, true], [0.03125, 0.51, true], [0.3, 0.2, false]] },
      { question: 'q2', answer: '2', steps: [[0.0049999, 0.4, true], [0.69999, 0.5, false], [1 / 3, 0.2, false]] },
      { question: 'q3', answer: '3', error: 'the sampler went away' },
      { question: 'q4', answer: '4', steps: [] },
      { question: 'q5 ünïcödé 🙂'.repeat(12), answer: '5', steps: [[0.30000000000000004, 0.99, false], [0.00015, 0.0, true], [0.00005, 0.8, false]] },
    ],
  },
  { model: 'm', dataset: 'gsm8k', problems: [{ question: 'only', answer: 'x', error: 'boom' }] },
];

const FIXED: Array<[number, number]> = [
  [0.125, 2], [2.675, 2], [0.03125, 4], [-0.00001, 2], [1e22, 1], [123.456, 0], [-1.5, 0], [2.5, 0], [3.5, 0], [5e-324, 3], [0.0, 3], [1 / 3, 4], [0.00015, 4], [0.00005, 4], [-2.5, 0], [1e-5, 4],
];

let ref: {
  segments: Array<Array<[string, boolean]>>;
  has_numbers: boolean[];
  perturbed: string[][];
  cots: Array<{ inputs: number[][]; steps: StepScore[]; summary: Record<string, unknown> }>;
  problems: Array<Array<{ question: string; answer: string }>>;
  analysis: Array<{ rows: unknown[]; summary: Record<string, unknown> }>;
  fixed: string[];
  rounded: number[];
};

const PROBLEMS = [
  { dataset: 'math' as const, file: shippedProblems('math'), n: 3, seed: 42 },
  { dataset: 'gsm8k' as const, file: shippedProblems('gsm8k'), n: 50, seed: 42 },
  { dataset: 'gsm8k' as const, file: shippedProblems('gsm8k'), n: 4, seed: 5 },
];

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ segment: SEGMENT, perturb: PERTURB, cots: COTS, tokenizer_dir: shippedTokenizerDir('qwen3'), renderer: 'qwen3', analysis: ANALYSIS, problems: PROBLEMS, fixed: FIXED });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'tts_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  ref = JSON.parse(child.stdout);
  // The cases reach what they are meant to: several steps with numbers and a self-verification
  // step, an overflow, error rows, an empty CoT.
  expect(ref.cots[0].steps.length).toBeGreaterThan(4);
  expect(ref.cots[0].steps.some((s) => s.is_self_verification)).toBe(true);
  expect(ref.cots[0].steps.some((s) => s.tts > 0)).toBe(true);
  expect(ref.cots[3].steps).toEqual([]);
  expect(ref.perturbed[2]).toContain('OverflowError');
  expect(ref.analysis[0].summary.n_problems_failed).toBe(1);
}, 120_000);

const lexicographic = (a: number[], b: number[]) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};

describe('true_thinking_score beside the reference', () => {
  it('segment_cot_steps and is_self_verification_step: the same steps, the same tags', () => {
    expect(SEGMENT.map((t) => segmentCotSteps(t).map((s) => [s, isSelfVerificationStep(s)]))).toEqual(ref.segments);
    expect(SEGMENT.map(hasNumbers)).toEqual(ref.has_numbers);
  });

  it('perturb_numbers: the same offsets from the same seed, numbers printed as Python prints them', () => {
    const ours = PERTURB.map(({ seed, texts }) => {
      const rng = new PythonRandom(seed);
      return texts.map((t) => {
        try {
          return perturbNumbers(t, rng);
        } catch (err) {
          if (err instanceof RangeError) return 'OverflowError';
          throw err;
        }
      });
    });
    expect(ours).toEqual(ref.perturbed);
  });

  it('a whole CoT: the same token sequences scored, the same four confidences, TTS and summary per step', async () => {
    const tokenizer = await getShippedTokenizer('qwen3');
    const renderer = getRenderer('qwen3', tokenizer);
    for (const [i, c] of COTS.entries()) {
      const asked: number[][] = [];
      const steps = await scorePlans(c.question, c.answer, planCot(c.cot, c.seed), {
        renderer,
        tokenizer,
        computeLogprobs: async (input) => {
          const tokens = modelInputToInts(input);
          asked.push(tokens);
          return fakeLogprobs(tokens);
        },
      });
      // Ours asks once per distinct prefix; the reference once per condition.
      const distinct = (xs: number[][]) => [...new Map(xs.map((x) => [JSON.stringify(x), x])).values()].sort(lexicographic);
      expect(distinct(asked)).toEqual(distinct(ref.cots[i].inputs));
      expect(steps).toEqual(ref.cots[i].steps);
      const { problem_idx: _idx, ...summary } = problemSummary(c.question, c.answer, steps, modelCorrect(steps), 0);
      expect(summary).toEqual(ref.cots[i].summary);
    }
  });

  it("analyze.py: the same per-problem rows and tts_summary.json on the same scores", () => {
    for (const [i, a] of ANALYSIS.entries()) {
      const outcomes: ProblemOutcome[] = a.problems.map((p, idx) => {
        if (p.error !== undefined) return { question: p.question.slice(0, 100), answer: p.answer, error: p.error, problem_idx: idx };
        const steps: StepScore[] = p.steps!.map(([tts, s1, sv], j) => ({ step_index: j, step_text: `step ${j}`, tts, s1_c1: s1, s0_c1: 0, s1_c0: 0, s0_c0: 0, is_self_verification: sv }));
        return problemSummary(p.question, p.answer, steps, modelCorrect(steps), idx);
      });
      expect(outcomes).toEqual(ref.analysis[i].rows);
      expect(aggregate(outcomes, a.model, a.dataset, a.problems.length)).toEqual(ref.analysis[i].summary);
    }
  });

  it('_load_problems: the same answers extracted, the same shuffle and cut', async () => {
    for (const [i, p] of PROBLEMS.entries()) {
      const { problems } = await loadTtsProblems({ dataset: p.dataset, data_path: p.file, limit: p.n, seed: p.seed });
      expect(problems).toEqual(ref.problems[i]);
    }
  });

  it("Python's f\"{x:.{d}f}\" and round(x, d): ties to even on the exact binary value", () => {
    expect(FIXED.map(([x, d]) => pyFixed(x, d))).toEqual(ref.fixed);
    expect(FIXED.map(([x, d]) => pyRoundTo(x, d))).toEqual(ref.rounded);
  });
});
