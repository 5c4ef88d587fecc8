// sample_decision (reference recipes/decisions/decision.py): one sample request with max_tokens 1
// whose target_prompt_logprobs score every label's token at the answer position; the
// probabilities are a float32 softmax over those logprobs.
import type { ModelInput, SampleOpts, SampleResponse, SamplingParams, TensorData } from '../../../backends/types.js';
import { modelInputFromInts } from '../../model-input.js';
import { renderingLabels, type DecisionRendering } from './decision.js';
import { softmaxF32 } from './probability-loss.js';

/** What sampleDecision needs of a sampler (a SamplingSession, a served model). */
export interface DecisionSampler {
  sample(prompt: ModelInput, numSamples: number, params: SamplingParams, opts?: SampleOpts): Promise<SampleResponse>;
}

/**
 * The target_prompt_logprobs request: row i scores prompt position i + 1, so the label tokens go in
 * row choicePos − 1 and every other cell is −1 (none). Sparse CSR, as the SDK sends it when that is
 * smaller (one row of K cells).
 */
export function choiceTargets(r: DecisionRendering): TensorData {
  const rows = r.tokens.length - 1;
  const tokens = [...r.labelTokens.values()];
  const K = tokens.length;
  const row = r.choicePos - 1;
  if (rows + 1 + 2 * K < rows * K) {
    const crow = Array.from({ length: rows + 1 }, (_, i) => (i <= row ? 0 : K));
    return { data: tokens, dtype: 'int64', shape: [rows, K], sparse_crow_indices: crow, sparse_col_indices: tokens.map((_, k) => k) };
  }
  const data = new Array<number>(rows * K).fill(-1);
  tokens.forEach((t, k) => (data[row * K + k] = t));
  return { data, dtype: 'int64', shape: [rows, K] };
}

/** The K logprobs of the answer position in a target_prompt_logprobs answer (dense or sparse). */
export function choiceLogprobs(r: DecisionRendering, answer: TensorData): number[] {
  const K = r.labelTokens.size;
  const row = r.choicePos - 1;
  if (answer.sparse_crow_indices) {
    const [from, to] = [answer.sparse_crow_indices[row], answer.sparse_crow_indices[row + 1]];
    const out = new Array<number>(K).fill(0);
    for (let j = from; j < to; j++) out[answer.sparse_col_indices![j]] = answer.data[j];
    return out;
  }
  return answer.data.slice(row * K, (row + 1) * K);
}

/** The probability of each label of a rendered decision, in choice order. */
export async function sampleDecision(sampler: DecisionSampler, r: DecisionRendering): Promise<Map<string, number>> {
  const response = await sampler.sample(modelInputFromInts(r.tokens), 1, { max_tokens: 1 }, { targetPromptLogprobs: choiceTargets(r) });
  if (!response.target_prompt_logprobs) throw new Error('The sampling response did not include target_prompt_logprobs.');
  const probs = softmaxF32(choiceLogprobs(r, response.target_prompt_logprobs));
  return new Map(renderingLabels(r).map((label, k) => [label, probs[k]]));
}
