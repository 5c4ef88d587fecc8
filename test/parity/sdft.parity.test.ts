// SDFT's pure parts beside the reference's own functions (tinker-cookbook 0.6.1, run at test time
// by sdft_cases.py): the teacher's prompt tokens, the top-K datums (targets, weights, metrics) of
// the forward and reverse modes, the importance-sampling advantages, the reverse-KL loss and its
// gradient, the recipe's eval extraction, and its loaders' filtering, shuffle and split of the
// shipped rows. The reference's teacher is a stub answering with the same fixed top-K / logprobs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Datum } from '../../src/backends/types.js';
import { buildSdftTeacherPrompt, buildTopkDistillationDatums, computeSdftAdvantages, teacherForcings } from '../../src/cookbook/distillation/sdft.js';
import { jsonlRows, loadSciKnowEval, loadToolAlpaca } from '../../src/cookbook/distillation/sdft-data.js';
import { extractXmlAnswer, tooluseCorrect, type ToolUseStep } from '../../src/cookbook/distillation/sdft-eval.js';
import { reverseKlCustomLoss } from '../../src/cookbook/distillation/sdft-reverse-kl.js';
import type { TopkPromptLogprobs } from '../../src/cookbook/distillation/topk.js';
import { modelInputFromInts, modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { getTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const data = join(import.meta.dirname, '..', '..', 'data', 'sdft');
const sciText = readFileSync(join(data, 'sciknoweval_chemistry.jsonl'), 'utf8');
const toolText = readFileSync(join(data, 'toolalpaca.jsonl'), 'utf8');
const rowsOf = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));

/** A fixed pseudo-random stream, so the cases are the same every run. */
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
const rand = lcg(54);
const lp = () => -0.05 - 6 * rand();

interface DatumSpec {
  model_input: number[];
  target_tokens: number[];
  mask: number[];
  logprobs: number[];
}
/** A datum cut from `prompt + completion` with the completion trained (mask 1 on its targets), or `mask` as given. */
function datumSpec(prompt: number[], completion: number[], mask?: number[]): DatumSpec {
  const full = [...prompt, ...completion];
  const n = full.length - 1;
  return {
    model_input: full.slice(0, -1),
    target_tokens: full.slice(1),
    mask: mask ?? Array.from({ length: n }, (_, i) => (i >= prompt.length - 1 ? 1 : 0)),
    logprobs: Array.from({ length: n }, (_, i) => (i >= prompt.length - 1 ? lp() : 0)),
  };
}
const toDatum = (d: DatumSpec): Datum => ({
  model_input: modelInputFromInts(d.model_input),
  loss_fn_inputs: {
    target_tokens: { data: d.target_tokens, dtype: 'int64', shape: [d.target_tokens.length] },
    logprobs: { data: d.logprobs, dtype: 'float32', shape: [d.logprobs.length] },
    advantages: { data: d.mask.map(() => 0), dtype: 'float32', shape: [d.mask.length] },
    mask: { data: d.mask, dtype: 'float32', shape: [d.mask.length] },
  },
});

const VOCAB = 1000;
const TEACHER_PROMPTS = [
  [11, 12, 13, 14, 15, 16, 17],
  [21, 22, 23, 24],
];
const DATUMS = [
  datumSpec([1, 2, 3, 4], [101, 102, 103, 104, 105, 106, 107, 108]),
  datumSpec([5, 6], [201, 202, 203, 204, 205]),
  // A second turn: a gap in the mask (observation tokens) inside the completion.
  datumSpec([7, 8, 9], [301, 302, 303, 304, 305, 306, 307], [0, 0, 1, 1, 1, 0, 0, 1, 1]),
  // Nothing trained: no completion.
  datumSpec([1, 2, 3], [9, 9], [0, 0, 0, 0]),
  // Cut by max_context_length (group 0's teacher prompt is 7 tokens; 20 leaves 13).
  datumSpec([4, 5], Array.from({ length: 18 }, (_, i) => 400 + i)),
];
const GROUP_IDX = [0, 1, 0, 1, 0];

