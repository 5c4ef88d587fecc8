// A sampler (SDK SamplingClient) over a sampling session id. Sample seq ids only deduplicate
// (they do not order, §3.3), so they are a per-object counter; a sample whose future expired (410)
// is resubmitted under a fresh id, as the SDK's retry handler does.
import { type ClientCore } from './core.js';
import type { ResultDecoder } from './futures.js';
import { decodeSampleResponse } from './proto.js';
import { SampleResponseJson } from './schemas.js';
import {
  BackendError,
  type ModelInput,
  type SampleOpts,
  type SampleResponse,
  type SamplingParams,
  type SamplingSession,
} from './types.js';
import { modelInputToJson, sampleResponseFromJson } from './wire-json.js';

const SAMPLE_DECODER: ResultDecoder<SampleResponse> = {
  json: (v) => {
    const parsed = SampleResponseJson.safeParse(v);
    if (!parsed.success) throw new BackendError(`sample result has an unexpected shape: ${parsed.error.message}`, 200, 'Sample', v, 'server');
    return sampleResponseFromJson(parsed.data);
  },
  proto: decodeSampleResponse,
};

const MAX_EXPIRED_RESUBMITS = 3;

export type { SampleOpts };

export function samplingParamsBody(p: SamplingParams): Record<string, unknown> {
  const body: Record<string, unknown> = {
    temperature: p.temperature ?? 1,
    top_k: p.top_k ?? -1,
    top_p: p.top_p ?? 1,
  };
  if (p.max_tokens !== undefined) body.max_tokens = p.max_tokens;
  if (p.seed !== undefined) body.seed = p.seed;
  if (p.stop !== undefined) body.stop = p.stop;
  return body;
}

export class TinkerSamplingSession implements SamplingSession {
  private seq = 0;

  constructor(
    private readonly core: ClientCore,
    readonly samplingSessionId: string,
  ) {}

  async sample(prompt: ModelInput, numSamples: number, params: SamplingParams, opts: SampleOpts = {}): Promise<SampleResponse> {
    if (!Number.isInteger(numSamples) || numSamples < 1) {
      throw new BackendError(`sample: numSamples must be a positive integer, got ${numSamples}`, undefined, 'Sample', undefined, 'bad_request');
    }
    await this.core.settings();
    for (let attempt = 0; ; attempt++) {
      const seqId = this.seq++;
      // 429 on asample is backpressure: http.call backs off and resubmits the same seq id.
      const promise = await this.core.submitFuture({
        method: 'POST',
        path: '/api/v1/asample',
        body: {
          num_samples: numSamples,
          prompt: modelInputToJson(prompt),
          sampling_params: samplingParamsBody(params),
          sampling_session_id: this.samplingSessionId,
          seq_id: seqId,
          ...sampleOptionsBody(opts),
          type: 'sample',
        },
        headers: { 'X-Tinker-Sampling-Backpressure': '1' },
        requestType: 'asample',
      });
      try {
        const response = await this.core.poll(promise.request_id, 'Sample', SAMPLE_DECODER);
        checkOptionsHonoured(response, opts);
        return withSequenceIds(withWholePromptLogprobs(response, promptTokens(prompt)), promise.sample_sequence_ids);
      } catch (err) {
        if (err instanceof BackendError && err.kind === 'expired' && attempt < MAX_EXPIRED_RESUBMITS) continue;
        throw err;
      }
    }
  }

  async computeLogprobs(prompt: ModelInput, lastN?: number): Promise<Array<number | null>> {
    const r = await this.sample(prompt, 1, { max_tokens: 1 }, { includePromptLogprobs: true, promptLogprobsLastN: lastN });
    if (!r.prompt_logprobs) throw new BackendError('compute_logprobs: server returned no prompt_logprobs', 200, 'Sample', r, 'server');
    return r.prompt_logprobs;
  }
}

/** The scoring options of an asample body: the fields of the 0.25 dialect (`prompt_logprobs`,
 *  `topk_prompt_logprobs`) always, with their defaults; SDK 0.38's additions (`topk_sample_logprobs`,
 *  `prompt_alt_tokens_k`, `record_stability_info`, which SDK 0.38 sends at their defaults too) only
 *  when asked for: servers of the 0.25 dialect (TuFT) refuse them, and their absence means their
 *  defaults. Checked here as the SDK checks them, so a bad value fails before any request. */
