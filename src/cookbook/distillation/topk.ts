// A teacher's distribution as soft targets (distillation/train_off_policy.py and sdft.py): the
// teacher is teacher-forced through a sequence with `topk_prompt_logprobs = K`, and at each
// position its K most likely tokens, renormalised over those K, become (N, K) `target_tokens` and
// `weights` for `cross_entropy`. The reference does the renormalisation on float32 tensors
// (`lp -= logsumexp(lp)`, `exp`), so it is done here in float32.
import type { Datum, ModelInput, TensorData } from '../../backends/types.js';
import { f32 } from '../float32.js';
import { textChunk } from '../model-input.js';

/** One prompt position's top-K: [token id, logprob] pairs, most likely first. */
export type TopkEntries = Array<[number, number]>;
/** A sample response's `topk_prompt_logprobs`: one entry per prompt token (null at position 0). */
export type TopkPromptLogprobs = Array<TopkEntries | null>;

/** torch.logsumexp over a float32 vector: max + log Σ exp(x − max), every operation rounded. */
export function logsumexpF32(xs: readonly number[]): number {
  let max = -Infinity;
  for (const x of xs) if (f32(x) > max) max = f32(x);
  if (max === -Infinity) return -Infinity;
  if (max === Infinity) return Infinity;
  let sum = 0;
  for (const x of xs) sum = f32(sum + f32(Math.exp(f32(f32(x) - max))));
  return f32(f32(Math.log(sum)) + max);
}

/** The K logprobs renormalised over themselves (`lp - logsumexp(lp)`) and their probabilities, in float32. */
export function renormalizeF32(logprobs: readonly number[]): { logprobs: number[]; probs: number[] } {
  const lse = logsumexpF32(logprobs);
  const renormed = logprobs.map((lp) => f32(f32(lp) - lse));
  return { logprobs: renormed, probs: renormed.map((lp) => f32(Math.exp(lp))) };
}

/** The sequence a datum was cut from (its input plus the last target): what the teacher is forced through. */
export function teacherForcedInput(datum: Datum): ModelInput {
  const targets = datum.loss_fn_inputs.target_tokens.data;
  return { chunks: [...datum.model_input.chunks, textChunk([targets[targets.length - 1]])] };
}

/**
 * `_collect_topk_for_datum`'s targets for an SFT datum with (N,) targets and weights: row t holds
 * the teacher's K tokens for target position t (the last N entries of the teacher's prompt top-K,
 * fewer than K padded with the first token at probability 0) and their renormalised probabilities,
 * zero on rows whose original weight is 0. Null top-K (a server that returned none): the datum as
 * it is, as the reference falls back to hard targets.
 */
export function offPolicyTopkDatum(datum: Datum, topk: TopkPromptLogprobs | null | undefined, k: number): Datum {
  if (!topk) return datum;
  const weights_N = datum.loss_fn_inputs.weights.data;
  const n = weights_N.length;
  const offset = topk.length - n;
  if (offset < 0) throw new Error(`teacher returned top-K for ${topk.length} positions, the datum has ${n} targets`);
  const tokens_N_K: number[] = [];
  const weights_N_K: number[] = [];
  for (let t = 0; t < n; t++) {
    const entries = topk[offset + t];
    if (!entries || entries.length === 0) throw new Error(`teacher returned no top-K at prompt position ${offset + t}`);
    const kept = entries.slice(0, k);
    const toks = kept.map(([tok]) => tok);
    const lps = kept.map(([, lp]) => lp);
    while (toks.length < k) {
      toks.push(toks[0]);
      lps.push(-Infinity);
    }
    const { probs } = renormalizeF32(lps);
    const keep = weights_N[t] > 0 ? 1 : 0;
    tokens_N_K.push(...toks);
    weights_N_K.push(...probs.map((p) => f32(p * keep)));
  }
  return {
    model_input: datum.model_input,
    loss_fn_inputs: {
      target_tokens: { data: tokens_N_K, dtype: 'int64', shape: [n, k] } satisfies TensorData,
      weights: { data: weights_N_K, dtype: 'float32', shape: [n, k] } satisfies TensorData,
    },
  };
}
