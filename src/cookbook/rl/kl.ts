// KL terms (spec §2.10, reference tc/rl/metrics.py) in float32, as torch computes them. Scoring
// (compute_logprobs) is the caller's side effect: these functions take logprobs already aligned
// to the targets, i.e. `computeLogprobs(fullSequenceForScoring(d)).slice(1)`.

import type { Datum, ModelInput } from '../../backends/types.js';
import { f32 } from '../float32.js';

/** The unshifted sequence: model_input with the last target token appended (`append_int`). */
export function fullSequenceForScoring(datum: Datum): ModelInput {
  const targets = tensor(datum, 'target_tokens');
  if (targets.length === 0) throw new RangeError('datum has no target tokens');
  const last = targets[targets.length - 1];
  const chunks = [...datum.model_input.chunks];
  const tail = chunks[chunks.length - 1];
  if (tail && tail.type === 'encoded_text') chunks[chunks.length - 1] = { type: 'encoded_text', tokens: [...tail.tokens, last] };
  else chunks.push({ type: 'encoded_text', tokens: [last] });
  return { chunks };
}

/** `compute_logprobs(...)[1:]` with the leading null dropped and the rest checked. */
export function alignScoredLogprobs(scored: ReadonlyArray<number | null>): number[] {
  return scored.slice(1).map((x, i) => {
    if (x === null || x === undefined) throw new RangeError(`scored logprob ${i + 1} is null`);
    return x;
  });
}

function tensor(datum: Datum, key: string): number[] {
  const t = datum.loss_fn_inputs[key];
  if (!t) throw new RangeError(`datum has no loss_fn_inputs.${key}`);
  return t.data;
}

function checkLength(what: string, got: number, want: number, d: number): void {
  if (got !== want) throw new RangeError(`datum ${d}: ${what} has ${got} entries, expected ${want}`);
}

/** Backward scan r_t = x_t + γ·r_{t+1} in float32. */
export function discountedFutureSum(x: readonly number[], gamma: number): number[] {
  const g = f32(gamma);
  const out = new Array<number>(x.length);
  let running = 0;
  for (let t = x.length - 1; t >= 0; t--) {
    running = f32(f32(x[t]) + f32(g * running));
    out[t] = running;
  }
  return out;
}

/**
 * Centred KL penalty against a base model: d_t = (lp_sampled − lp_base)·mask, avg = Σd / Σmask,
 * advantages += coef·mask·(avg − d) — discounted over every position when γ > 0, prompt
 * positions included (the reference's quirk). Mutates the datums' advantages.
 */
export function incorporateKlPenalty(
  data_D: Datum[],
  baseLogprobs_D: readonly number[][],
  coef: number,
  gamma: number,
): { kl_policy_base: number } {
  if (data_D.length !== baseLogprobs_D.length) {
    throw new RangeError(`${data_D.length} datums but ${baseLogprobs_D.length} base logprob lists`);
  }
  const diffs: number[][] = [];
  const masks: number[][] = [];
  let diffSum = 0;
  let maskSum = 0;
  data_D.forEach((d, i) => {
    const sampled = tensor(d, 'logprobs');
    const mask = tensor(d, 'mask').map((m) => f32(m));
    checkLength('base logprobs', baseLogprobs_D[i].length, sampled.length, i);
    checkLength('mask', mask.length, sampled.length, i);
    const diff = sampled.map((s, t) => f32(f32(f32(s) - f32(baseLogprobs_D[i][t])) * mask[t]));
    // Python's sum() over per-datum tensor sums: each datum summed, then added in order.
    let ds = 0;
    for (const x of diff) ds = f32(ds + x);
    let ms = 0;
    for (const m of mask) ms = f32(ms + m);
    diffSum = f32(diffSum + ds);
    maskSum = f32(maskSum + ms);
    diffs.push(diff);
    masks.push(mask);
  });
  const avg = f32(diffSum / maskSum);
  const c = f32(coef);
  data_D.forEach((d, i) => {
    let kl = masks[i].map((m, t) => f32(f32(c * m) * f32(avg - diffs[i][t])));
    if (gamma > 0) kl = discountedFutureSum(kl, gamma);
    const adv = tensor(d, 'advantages');
    const data = adv.map((a, t) => f32(f32(a) + kl[t]));
    d.loss_fn_inputs.advantages = { data, dtype: 'float32', shape: [data.length] };
  });
  return { kl_policy_base: avg };
}

function meanF32(xs: readonly number[]): number {
  let acc = 0;
  for (const x of xs) acc = f32(acc + x);
  return f32(acc / xs.length);
}

/** Per-token (sampled − other) diffs and sampled logprobs over action positions (mask > 0). */
function actionDiffs(data_D: readonly Datum[], other_D: readonly number[][]): { diffs: number[]; sampled: number[] } {
  if (data_D.length !== other_D.length) throw new RangeError(`${data_D.length} datums but ${other_D.length} logprob lists`);
  const diffs: number[] = [];
  const sampled: number[] = [];
  data_D.forEach((d, i) => {
    const lp = tensor(d, 'logprobs');
    const mask = tensor(d, 'mask');
    checkLength('logprobs', other_D[i].length, lp.length, i);
    for (let t = 0; t < lp.length; t++) {
      if (mask[t] > 0) {
        diffs.push(f32(f32(lp[t]) - f32(other_D[i][t])));
        sampled.push(f32(lp[t]));
      }
    }
  });
  return { diffs, sampled };
}

/** Sampler-vs-trainer KL estimates and the sampling entropy over action tokens. */
export function computeKlSampleTrain(
  data_D: readonly Datum[],
  trainingLogprobs_D: readonly number[][],
): { 'optim/kl_sample_train_v1': number; 'optim/kl_sample_train_v2': number; 'optim/entropy': number } {
  const { diffs, sampled } = actionDiffs(data_D, trainingLogprobs_D);
  if (diffs.length === 0) throw new RangeError('compute_kl_sample_train: no action tokens (mask > 0) in the batch');
  return {
    'optim/kl_sample_train_v1': meanF32(diffs),
    // `0.5 * tensor.mean().item()` multiplies in float64 after the float32 mean.
    'optim/kl_sample_train_v2': 0.5 * meanF32(diffs.map((x) => f32(x * x))),
    'optim/entropy': -meanF32(sampled),
  };
}

/** KL between the sampling logprobs and post-update logprobs (aligned like the base ones). */
export function computePostKl(
  data_D: readonly Datum[],
  newLogprobs_D: readonly number[][],
): { kl_pre_post_v1: number; kl_pre_post_v2: number } {
  const { diffs } = actionDiffs(data_D, newLogprobs_D);
  if (diffs.length === 0) throw new RangeError('compute_post_kl: no action tokens (mask > 0) in the batch');
  return { kl_pre_post_v1: meanF32(diffs), kl_pre_post_v2: 0.5 * meanF32(diffs.map((x) => f32(x * x))) };
}