/** A top-K answer over `len` prompt positions: some with more than K entries, ids ≥ VOCAB, a null row. */
function topkAnswer(len: number, width: number): TopkPromptLogprobs {
  return Array.from({ length: len }, (_, p) => {
    if (p === 0 || p === 12) return null;
    const n = p % 5 === 0 ? width + 3 : width;
    const entries: Array<[number, number]> = Array.from({ length: n }, (_, k) => [Math.floor(rand() * 900) + (k === 1 && p % 3 === 0 ? VOCAB : 0), lp()]);
    // All filtered: a row of ids past the vocabulary.
    return p === 14 ? entries.map(([, l]) => [VOCAB + 5, l] as [number, number]) : entries;
  });
}
const TOPK_CASES = [
  { k: 4, max_context_length: 20, vocab_size: VOCAB, topk: DATUMS.map((_, i) => (i === 1 ? null : topkAnswer(40, 4))) },
  { k: 2, max_context_length: 32768, vocab_size: VOCAB, topk: DATUMS.map(() => topkAnswer(40, 2)) },
];
const ADVANTAGE_CASES = [20, 32768].map((max_context_length) => ({
  max_context_length,
  logprobs: DATUMS.map(() => Array.from({ length: 40 }, (_, p) => (p === 0 || p === 13 ? null : lp()))),
}));
const REVERSE_LOSS_CASES = [
  {
    k: 3,
    weights: [
      [0, 0, 0, 0.5, 0.3, 0.2, 0.9, 0.1, 0, 0, 0, 0],
      [1, 0, 0, 0.25, 0.25, 0.5],
    ],
    logprobs: [Array.from({ length: 12 }, lp), Array.from({ length: 6 }, lp)],
  },
];
const XML_ANSWERS = [
  'reasoning <answer> B </answer>',
  '<think>A or C</think>\nThe answer is C.',
  'I think\nD\nmaybe',
  'A and then B, finally (C) is it',
  '<think>The answer is A</think> so B',
  'no letter here',
  'ÄB then A.',
];
const TOOLUSE = {
  responses: [
    'Action: getWeather\nAction Input: {"city": "Paris"}',
    'Action: getWeather\nAction Input: {"city": "Lima"}',
    'Action: a\nAction Input: {"x": 1}\nAction: b\nAction Input: {bad json}\nAction Input: {"y": [1, 2]}',
    'Action: a\nAction: a\nAction Input: {"x": 1}',
  ],
  golden: [
    [{ Action: 'getWeather', Action_Input: '{"city": "Paris"}' }],
    [{ Action: 'getWeather', Action_Input: '{"city": "Paris"}' }],
    [
      { Action: 'b', Action_Input: '{"y": [1, 2]}' },
      { Action: 'a', Action_Input: '{"x": 1}' },
    ],
    [
      { Action: 'a', Action_Input: '{"x": 1}' },
      { Action: 'a', Action_Input: 'not json' },
    ],
  ] as ToolUseStep[][],
};
const PROMPTS: Array<[string, string, string | null, string | null]> = [
  ['What is 2 + 2?', '2 + 2 = 4, so the answer is 4.', null, null],
  ['Which gas do plants absorb?', 'Carbon dioxide.', 'You are a careful scientist.', null],
  ['Q', 'A', null, 'Q: {question} / A: {golden_answer} / {{literal}}'],
];

type TopkOut = { sent: number[][]; targets: number[][]; weights: number[][]; shapes: number[][]; metrics: Record<string, number> };
let reference: {
  prompts: number[][];
  topk: TopkOut[];
  reverse: TopkOut[];
  advantages: Array<{ sent: number[][]; advantages: number[][]; metrics: Record<string, number> }>;
  reverse_loss: Array<{ loss: number; metrics: Record<string, number>; grads: number[][] }>;
  xml_answers: string[];
  tooluse: number[];
  sciknoweval: string[][];
  toolalpaca: string[][];
};

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    tokenizer_dir: shippedTokenizerDir('qwen3'),
    renderer: 'qwen3',
    prompts: PROMPTS,
    topk_cases: TOPK_CASES.map((c) => ({ ...c, datums: DATUMS, group_idx: GROUP_IDX, teacher_prompts: TEACHER_PROMPTS })),
    advantage_cases: ADVANTAGE_CASES.map((c) => ({ ...c, datums: DATUMS, group_idx: GROUP_IDX, teacher_prompts: TEACHER_PROMPTS })),
    reverse_loss_cases: REVERSE_LOSS_CASES,
    xml_answers: XML_ANSWERS,
    tooluse: TOOLUSE,
    domain: 'Chemistry',
    sciknoweval_rows: rowsOf(sciText),
    toolalpaca_rows: rowsOf(toolText),
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'sdft_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

