// The sampling step both endpoints share: sampling parameters from an OpenAI request, the context
// window check, and the backend's refusals turned into the 400s an OpenAI client expects.
import { BackendError, type ModelInput, type SampleOpts, type SampleResponse, type SamplingParams } from '../backends/types.js';
import { ApiError, badRequest, unsupported } from './errors.js';
import type { ServedModel } from './served-model.js';

/** Without max_tokens a completion may fill the context, up to this many tokens (`--max-tokens`). */
export const DEFAULT_MAX_TOKENS = 4096;

export interface SamplingRequest {
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  seed?: number | null;
  n?: number | null;
}

/**
 * max_tokens for a prompt of `promptTokens`: the request's, else what the context leaves (at most
 * `defaultMax`). Like the OpenAI API, a prompt plus completion that cannot fit is refused.
 */
export function maxTokensFor(model: ServedModel, promptTokens: number, requested: number | null | undefined, defaultMax: number, param: string): number {
  const ctx = model.maxContextLength;
  if (ctx !== undefined && promptTokens >= ctx) {
    throw badRequest(`This model's maximum context length is ${ctx} tokens. However, your prompt has ${promptTokens} tokens. Please reduce the length of the prompt.`, param, 'context_length_exceeded');
  }
  if (requested == null) return ctx === undefined ? defaultMax : Math.min(defaultMax, ctx - promptTokens);
  if (ctx !== undefined && promptTokens + requested > ctx) {
    throw badRequest(
      `This model's maximum context length is ${ctx} tokens. However, you requested ${promptTokens + requested} tokens (${promptTokens} in the prompt, ${requested} in the completion). Please reduce the prompt or the completion length.`,
      param,
      'context_length_exceeded',
    );
  }
  return requested;
}

export function samplingParams(req: SamplingRequest, maxTokens: number, stop: SamplingParams['stop']): SamplingParams {
  const p: SamplingParams = { max_tokens: maxTokens, temperature: req.temperature ?? 1, top_p: req.top_p ?? 1, top_k: req.top_k ?? -1 };
  if (req.seed != null) p.seed = req.seed;
  if (stop !== undefined) p.stop = stop;
  return p;
}

/** Samples `n` completions; a backend that ignores top-k logprobs is named as not supporting them. */
export async function sampleFor(
  model: ServedModel,
  prompt: ModelInput,
  n: number,
  params: SamplingParams,
  topLogprobs: number,
  topParam: string,
  extra: SampleOpts = {},
): Promise<SampleResponse> {
  const opts: SampleOpts = { ...extra, ...(topLogprobs > 0 ? { topkSampleLogprobs: topLogprobs } : {}) };
  try {
    return await model.sample(prompt, n, params, opts);
  } catch (err) {
    if (topLogprobs > 0 && err instanceof BackendError && /topk_sample_logprobs/.test(err.message)) {
      throw unsupported(topParam, `the sampling backend at ${model.baseUrl} does not support top logprobs (${err.message}); leave ${topParam} out or at 0`);
    }
    throw err;
  }
}

/** The request's `model` must name what this server serves. */
export function checkModel(model: ServedModel, requested: string): void {
  if (requested !== model.id) {
    throw new ApiError(404, `The model \`${requested}\` does not exist; this server serves \`${model.id}\` (see GET /v1/models)`, 'invalid_request_error', 'model', 'model_not_found');
  }
}