export function sampleOptionsBody(opts: SampleOpts): Record<string, unknown> {
  const body: Record<string, unknown> = {
    prompt_logprobs: opts.includePromptLogprobs ?? false,
    topk_prompt_logprobs: opts.topkPromptLogprobs ?? 0,
  };
  if (opts.topkSampleLogprobs) body.topk_sample_logprobs = opts.topkSampleLogprobs;
  if (opts.promptAltTokensK) body.prompt_alt_tokens_k = opts.promptAltTokensK;
  if (opts.recordStabilityInfo) body.record_stability_info = true;
  const bad = (message: string) => new BackendError(`sample: ${message}`, undefined, 'Sample', opts, 'bad_request');
  for (const [name, value] of [['topkSampleLogprobs', opts.topkSampleLogprobs], ['promptAltTokensK', opts.promptAltTokensK]] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0)) throw bad(`${name} must be a non-negative integer, got ${value}`);
  }
  const lastN = opts.promptLogprobsLastN;
  if (lastN !== undefined) {
    if (!Number.isInteger(lastN) || lastN < 1) throw bad(`promptLogprobsLastN must be an integer >= 1, got ${lastN}`);
    if (!opts.includePromptLogprobs) throw bad('promptLogprobsLastN applies to prompt logprobs; set includePromptLogprobs');
    body.prompt_logprobs_last_n = lastN;
  }
  const target = opts.targetPromptLogprobs;
  if (target) {
    if (target.dtype !== 'int64') throw bad(`targetPromptLogprobs must be an int64 tensor of token ids, got ${target.dtype}`);
    if (target.shape?.length !== 2) throw bad(`targetPromptLogprobs must be 2-D, [len(prompt) - 1, K], got shape ${JSON.stringify(target.shape)}`);
    body.target_prompt_logprobs = target;
  }
  return body;
}

/** A server that predates an option ignores it; its reply must not pass for an answer (the SDK
 *  checks prompt_alt_tokens and last_n the same way; here every option is checked). */
export function checkOptionsHonoured(r: SampleResponse, opts: SampleOpts): void {
  const ignored = (name: string) =>
    new BackendError(`sample: ${name} was requested but the server ignored it (it may predate SDK 0.38's protocol)`, 200, 'Sample', undefined, 'server');
  if ((opts.topkSampleLogprobs ?? 0) > 0 && r.sequences.some((s) => s.tokens.length > 0 && !s.topk_logprobs)) throw ignored('topk_sample_logprobs');
  if ((opts.promptAltTokensK ?? 0) > 0 && !r.prompt_alt_tokens) throw ignored('prompt_alt_tokens_k');
  if (opts.targetPromptLogprobs && !r.target_prompt_logprobs) throw ignored('target_prompt_logprobs');
  const lastN = opts.promptLogprobsLastN;
  if (lastN !== undefined && r.prompt_logprobs && r.prompt_logprobs.slice(0, Math.max(0, r.prompt_logprobs.length - lastN)).some((v) => v !== null)) {
    throw ignored('prompt_logprobs_last_n');
  }
}

/**
 * Prompt logprobs one per prompt token, the first `null` (nothing predicts it), as Tinker answers.
 * SkyRL-tx 0.3 leaves that first entry out (N-1 for N tokens): put back, so every value stays at
 * its token's position; any other count is the server's error, said as such.
 */
export function withWholePromptLogprobs(response: SampleResponse, promptTokens: number | undefined): SampleResponse {
  const got = response.prompt_logprobs;
  if (!got || promptTokens === undefined || got.length === promptTokens) return response;
  if (got.length === promptTokens - 1) return { ...response, prompt_logprobs: [null, ...got] };
  throw new BackendError(`asample: ${got.length} prompt logprobs for a prompt of ${promptTokens} tokens`, 200, 'Sample', undefined, 'server');
}

/** The prompt's token count (undefined when an image chunk does not say its own). */
function promptTokens(prompt: ModelInput): number | undefined {
  let n = 0;
  for (const c of prompt.chunks) {
    if (c.type === 'encoded_text') n += c.tokens.length;
    else if (c.expected_tokens !== undefined) n += c.expected_tokens;
    else return undefined;
  }
  return n;
}

/** Stamps the ids fixed at submission onto the sequences (the final response does not repeat them). */
function withSequenceIds(response: SampleResponse, ids: string[] | null | undefined): SampleResponse {
  if (ids == null) return response; // servers before SDK 0.38's protocol
  if (ids.length !== response.sequences.length) {
    throw new BackendError(
      `asample: ${ids.length} sample_sequence_ids for ${response.sequences.length} sequences`, 200, 'Sample', ids, 'server');
  }
  return { ...response, sequences: response.sequences.map((s, i) => ({ ...s, sequence_id: ids[i] })) };
}
