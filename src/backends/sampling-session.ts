// A sampler (SDK SamplingClient) over a sampling session id. Sample seq ids only deduplicate
// (they do not order, §3.3), so they are a per-object counter; a sample whose future expired (410)
// is resubmitted under a fresh id, as the SDK's retry handler does.
import { type ClientCore } from './core.js';
import type { ResultDecoder } from './futures.js';
import { decodeSampleResponse } from './proto.js';
import { SampleResponseJson } from './schemas.js';
import { BackendError, type ModelInput, type SampleResponse, type SamplingParams, type SamplingSession } from './types.js';
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

export interface SampleOpts {
  includePromptLogprobs?: boolean;
  topkPromptLogprobs?: number;
}

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
          prompt_logprobs: opts.includePromptLogprobs ?? false,
          topk_prompt_logprobs: opts.topkPromptLogprobs ?? 0,
          type: 'sample',
        },
        headers: { 'X-Tinker-Sampling-Backpressure': '1' },
        requestType: 'asample',
      });
      try {
        return withSequenceIds(await this.core.poll(promise.request_id, 'Sample', SAMPLE_DECODER), promise.sample_sequence_ids);
      } catch (err) {
        if (err instanceof BackendError && err.kind === 'expired' && attempt < MAX_EXPIRED_RESUBMITS) continue;
        throw err;
      }
    }
  }

  async computeLogprobs(prompt: ModelInput): Promise<Array<number | null>> {
    const r = await this.sample(prompt, 1, { max_tokens: 1 }, { includePromptLogprobs: true });
    if (!r.prompt_logprobs) throw new BackendError('compute_logprobs: server returned no prompt_logprobs', 200, 'Sample', r, 'server');
    return r.prompt_logprobs;
  }
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
