// What one exchange through `cookbook serve` was, token for token: the request and the answer as
// the client saw them, and each sampling call made for it (the rendered prompt, the parameters,
// the sampled tokens with their logprobs). ServeOptions.onExchange receives one per request to a
// sampling endpoint, whichever API it came through, so a capture store can keep what the model saw
// and wrote without knowing either API.
import type { IncomingHttpHeaders } from 'node:http';
import type { ModelInput, SampledSequence, SamplingParams } from '../backends/types.js';
import type { ServedModel } from './served-model.js';

export type ServedApi = 'openai.chat.completions' | 'openai.completions' | 'anthropic.messages';

export interface SampleCall {
  prompt: ModelInput;
  params: SamplingParams;
  sequences: SampledSequence[];
}

export interface ServedExchange {
  api: ServedApi;
  /** The served model's id. */
  model: string;
  /** The parsed request body. */
  request: unknown;
  /** The request's headers, its credentials (authorization, x-api-key) left out. */
  headers: IncomingHttpHeaders;
  /** The answer's body (a stream's, assembled), absent when the request failed. */
  response?: unknown;
  /** The failure's HTTP status and message, when it failed. */
  error?: { status: number; message: string };
  samples: SampleCall[];
  /** Epoch milliseconds when the request arrived, and how long it took. */
  startedAt: number;
  durationMs: number;
}

/** `model` with every sampling call it makes recorded into `samples`. */
export function recordingSamples(model: ServedModel): { model: ServedModel; samples: SampleCall[] } {
  const samples: SampleCall[] = [];
  const recorded: ServedModel = {
    id: model.id,
    baseModel: model.baseModel,
    baseUrl: model.baseUrl,
    renderer: model.renderer,
    tokenizer: model.tokenizer,
    maxContextLength: model.maxContextLength,
    async sample(prompt, n, params, opts) {
      const response = await model.sample(prompt, n, params, opts);
      samples.push({ prompt, params, sequences: response.sequences });
      return response;
    },
    close: () => model.close(),
  };
  return { model: recorded, samples };
}

/** Headers without the credentials a client sent. */
export function withoutCredentials(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { authorization: _authorization, 'x-api-key': _apiKey, ...rest } = headers;
  return rest;
}