const closeTo = (a: number[], b: number[], tol = 1e-6) => {
  expect(a.length).toBe(b.length);
  a.forEach((x, i) => expect(Math.abs(x - b[i]), `at ${i}: ${x} vs ${b[i]}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(b[i]))));
};
const metricsClose = (ours: Record<string, number>, theirs: Record<string, number>) => {
  expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort());
  for (const k of Object.keys(theirs)) closeTo([ours[k]], [theirs[k]], 1e-6);
};

describe('SDFT beside the reference', () => {
  it('build_sdft_teacher_prompt: the same tokens (system prompt, default and custom demo_template)', async () => {
    const renderer = getRenderer('qwen3', await getTokenizer('parity:qwen3', shippedTokenizerDir('qwen3')));
    const ours = PROMPTS.map(([q, a, s, t]) => modelInputToInts(buildSdftTeacherPrompt(q, a, renderer, s, t ?? undefined)));
    expect(ours).toEqual(reference.prompts);
  });

  for (const reverse of [false, true]) {
    it(`${reverse ? 'build_reverse_kl_datums' : 'build_topk_distillation_datums'}: teacher-forced sequences, (N, K) targets and weights, sdft/* metrics`, () => {
      TOPK_CASES.forEach((c, ci) => {
        const theirs = (reverse ? reference.reverse : reference.topk)[ci];
        const data = DATUMS.map(toDatum);
        const forcings = teacherForcings(data, GROUP_IDX, TEACHER_PROMPTS.map(modelInputFromInts), c.max_context_length);
        expect(forcings.map((f) => modelInputToInts(f.sequence))).toEqual(theirs.sent);
        const { datums, metrics } = buildTopkDistillationDatums(data, forcings, c.topk, { topk: c.k, vocabSize: c.vocab_size, skipFirstNTokens: 3, reverse });
        expect(datums.map((d) => d.loss_fn_inputs.target_tokens.data)).toEqual(theirs.targets);
        expect(datums.map((d) => d.loss_fn_inputs.weights.shape)).toEqual(theirs.shapes);
        datums.forEach((d, i) => closeTo(d.loss_fn_inputs.weights.data, theirs.weights[i]));
        // Some weights are trained, some left out (skipped first tokens, filtered and null rows).
        expect(theirs.weights.flat().some((w) => w > 0)).toBe(true);
        metricsClose(metrics, theirs.metrics);
      });
    });
  }

  it('compute_sdft_advantages: teacher_lp − student_lp at trained positions, metrics', () => {
    ADVANTAGE_CASES.forEach((c, ci) => {
      const theirs = reference.advantages[ci];
      const data = DATUMS.map(toDatum);
      const forcings = teacherForcings(data, GROUP_IDX, TEACHER_PROMPTS.map(modelInputFromInts), c.max_context_length);
      expect(forcings.map((f) => modelInputToInts(f.sequence))).toEqual(theirs.sent);
      const { datums, metrics } = computeSdftAdvantages(data, forcings, c.logprobs);
      datums.forEach((d, i) => closeTo(d.loss_fn_inputs.advantages.data, theirs.advantages[i]));
      metricsClose(metrics, theirs.metrics);
    });
  });

  it('reverse_kl_custom_loss: loss, metrics and the gradient autograd gives', () => {
    REVERSE_LOSS_CASES.forEach((c, ci) => {
      const theirs = reference.reverse_loss[ci];
      const data: Datum[] = c.weights.map((w) => ({
        model_input: modelInputFromInts(new Array(w.length / c.k).fill(0)),
        loss_fn_inputs: {
          target_tokens: { data: new Array(w.length).fill(0), dtype: 'int64', shape: [w.length / c.k, c.k] },
          weights: { data: w, dtype: 'float32', shape: [w.length / c.k, c.k] },
        },
      }));
      const ours = reverseKlCustomLoss(data, c.logprobs);
      closeTo([ours.loss], [theirs.loss], 1e-5);
      metricsClose(ours.metrics, theirs.metrics);
      ours.grads.forEach((g, i) => closeTo(g, theirs.grads[i], 1e-5));
    });
  });

  it("the recipe's eval: extract_xml_answer and tool-use correctness", () => {
    expect(XML_ANSWERS.map(extractXmlAnswer)).toEqual(reference.xml_answers);
    expect(TOOLUSE.responses.map((r, i) => (tooluseCorrect(r, TOOLUSE.golden[i]) ? 1 : 0))).toEqual(reference.tooluse);
  });

  it("the recipe's loaders on the shipped rows: filter, Random(42) shuffle, split", () => {
    const sci = loadSciKnowEval(jsonlRows(sciText, 'sciknoweval_chemistry.jsonl'), 'sciknoweval_chemistry.jsonl', 'Chemistry', 0.9);
    expect([sci.train.questions, sci.train.goldenAnswers, sci.test.questions, sci.test.goldenAnswers]).toEqual(reference.sciknoweval);
    const tool = loadToolAlpaca(jsonlRows(toolText, 'toolalpaca.jsonl'), 0.9);
    expect([tool.train.questions, tool.train.goldenAnswers, tool.test.questions, tool.test.goldenAnswers]).toEqual(reference.toolalpaca);
  });
});
