// Sampled-token logprobs in the two shapes of the OpenAI API: chat's `logprobs.content` (one entry
// per token with its text, UTF-8 bytes and top alternatives) and the legacy completions' parallel
// lists. A token's text is its own decoding, so a token holding part of a multi-byte character
// reads as U+FFFD, as in other servers that decode token by token.
import type { SampledSequence } from '../backends/types.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';
import { ApiError } from './errors.js';

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}
export interface ChatTokenLogprob extends TokenLogprob {
  top_logprobs: TokenLogprob[];
}

const entry = (tokenizer: Tokenizer, id: number, logprob: number): TokenLogprob => {
  const token = tokenizer.decode([id]);
  return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
};

function sampledLogprobs(seq: SampledSequence, baseUrl: string): number[] {
  if (!seq.logprobs || seq.logprobs.length < seq.tokens.length) {
    throw new ApiError(400, `logprobs: the sampling backend at ${baseUrl} returned no logprobs for the sampled tokens`, 'invalid_request_error', 'logprobs', 'unsupported_parameter');
  }
  return seq.logprobs;
}

/** The first `kept` tokens' logprobs in chat's shape, with `top` alternatives each. */
export function chatLogprobs(tokenizer: Tokenizer, seq: SampledSequence, kept: number, top: number, baseUrl: string): { content: ChatTokenLogprob[] } {
  const lps = sampledLogprobs(seq, baseUrl);
  const content = seq.tokens.slice(0, kept).map((id, i) => ({
    ...entry(tokenizer, id, lps[i]),
    top_logprobs: top > 0 ? (seq.topk_logprobs?.[i] ?? []).slice(0, top).map(([t, lp]) => entry(tokenizer, t, lp)) : [],
  }));
  return { content };
}

/** The legacy completions shape: parallel lists and each token's character offset in the text. */
export interface CompletionLogprobs {
  tokens: string[];
  /** null only for an echoed prompt's first token, which nothing precedes. */
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null> | null;
  text_offset: number[];
}

export function completionLogprobs(tokenizer: Tokenizer, seq: SampledSequence, kept: number, top: number, baseUrl: string): CompletionLogprobs {
  const lps = sampledLogprobs(seq, baseUrl);
  const tokens: string[] = [];
  const text_offset: number[] = [];
  let offset = 0;
  for (const id of seq.tokens.slice(0, kept)) {
    const t = tokenizer.decode([id]);
    tokens.push(t);
    text_offset.push(offset);
    offset += t.length;
  }
  const top_logprobs = top > 0 ? seq.tokens.slice(0, kept).map((_, i) => Object.fromEntries((seq.topk_logprobs?.[i] ?? []).slice(0, top).map(([t, lp]) => [tokenizer.decode([t]), lp]))) : null;
  return { tokens, token_logprobs: lps.slice(0, kept), top_logprobs, text_offset };
}
