// The teacher's top-K as soft targets beside the reference's own `_collect_topk_for_datum`
// (distillation/train_off_policy.py, run at test time with a stub teacher that answers fixed top-K):
// the sequence the teacher is forced through, the (N, K) targets with their padding, and the float32
// renormalised weights, zero where the datum trains nothing.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Datum } from '../../src/backends/types.js';
import { compositeSteps, domainCounts, pySlicePrefix } from '../../src/cookbook/distillation/off-policy.js';
import { offPolicyTopkDatum, teacherForcedInput, type TopkPromptLogprobs } from '../../src/cookbook/distillation/topk.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

interface Case {
  name: string;
  input: number[];
  targets: number[];
  weights: number[];
  topk: TopkPromptLogprobs | null;
  k: number;
}

/** A deterministic top-K row: `n` distinct tokens with decreasing logprobs, some far apart. */
const row = (seed: number, n: number): Array<[number, number]> =>
  Array.from({ length: n }, (_, j) => [1000 + ((seed * 37 + j * 11) % 500), -0.05 - j * (0.7 + (seed % 3) * 0.31) - (j === n - 1 ? 12.5 : 0)]);

function teacherRows(len: number, n: (t: number) => number): TopkPromptLogprobs {
  return [null, ...Array.from({ length: len }, (_, t) => row(t + 1, n(t)))];
}

const CASES: Case[] = [
  { name: 'K entries everywhere, prompt weights 0', input: [11, 12, 13, 14, 15], targets: [12, 13, 14, 15, 16], weights: [0, 0, 1, 1, 1], topk: teacherRows(5, () => 4), k: 4 },
  { name: 'fewer than K: padded with the first token at probability 0', input: [21, 22, 23, 24], targets: [22, 23, 24, 25], weights: [0, 1, 1, 0.5], topk: teacherRows(4, (t) => 1 + (t % 3)), k: 3 },
  { name: 'more than K returned: the first K kept', input: [31, 32, 33], targets: [32, 33, 34], weights: [1, 1, 1], topk: teacherRows(3, () => 8), k: 5 },
  { name: 'near-equal logprobs', input: [41, 42], targets: [42, 43], weights: [1, 1], topk: [null, [[5, -1.0000001], [6, -1], [7, -0.9999999]], [[8, -3e-8], [9, -20]]], k: 3 },
  { name: 'no top-K from the teacher: the hard targets as they were', input: [51, 52, 53], targets: [52, 53, 54], weights: [0, 1, 1], topk: null, k: 2 },
];

const datumOf = (c: Case): Datum => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens: c.input }] },
  loss_fn_inputs: {
    target_tokens: { data: c.targets, dtype: 'int64', shape: [c.targets.length] },
    weights: { data: c.weights, dtype: 'float32', shape: [c.weights.length] },
  },
});

/** Domains as (batches, batch size), their weights, the step's batch size. */
const COMPOSITES = [
  { datasets: [[5, 8]], weights: [1], batch_size: 8 },
  { datasets: [[5, 4], [3, 4]], weights: [3, 1], batch_size: 4 },
  { datasets: [[4, 6], [6, 6], [9, 6]], weights: [1, 1, 1], batch_size: 5 },
  { datasets: [[4, 6], [6, 6], [9, 6]], weights: [1, 1, 0.05], batch_size: 3 },
  { datasets: [[4, 6], [6, 6]], weights: [2.5, 1], batch_size: 7 },
  { datasets: [[4, 2], [6, 6]], weights: [1, 1], batch_size: 9 },
  // Rounding overshoots: the last domain's count is negative, and Python's batch[:-1] keeps all but one.
  { datasets: [[4, 6], [6, 6], [5, 6], [7, 6]], weights: [1, 1, 1, 0.01], batch_size: 5 },
];

let expected: any[];
let composites: any[];
beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'topk_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input: JSON.stringify({ targets: CASES, composites: COMPOSITES }) });
  if (child.status !== 0) throw new Error(`topk_cases.py failed:\n${child.stderr}`);
  ({ targets: expected, composites } = JSON.parse(child.stdout));
}, 300_000);

describe("top-K soft targets beside the reference's _collect_topk_for_datum", () => {
  it.each(CASES.map((c, i) => [c.name, i] as const))('%s', (_, i) => {
    const c = CASES[i];
    const ref = expected[i];
    const datum = datumOf(c);
    // The teacher is forced through the input plus the last target, one token sampled, K asked.
    expect(ref.prompts).toEqual([{ tokens: modelInputToInts(teacherForcedInput(datum)), max_tokens: 1, k: c.k, prompt_logprobs: true }]);
    const out = offPolicyTopkDatum(datum, c.topk, c.k);
    expect(out.loss_fn_inputs.target_tokens.shape).toEqual(ref.target_tokens.shape);
    expect(out.loss_fn_inputs.target_tokens.data).toEqual(ref.target_tokens.data);
    expect(out.loss_fn_inputs.weights.shape).toEqual(ref.weights.shape);
    // float32 values: torch's vectorised exp and sum may round the last bit differently.
    const ours = out.loss_fn_inputs.weights.data;
    expect(ours).toHaveLength(ref.weights.data.length);
    ref.weights.data.forEach((w: number, j: number) => expect(Math.abs(ours[j] - w), `weight ${j}: ${ours[j]} vs ${w}`).toBeLessThanOrEqual(2 ** -23 * Math.max(Math.abs(w), 1e-30) * 4));
    // Exactly zero where the reference has zero (padding, untrained positions).
    expect(ours.map((w) => w === 0)).toEqual(ref.weights.data.map((w: number) => w === 0));
  });
});

describe("the reference's _CompositeSupervisedDataset: counts by weight, length, a step's examples and their domains", () => {
  it.each(COMPOSITES.map((c, i) => [JSON.stringify(c), i] as const))('%s', (_, i) => {
    const c = COMPOSITES[i];
    const ref = composites[i];
    const counts = domainCounts(c.weights, c.batch_size);
    expect(counts).toEqual(ref.counts);
    expect(compositeSteps(c.datasets.map(([n]) => n))).toBe(ref.length);
    const batch = counts.flatMap((count, d) => pySlicePrefix(Array.from({ length: c.datasets[d][1] }, (_, j) => [d, 1, j]), count));
    expect(batch).toEqual(ref.batch_1);
    expect(batch.map(([d]) => d)).toEqual(ref.indices);
  });
});
